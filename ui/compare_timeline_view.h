// The timeline in compare mode: one band per pinned run, stacked, each run's
// time axis shifted so that the chosen step starts at 0 in every band (one
// shared time axis: ms since that step's start). Each band says its step time
// and, after the first, the difference to the first run's (StepAlignment).
// Rank 0's lanes by default (symmetric runs repeat them), or every rank.
// Wheel zooms and drag pans all bands together.
#pragma once

#include <QWidget>
#include <QStringList>
#include <memory>
#include <optional>
#include <vector>

#include "inspect/run_comparison.h"
#include "timeline_legend.h"

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QCPAxisRect;
class QCPRange;
class QCPTextElement;
class QLabel;
class QScrollArea;
class QVBoxLayout;

namespace shardscope {

class TimelineLayout;
class TimelinePlottable;

class CompareTimelineView : public QWidget {
  Q_OBJECT
 public:
  explicit CompareTimelineView(QWidget* parent = nullptr);
  ~CompareTimelineView() override;

  void setRuns(const std::vector<ComparedRun>& runs);
  // The step the bands are aligned at (its number as recorded; -1: the last common one).
  void setAlignStep(int step);
  void setAllRanks(bool all);

  const StepAlignment& alignment() const { return m_alignment; }
  int bandCount() const { return static_cast<int>(m_bands.size()); }
  QString bandText(int band) const;  // the line written above a band
  QCustomPlot* plot() const { return m_plot; }
  QString figureTitle() const;
  // The legend's entries as shown (kinds, then the marks the bands drew).
  QStringList legendNames() const;
  // "+0.655 ms (1.05×)": a band's step-time difference to the first run's.
  static QString differenceText(const StepAlignment::Run& run);

 signals:
  void unpinRequested();

 private:
  struct Band;
  void rebuild();
  void onRangeChanged(int band, const QCPRange& range);
  void updateLegend();

  std::vector<ComparedRun> m_runs;
  std::vector<std::unique_ptr<Band>> m_bands;
  StepAlignment m_alignment;
  int m_step = -1;
  bool m_allRanks = false;
  double m_lo = 0, m_hi = 1;  // ms since the aligned step's start
  bool m_syncing = false;
  uint32_t m_legendKinds = 0;
  std::optional<TimelineLegendMarks> m_legend;  // what the legend shows
  QVBoxLayout* m_box;
  QLabel* m_header;
  QComboBox* m_stepCombo;
  QCheckBox* m_allRanksBox;
  QScrollArea* m_scroll;
  QCustomPlot* m_plot = nullptr;
};

}  // namespace shardscope
