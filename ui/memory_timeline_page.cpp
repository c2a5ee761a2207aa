#include "memory_timeline_page.h"

#include "figure_export.h"
#include "inspection.h"
#include "memory_timeline_import.h"
#include "memory_timeline_view.h"

namespace shardscope {

MemoryTimelinePage::MemoryTimelinePage(Inspection& inspection, QWidget* parent)
    : ViewPage(inspection), m_view(new MemoryTimelineView(parent)) {
  QObject::connect(&inspection, &Inspection::runShown, m_view,
                   [this] { m_view->setTimeline(m_inspection.run().memory_timeline); });
}

QString MemoryTimelinePage::title() const { return tr("Memory timeline"); }
QWidget* MemoryTimelinePage::widget() const { return m_view; }
bool MemoryTimelinePage::shown() const { return m_inspection.run().memory_timeline != nullptr; }

QString MemoryTimelinePage::unavailable() const {
  if (shown()) return {};
  if (QString why = ViewPage::unavailable(); !why.isEmpty()) return why;
  return tr("the memory timeline page shows the PyTorch profiler's export_memory_timeline output: open one "
            "(.json, .json.gz or .raw.json.gz) with File ▸ Open");
}

bool MemoryTimelinePage::figure(const QString& path, int width, int height, const QString& /*subtitle*/,
                                QString* error) {
  return FigureExport::write(path, m_view->figureTitle(), m_view->figureSubtitle(), {{m_view->plot(), 1.0}}, width,
                             height, error);
}

}  // namespace shardscope
