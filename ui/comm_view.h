// The communication page: per rank, the bytes sent in the last complete step
// by collective (stacked) beside the formula's expectation (outlined), the
// communication time split into hidden (overlapped by compute) and exposed
// with the overlap %, and the table behind both (CommStatsModel).
#pragma once

#include <QStringList>
#include <QWidget>
#include <utility>
#include <vector>

#include "comm_stats_model.h"

class QCustomPlot;
class QCPTextElement;
class QCPItemText;
class QCPBars;
class QLabel;
class QTableView;

namespace shardscope {

class EventStore;
struct RunResult;

class CommView : public QWidget {
  Q_OBJECT
 public:
  explicit CommView(const EventStore* store, QWidget* parent = nullptr);

  // Recomputes from the store; result: the live run's measurement, or nullptr.
  void setRun(const RunResult* result);
  void clear();

  CommStatsModel* model() const { return m_model; }
  QCustomPlot* bytesPlot() const { return m_bytes; }
  QCustomPlot* timePlot() const { return m_time; }
  QString sourceText() const;
  QString importedOrderText() const;  // an imported job: FSDP modules' exposure, or the all-reduce firing order
  QString figureTitle() const;

 private:
  void rebuildPlots();

  const EventStore* m_store;
  CommStatsModel* m_model;
  QLabel* m_source;
  QCustomPlot* m_bytes;
  QCPTextElement* m_bytesTitle = nullptr;
  QCustomPlot* m_time;
  QTableView* m_table;
  QLabel* m_empty;
  // One stacked series per collective of the data-parallel axis, then the TP groups' sends.
  QCPBars* m_kindBars[kCommViewKindCount + 1] = {};
  QCPBars* m_expected = nullptr;
  QCPBars* m_expectedTp = nullptr;  // the TP group's formula, stacked on m_expected
  QCPBars* m_hidden = nullptr;
  QCPBars* m_exposed = nullptr;
  // Per-rank labels with their texts, longest first (shown where they fit).
  std::vector<std::pair<QCPItemText*, QStringList>> m_ratioLabels, m_hiddenLabels;
};

}  // namespace shardscope
