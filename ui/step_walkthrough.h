// The step walkthrough dock: the algorithm of one training step for the
// run's strategy (FSDP's ten lines from the FSDP reference text, HSDP's,
// ZeRO-1's, ZeRO-2's and DDP's in the same style), with the lines rank 0 is on at the shared cursor lit and the
// lane that puts it there named, so scrubbing the cursor steps through it.
#pragma once

#include <QWidget>
#include <optional>
#include <vector>

#include "walkthrough_model.h"

class QLabel;
class QVBoxLayout;

namespace shardscope {

class EventStore;

class StepWalkthrough : public QWidget {
  Q_OBJECT
 public:
  explicit StepWalkthrough(const EventStore* store, QWidget* parent = nullptr);

  void refresh();
  void setCursorTime(std::optional<int64_t> ns);
  // A stop at the gate: at time at_ns rank 0 is about to run `kind` (nullopt: running).
  void setGateOp(std::optional<EventKind> kind, int64_t at_ns = 0);

  const WalkthroughModel& model() const { return m_model; }
  // The lines lit now (0-based), phase headers included.
  const std::vector<LitLine>& litLines() const { return m_lit; }
  int lineCount() const { return static_cast<int>(m_rows.size()); }
  QString lineText(int line) const;

 private:
  void rebuildLines();
  void updateLit();

  const EventStore* m_store;
  WalkthroughModel m_model;
  QLabel* m_title;
  QLabel* m_source;
  QLabel* m_where;
  QLabel* m_note;
  QVBoxLayout* m_lines;
  struct Row {
    QWidget* frame;
    QLabel* number;
    QLabel* text;
    QLabel* lane;
    int shown = -1;  // the style last applied (0 off, 1 phase, 2 primary, 3 secondary): style sheets are costly
  };
  std::vector<Row> m_rows;
  std::vector<LitLine> m_lit;
  std::optional<int64_t> m_cursor;
  std::optional<EventKind> m_gateOp;
  int64_t m_gateNs = 0;
  QString m_shownTitle;
};

}  // namespace shardscope
