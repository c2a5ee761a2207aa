// Shared QCustomPlot styling for every view (axes, grid, legend placement), so
// exported figures from different views look like one family.
#pragma once

class QCustomPlot;
class QCPAxis;
class QCPTextElement;
class QFont;
class QLabel;
class QString;

#include <vector>

#include "common/units.h"  // kNsPerMs: trace times are ns, every plot's time axis is ms

namespace shardscope {

class PlotStyle {
 public:
  // Light axes, dotted grid, 8 pt labels, white background.
  static void styleAxes(QCustomPlot* plot);
  // One axis of that style (styleAxes' x and y; a view's extra axis rects).
  static void styleAxis(QCPAxis* axis, const QFont& base);
  // Text broken into lines of at most about `chars` characters at spaces.
  static QString wrappedText(const QString& text, int chars);
  // A per-rank chart's tick under a column of folded ranks: "ranks 1–511:\nsame as rank 0".
  static QString foldedRanksTick(const std::vector<int>& ranks, int first);
  // A bar chart's category axis: labels only (no grid lines, ticks or sub-ticks).
  static void styleCategoryAxis(QCPAxis* axis);
  // A legend laid out as one row of small entries (8 pt of `base`), no frame
  // or fill: the timelines' legend row above the plot.
  static void styleLegendRow(QCustomPlot* plot, const QFont& base);
  // Shows the plot's legend in its own layout row above (top) or below the
  // axis rect while it has items. An empty legend in the grid would cap the
  // column's width at zero and squeeze the plot, so it then goes back into the
  // axis rect's inset layout, hidden.
  static void updateLegendRow(QCustomPlot* plot, bool top);
  // Wraps a legend row into as many rows as its items need at the plot's
  // current width, so no entry is clipped (updateLegendRow keeps it so after
  // every layout, figure exports included).
  static void fitLegend(QCustomPlot* plot);
  // Sets a plot title's text, broken into lines at spaces so that each fits
  // the plot's width, and again after every layout (a narrow dock, a figure's
  // size): a long title is never cut at both ends.
  static void setWrappedTitle(QCPTextElement* title, const QString& text);
  // Keeps a plot in the current Palette theme: before every replot, each
  // neutral colour a view set (written for the light theme) is shown as
  // Palette::themed() maps it, and the light original kept, so a figure
  // export (which switches to Light while it draws) gets it back exactly.
  static void followTheme(QCustomPlot* plot);
  // A muted message centred over the plot (kept centred as it resizes, and
  // transparent to the mouse): what the view shows while it has nothing to draw.
  static QLabel* emptyMessage(QCustomPlot* plot, const QString& text);
  static void applyTheme(QCustomPlot* plot);  // the pass followTheme runs
  // A plot that does not zoom passes the wheel to the scroll area around it
  // (QCustomPlot accepts every wheel event, so a page of charts in a short
  // dock never scrolled down to its table while the pointer was on a chart).
  static void wheelScrollsPage(QCustomPlot* plot);
};

}  // namespace shardscope
