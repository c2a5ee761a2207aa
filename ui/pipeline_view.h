// The pipeline schedule view: stages × time of one step of a pipelined run,
// drawn from its own events (PipelineBoxes), with a caption giving the bubble
// measured (measurePipeline) beside the formula (S − 1)/(V·M + S − 1), and
// per stage, on the right, its peak activation memory and the microbatches
// it held in flight beside the schedule's count.
#pragma once

#include <QWidget>

#include "inspect/pipeline_boxes.h"

class QCustomPlot;
class QCPAbstractPlottable;
class QCPTextElement;
class QLabel;
class QTimer;

namespace shardscope {

class EventStore;
class PipelinePlottable;

class PipelineView : public QWidget {
  Q_OBJECT
 public:
  explicit PipelineView(const EventStore* store, QWidget* parent = nullptr);

  // New events: rebuilt at most ~4×/s while live (immediately if now is true).
  void refresh(bool now = false);

  const PipelineBoxes& boxes() const { return m_boxes; }
  QCustomPlot* plot() const { return m_plot; }
  PipelinePlottable* schedule() const { return m_schedule; }
  // "bubble measured 27.4 % · formula (S − 1)/(V·M + S − 1) = 3/11 = 27.3 % …"
  QString captionText() const;
  // Row labels (left) and per-stage memory and in-flight figures (right).
  QString stageLabel(int stage) const;
  QString stageFigures(int stage) const;
  QString figureTitle() const;
  // The caption wrapped to this many characters (a figure's width), 0: the plot's own.
  void setCaptionWrap(int chars);

 private:
  void rebuild();

  const EventStore* m_store;
  PipelineBoxes m_boxes;
  QTimer* m_throttle;
  QCustomPlot* m_plot;
  PipelinePlottable* m_schedule;
  QCPAbstractPlottable* m_recomputeEntry;  // its legend entry: shown only for a run that recomputes
  QCPTextElement* m_caption;
  QLabel* m_empty;
  uint64_t m_generation = ~uint64_t{0};
  size_t m_events = 0;
  int m_wrap = 0;
};

}  // namespace shardscope
