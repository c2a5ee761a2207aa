#include "snapshot_page.h"

#include "figure_export.h"
#include "inspection.h"
#include "snapshot_import.h"
#include "snapshot_view.h"

namespace shardscope {

SnapshotPage::SnapshotPage(Inspection& inspection, QWidget* parent)
    : ViewPage(inspection), m_view(new SnapshotView(parent)) {
  QObject::connect(&inspection, &Inspection::runShown, m_view, [this] { m_view->setSnapshots(m_inspection.run().snapshots); });
}

QString SnapshotPage::title() const { return tr("Memory snapshot"); }
QWidget* SnapshotPage::widget() const { return m_view; }
bool SnapshotPage::shown() const { return m_inspection.run().snapshots != nullptr; }

QString SnapshotPage::unavailable() const {
  if (!shown()) {
    if (QString why = ViewPage::unavailable(); !why.isEmpty()) return why;  // nothing open at all: as every page says
    return tr("the snapshot view shows PyTorch memory snapshots (torch.cuda.memory._dump_snapshot): open one with "
              "File ▸ Open or shardscope snap.pickle, several at once for one per rank");
  }
  if (m_view->columnCount() == 0) return tr("%1 has no device with segments or trace entries").arg(m_inspection.run().source);
  return {};
}

bool SnapshotPage::figure(const QString& path, int width, int height, const QString& /*subtitle*/, QString* error) {
  // The window's subtitle describes a ShardScope run; a snapshot's names its files.
  return FigureExport::write(path, m_view->figureTitle(), m_view->figureSubtitle(), {{m_view->plot(), 1.0}}, width, height,
                             error);
}

}  // namespace shardscope
