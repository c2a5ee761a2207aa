#include "straggler_page.h"

#include "figure_export.h"
#include "inspection.h"
#include "straggler_view.h"

namespace shardscope {

StragglerPage::StragglerPage(Inspection& inspection, QWidget* parent)
    : ViewPage(inspection), m_view(new StragglerView(parent)) {
  QObject::connect(&inspection, &Inspection::runShown, m_view, [this] { showRun(); });
}

void StragglerPage::showRun() {
  const auto& imported = m_inspection.store().meta().imported;
  m_view->setTable(imported && !imported->stragglers.empty() ? &imported->stragglers : nullptr);
}

QString StragglerPage::title() const { return tr("Stragglers"); }
QWidget* StragglerPage::widget() const { return m_view; }

QString StragglerPage::unavailable() const {
  if (QString why = ViewPage::unavailable(); !why.isEmpty()) return why;
  if (!m_inspection.store().meta().imported)
    return tr("the straggler view shows an imported PyTorch profiler job of two or more ranks (open its folder of "
              "per-rank traces); in ShardScope's own runs the ranks step together (see the timeline)");
  if (m_view->table().empty())
    return tr("no collective of this trace was matched across two or more ranks: the straggler view needs the "
              "traces of several ranks of one job");
  return {};
}

bool StragglerPage::figure(const QString& path, int width, int height, const QString& subtitle, QString* error) {
  return FigureExport::write(path, m_view->figureTitle(), subtitle, {{m_view->plot(), 1.0}}, width, height, error);
}

}  // namespace shardscope
