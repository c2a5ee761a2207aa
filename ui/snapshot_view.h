// The memory-snapshot page's view: for every device of every opened snapshot
// (one file per rank), side by side, the ledger by category (at the peak, or
// at the entry clicked in the chart) over allocated + reserved bytes along
// the trace, the peak and each OOM (with CUDA's device_free) marked; below,
// the largest live allocations at the peak and the selected one's stack.
// Every number is the core model's (postmortem/); the chart gets the trace
// thinned to its pixel width (snapshotSeries), never a million points.
#pragma once

#include <QPoint>
#include <QWidget>
#include <memory>
#include <vector>

#include "postmortem/snapshot_ledger.h"

class QCustomPlot;
class QCPAxisRect;
class QCPBars;
class QCPGraph;
class QCPItemStraightLine;
class QCPItemText;
class QCPLayoutGrid;
class QCPTextElement;
class QLabel;
class QListWidget;
class QTableWidget;

namespace shardscope {

struct SnapshotSet;

class SnapshotView : public QWidget {
  Q_OBJECT
 public:
  explicit SnapshotView(QWidget* parent = nullptr);

  void setSnapshots(std::shared_ptr<const SnapshotSet> set);
  const SnapshotSet* snapshots() const { return m_set.get(); }

  // One column per (file, device), in file then device order.
  int columnCount() const { return static_cast<int>(m_columns.size()); }
  QString columnTitle(int column) const;
  const postmortem::SnapshotDevice& device(int column) const;
  // What the column's ledger shows (the peak until an entry is picked).
  const postmortem::SnapshotLedger& shownLedger(int column) const { return m_columns[static_cast<size_t>(column)].ledger; }
  // Shows the ledger after `entry` (-1: before the trace) in that column, and its cursor in the chart.
  void showEntry(int column, int64_t entry);
  // The column whose largest allocations the table lists.
  void setTableColumn(int column);
  int tableColumn() const { return m_tableColumn; }

  QCustomPlot* plot() const { return m_plot; }
  QTableWidget* largestTable() const { return m_table; }
  QListWidget* framesList() const { return m_frames; }
  // The OOM marker's text in a column ("" when it has none), for tests and the figure.
  QString oomMarkerText(int column) const;
  // The column's heading (title, peaks, the ledger's moment and its unattributed share).
  QString headingText(int column) const;
  // Bytes the ledger bar of a category draws in a column.
  double barBytes(int column, postmortem::SnapshotCategory category) const;
  // The chart's x (axis units) of an entry, and its axis rect: for clicks in tests.
  double chartX(int column, int64_t entry) const;
  QCPAxisRect* chartRect(int column) const { return m_columns[static_cast<size_t>(column)].chartRect; }
  // Points the chart holds for a column's allocated curve.
  int chartPoints(int column) const;
  QString figureTitle() const;
  QString figureSubtitle() const;

 signals:
  void entryPicked(int column, qint64 entry);

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  struct Column {
    const postmortem::SnapshotDevice* device = nullptr;
    QString title;
    double unit = 1;       // bytes per axis unit (MiB or GiB)
    QString unitName;
    double xScale = 1;     // snapshotX per axis unit (1000: µs to ms)
    QCPTextElement* heading = nullptr;
    QCPAxisRect* ledgerRect = nullptr;
    QCPAxisRect* chartRect = nullptr;
    std::vector<QCPBars*> bars;  // one per category
    std::vector<QCPItemText*> barLabels;
    QCPGraph* allocated = nullptr;
    QCPGraph* reserved = nullptr;
    QCPItemStraightLine* cursor = nullptr;
    QCPItemText* oomText = nullptr;
    postmortem::SnapshotLedger ledger;
  };
  void rebuild();
  void buildColumn(Column& c, int index, int columns);
  void drawLedger(Column& c);
  void thin(Column& c);  // the chart's points for its visible x range
  void fillTable();
  void showFrames(int row);
  void plotClicked(QMouseEvent* event);

  std::shared_ptr<const SnapshotSet> m_set;
  std::vector<Column> m_columns;
  QCustomPlot* m_plot;
  QCPLayoutGrid* m_grid = nullptr;  // the columns, under the legend row
  QLabel* m_tableTitle;
  QTableWidget* m_table;
  QListWidget* m_frames;
  QLabel* m_empty;
  int m_tableColumn = 0;
  QPoint m_pressAt;  // a press and release this close together is a click, not a drag
};

}  // namespace shardscope
