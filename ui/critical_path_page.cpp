#include "critical_path_page.h"

#include "critical_path_view.h"
#include "figure_export.h"
#include "inspection.h"
#include "kineto/trace_analysis.h"

namespace shardscope {

CriticalPathPage::CriticalPathPage(Inspection& inspection, QWidget* parent)
    : ViewPage(inspection), m_view(new CriticalPathView(parent)) {
  QObject::connect(&inspection, &Inspection::runShown, m_view, [this] {
    m_view->setAnalysis(m_inspection.store().meta().imported ? m_inspection.run().hta : nullptr);
  });
}

QString CriticalPathPage::title() const { return tr("Critical path"); }
QWidget* CriticalPathPage::widget() const { return m_view; }

QString CriticalPathPage::unavailable() const {
  if (QString why = ViewPage::unavailable(); !why.isEmpty()) return why;
  if (!m_inspection.store().meta().imported || !m_inspection.run().hta)
    return tr("the critical path reads an imported PyTorch profiler job (open its trace or its folder of per-rank "
              "traces); ShardScope's own runs have no CUDA launches or streams to follow");
  if (const std::string& why = m_inspection.run().hta->critical_path.unavailable; !why.empty())
    return tr("no critical path: %1").arg(QString::fromStdString(why));
  return {};
}

bool CriticalPathPage::figure(const QString& path, int width, int height, const QString& subtitle, QString* error) {
  return FigureExport::write(path, m_view->figureTitle(), subtitle, {{m_view->plot(), 1.0}}, width, height, error);
}

}  // namespace shardscope
