// The memory ledger page: per rank, a stacked bar of every category at the
// peak model-state moment (or at the timeline cursor), beside an outlined bar
// with the ZeRO paper's prediction (expectedModelStateBytesPerParam × N); below, the
// selected rank's memory over time as stacked areas with the peak marked.
// Bars are measured (replayed alloc/free events), never computed from formulas.
#pragma once

#include <QWidget>
#include <array>
#include <optional>

#include "analysis/run_summary.h"
#include "inspect/category_filter.h"
#include "inspect/memory_series.h"

class QComboBox;
class QCustomPlot;
class QCPBars;
class QCPGraph;
class QCPItemStraightLine;
class QCPItemText;
class QCPItemTracer;
class QCPTextElement;
class QLabel;
class QTimer;
class QToolButton;

namespace shardscope {

class EventStore;
struct ImportedSource;

class MemoryView : public QWidget {
  Q_OBJECT
 public:
  explicit MemoryView(const EventStore* store, QWidget* parent = nullptr);

  // New events: rebuilt at most ~4×/s while live (immediately if now is true).
  void refresh(bool now = false);
  void setCursorTime(std::optional<int64_t> ns);
  void setSelectedRank(int rank);

  // Which categories the bars, the areas and their legends draw (the Categories
  // button, `--categories`); hidden ones add nothing to the stacks or the axis.
  void setShownCategories(const CategoryFilter& shown);
  CategoryFilter shownCategories() const { return m_shown; }
  // What compare mode draws: the shown categories, or model state (the ZeRO
  // figure) while every category is shown.
  CategoryFilter comparedCategories() const { return m_shown.showsAll() ? CategoryFilter::modelState() : m_shown; }
  // The shown run's activations per layer beside Korthikanti et al.'s formula,
  // MFU and HFU (analysis/run_summary.h), written under the summary; none for
  // a model without token blocks, an opened trace or a live run.
  void setActivationFigures(std::optional<ActivationFigures> figures);

 signals:
  void shownCategoriesChanged();

 public:

  // What the bars show for rank (bytes per category, hidden ones 0) and the prediction (bytes).
  std::array<int64_t, kCategoryCount> barBytes(int rank) const;
  double predictedBytes() const;
  QCustomPlot* barsPlot() const { return m_bars; }
  QCustomPlot* timePlot() const { return m_time; }
  const MemorySeries& series() const { return m_series; }
  // The over-time chart's peak as marked: the selected rank's peak of the
  // drawn categories (MemorySeries::peakOf), in bytes (-1: nothing drawn), and its label.
  int64_t chartPeakBytes() const { return m_chartPeak; }
  QString chartPeakLabel() const;
  QString summaryText() const;

 private:
  void rebuild();
  void rebuildBars();
  void rebuildTime();
  QString importedSummary(const ImportedSource& imported, int rank, const std::array<int64_t, kCategoryCount>& bytes) const;
  bool atCursor() const;
  std::array<int64_t, kCategoryCount> ledgerBytes(int rank) const;  // every category, as booked
  bool showsPrediction() const;
  void buildCategoryMenu();

  const EventStore* m_store;
  MemorySeries m_series;
  QTimer* m_throttle;
  QComboBox* m_rankCombo;
  QComboBox* m_momentCombo;
  QToolButton* m_categoriesButton;
  CategoryFilter m_shown = CategoryFilter::all();
  QLabel* m_summary;
  QCustomPlot* m_bars;
  QCustomPlot* m_time;
  std::array<QCPBars*, kCategoryCount> m_stack{};
  QCPBars* m_predicted = nullptr;
  std::array<QCPGraph*, kCategoryCount> m_areas{};
  QCPGraph* m_totalLine = nullptr;
  QCPGraph* m_reservedLine = nullptr;  // an imported trace's reserved bytes
  bool m_importedTitles = false;
  QCPTextElement* m_timeTitle = nullptr;
  QCPItemTracer* m_peakDot = nullptr;
  QCPItemText* m_peakText = nullptr;
  QCPItemStraightLine* m_cursorLine = nullptr;
  std::optional<int64_t> m_cursor;
  std::optional<ActivationFigures> m_activations;
  int64_t m_chartPeak = -1;
  int m_rank = 0;
  const ImportedSource* m_rankSource = nullptr;  // the imported job the rank list was made for
};

}  // namespace shardscope
