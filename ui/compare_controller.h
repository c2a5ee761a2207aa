// Compare mode's controls: pins rows of the Runs table (a preset's runs, runs
// of this session, opened traces) side by side in the Inspection, unpins them,
// and, while exactly two rows are selected, writes the difference readout in
// the status bar — step time, exposed comm, peak (all categories, most-loaded rank) and bytes sent, each
// as A, B and B/A (RunFigures, the same figures as the runs' summaries).
#pragma once

#include <QList>
#include <QObject>
#include <QPointer>
#include <QString>
#include <functional>
#include <optional>

#include "inspect/run_comparison.h"

class QAction;
class QStatusBar;
class QTableView;
class QWidget;

namespace shardscope {

class Inspection;
class RunHistoryModel;
struct RunRecord;

class CompareController : public QObject {
  Q_OBJECT
 public:
  // show_row: brings a row back into every view (false when it cannot).
  CompareController(Inspection* inspection, RunHistoryModel* history, QTableView* table, QStatusBar* status,
                    std::function<bool(int)> show_row, QObject* parent = nullptr);

  // Pins rows (two or more, each with its trace): the first is shown in the
  // single-run pages, all of them in the timeline, memory and comm pages.
  // false with the reason (a row out of range, a dropped trace, fewer than two).
  bool pin(const QList<int>& rows, QString* error);
  void unpin();
  QList<int> pinnedRows() const { return m_pinned; }

  // The readout for rows a and b ("" when either has nothing to compare).
  QString readout(int a, int b) const;
  QString readoutText() const { return m_readout; }  // the one shown now
  // A run of the table as compare mode sees it (its trace's events, its
  // result); events = false keeps only the trace's metadata when the run has
  // a result (the readout's figures then need no events).
  static std::optional<ComparedRun> comparedRun(const RunRecord& record, bool events = true);

  QAction* pinAction() const { return m_pinAction; }
  QAction* unpinAction() const { return m_unpinAction; }

 private:
  QList<int> selectedRows() const;
  void selectionChanged();
  void updateActions();
  void showReadout(const QString& text);  // "" takes it away
  void restoreStatus();

  Inspection* m_inspection;
  RunHistoryModel* m_history;
  QTableView* m_table;
  QStatusBar* m_status;
  std::function<bool(int)> m_showRow;
  QList<int> m_pinned;
  QString m_readout;
  // The status bar's own widgets, hidden while the readout needs its width.
  QList<QPointer<QWidget>> m_hiddenStatus;
  QAction* m_pinAction;
  QAction* m_unpinAction;
};

}  // namespace shardscope
