#include "pipeline_page.h"

#include "figure_export.h"
#include "inspection.h"
#include "pipeline_view.h"

namespace shardscope {

PipelinePage::PipelinePage(Inspection& inspection, QWidget* parent)
    : ViewPage(inspection), m_view(new PipelineView(&inspection.store(), parent)) {
  QObject::connect(&inspection, &Inspection::refreshed, m_view, [this](bool now) { m_view->refresh(now); });
}

QString PipelinePage::title() const { return tr("Pipeline"); }
QWidget* PipelinePage::widget() const { return m_view; }

QString PipelinePage::unavailable() const {
  if (QString why = ViewPage::unavailable(); !why.isEmpty()) return why;
  const RunConfig* config = m_inspection.store().config();
  if (!config)
    return tr("the pipeline view needs the run's config (its stages and microbatches); this trace does not record one");
  if (config->pp <= 1)
    return tr("the pipeline view shows runs with pipeline stages (--pp 2 or more); this run has none");
  if (m_view->boxes().boxes().empty())
    return tr("no forward or backward pass of a pipeline stage has been recorded yet");
  return {};
}

bool PipelinePage::figure(const QString& path, int width, int height, const QString& subtitle, QString* error) {
  m_view->setCaptionWrap(FigureExport::lineChars(width, height));  // the figure's width, not the dock's
  const bool ok = FigureExport::write(path, m_view->figureTitle(), subtitle, {{m_view->plot(), 1.0}}, width, height, error);
  m_view->setCaptionWrap(0);
  return ok;
}

}  // namespace shardscope
