// The collective ladder of flight-recorder dumps (core/postmortem/fr_ladder.h):
// rows are a process group's collectives by sequence number, columns the
// ranks, each cell coloured by the entry's state (completed, started,
// scheduled; missing and overwritten when a rank has none), the first
// mismatch's row shaded and its culprit cells outlined, its sentence above.
// A click on a cell selects its row and shows the entry and stack of every rank below.
#pragma once

#include <QWidget>
#include <memory>
#include <vector>

#include "postmortem/fr_ladder.h"

class QCustomPlot;
class QCPTextElement;
class QLabel;
class QPlainTextEdit;

namespace shardscope {

class LadderPlottable;

class LadderView : public QWidget {
  Q_OBJECT
 public:
  explicit LadderView(QWidget* parent = nullptr);

  // Shows these dumps under `source` (their folder); null or empty clears the
  // view. Shared, never copied: a job's folder of dumps is the window's
  // largest object, and the opened set already holds it.
  void setDumps(std::shared_ptr<const std::vector<postmortem::FrRankDump>> dumps, const QString& source);
  const std::shared_ptr<const std::vector<postmortem::FrRankDump>>& dumps() const { return m_dumps; }
  const postmortem::FrLadder& ladder() const { return m_ladder; }
  const QString& source() const { return m_source; }
  bool empty() const { return m_ladder.rows.empty(); }

  // Selects a row (the detail pane shows it on every rank); -1 clears.
  void selectRow(int row);
  int selectedRow() const { return m_selected; }
  QString detailText() const;
  QString sentenceText() const;
  // The cell under a point of the plot widget (row, column), {-1, -1} when none; and a cell's centre.
  std::pair<int, int> cellAt(const QPoint& plot_pos) const;
  QPoint cellCenter(int row, int column) const;
  QCustomPlot* plot() const { return m_plot; }
  QString figureTitle() const;
  // Wraps the sentence at this many characters (a figure's lineChars); 0: at the plot's width.
  void wrapSentence(int chars = 0);

 signals:
  void rowSelected(int row);

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void showRows(int first, int last);  // the value axis' range (row indices)

  std::shared_ptr<const std::vector<postmortem::FrRankDump>> m_dumps;  // never null
  postmortem::FrLadder m_ladder;
  QString m_source;
  int m_selected = -1;
  QCustomPlot* m_plot;
  QCPTextElement* m_sentence;
  LadderPlottable* m_cells;
  QPlainTextEdit* m_detail;
  QLabel* m_empty;
};

}  // namespace shardscope
