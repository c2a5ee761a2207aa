#include "hta_page.h"

#include "figure_export.h"
#include "hta_view.h"
#include "inspection.h"
#include "kineto/trace_analysis.h"

namespace shardscope {

HtaPage::HtaPage(Inspection& inspection, QWidget* parent) : ViewPage(inspection), m_view(new HtaView(parent)) {
  QObject::connect(&inspection, &Inspection::runShown, m_view, [this] { m_view->setAnalysis(m_inspection.run().hta); });
}

QString HtaPage::title() const { return tr("HTA"); }
QWidget* HtaPage::widget() const { return m_view; }

QString HtaPage::unavailable() const {
  if (QString why = ViewPage::unavailable(); !why.isEmpty()) return why;
  if (!m_inspection.store().meta().imported || !m_inspection.run().hta)
    return tr("Holistic Trace Analysis' tables read an imported PyTorch profiler job (open its trace or its folder "
              "of per-rank traces); ShardScope's own runs have no CUDA launches or streams to analyse");
  if (m_inspection.run().hta->ranks.empty()) return tr("the imported trace has no rank with GPU events to analyse");
  return {};
}

bool HtaPage::figure(const QString& path, int width, int height, const QString& subtitle, QString* error) {
  return FigureExport::write(path, m_view->idleFigureTitle(), subtitle, {{m_view->idlePlot(), 1.0}}, width, height, error);
}

}  // namespace shardscope
