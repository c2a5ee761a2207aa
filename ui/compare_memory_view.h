// The memory page in compare mode: the classic ZeRO figure. One stacked bar
// per pinned run — rank 0's model state (param, grad, master, Adam m and v) at
// its peak, measured by the allocator — beside an outlined bar with the ZeRO
// paper's prediction and its formula in bytes per parameter (16, 4 + 12/P, 2 + 14/P, 16/P).
// Other categories (a preset's or the Categories button's: gathered
// parameters, activations) stack at the peak of what is drawn; the outline
// then adds FSDP's gathered-peak formula, or is left out where no formula
// covers a drawn category. With activations drawn and every run's per-layer
// figures measured (the activation lesson), the figure is activations per
// layer beside Korthikanti et al.'s formula, in MiB per layer.
#pragma once

#include <QStringList>
#include <QWidget>
#include <array>
#include <vector>

#include "analysis/run_summary.h"
#include "inspect/category_filter.h"
#include "inspect/run_comparison.h"
#include "trace/event.h"

class QCustomPlot;
class QCPBars;
class QLabel;

namespace shardscope {

class CompareMemoryView : public QWidget {
  Q_OBJECT
 public:
  explicit CompareMemoryView(QWidget* parent = nullptr);

  void setRuns(const std::vector<ComparedRun>& runs, const CategoryFilter& shown = CategoryFilter::modelState());

  QCustomPlot* plot() const { return m_plot; }
  // Per run, as drawn: the measured bar's height (bytes) and the prediction (bytes, 0: none).
  const std::vector<int64_t>& measuredBytes() const { return m_measured; }
  const std::vector<double>& predictedBytes() const { return m_predicted; }
  // Per run: the formula written above its predicted bar ("4 + 12/P = 7 B/param").
  const QStringList& formulaLabels() const { return m_formulas; }
  QString figureTitle() const;
  // Whether the bars are activations per layer (else memory at its peak).
  bool perLayerActivations() const { return m_perLayer; }
  QString summaryText() const;

 private:
  void setPerLayerRuns(const std::vector<ComparedRun>& runs, const std::vector<ActivationFigures>& activations);

  QLabel* m_summary;
  QCustomPlot* m_plot;
  std::array<QCPBars*, kCategoryCount> m_stack{};
  QCPBars* m_predictedBars = nullptr;
  std::vector<int64_t> m_measured;
  std::vector<double> m_predicted;
  QStringList m_formulas;
  int64_t m_params = 0;  // N, when every run has the same model
  bool m_perLayer = false;
  QString m_source = QStringLiteral("ZeRO paper");  // whose formulas the outlines draw (formulaSource)
  CategoryFilter m_shown = CategoryFilter::modelState();
};

}  // namespace shardscope
