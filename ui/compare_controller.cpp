#include "compare_controller.h"
#include "common/units.h"

#include <QAction>
#include <QItemSelectionModel>
#include <QStatusBar>
#include <QTableView>
#include <algorithm>

#include "inspect/event_store.h"
#include "inspection.h"
#include "run_history_model.h"
#include "quantity_text.h"

namespace shardscope {

namespace {

QString readoutValueText(double v, FigureRatio::Unit unit) {
  if (unit == FigureRatio::Unit::Ns) return QString::number(v * 1e-6, 'f', 3) + QStringLiteral(" ms");
  return quantity_text::sizeText(v, 2, ByteUnit::MiB);
}

}  // namespace

CompareController::CompareController(Inspection* inspection, RunHistoryModel* history, QTableView* table,
                                     QStatusBar* status, std::function<bool(int)> show_row, QObject* parent)
    : QObject(parent),
      m_inspection(inspection),
      m_history(history),
      m_table(table),
      m_status(status),
      m_showRow(std::move(show_row)) {
  m_pinAction = new QAction(tr("&Compare selected runs"), this);
  m_pinAction->setShortcut(QKeySequence(tr("Ctrl+K")));
  m_pinAction->setToolTip(tr("Pin the runs selected in the Runs table side by side (Ctrl/Shift+click to pick two or more): "
                             "the timeline stacks them, the memory view sets their ledgers side by side, the "
                             "communication view tables them in columns"));
  m_unpinAction = new QAction(tr("&Unpin runs"), this);
  m_unpinAction->setShortcut(QKeySequence(tr("Ctrl+Shift+K")));
  m_unpinAction->setToolTip(tr("Back to one run"));
  connect(m_pinAction, &QAction::triggered, this, [this] {
    QString error;
    if (!pin(selectedRows(), &error)) m_status->showMessage(error, 8000);
  });
  connect(m_unpinAction, &QAction::triggered, this, &CompareController::unpin);
  connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, &CompareController::selectionChanged);
  connect(m_inspection, &Inspection::comparedChanged, this, [this] {
    if (!m_inspection->comparing()) m_pinned.clear();
    updateActions();
  });
  connect(m_status, &QStatusBar::messageChanged, this, [this](const QString& message) {
    if (message != m_readout) restoreStatus();
  });
  m_table->addAction(m_pinAction);
  m_table->addAction(m_unpinAction);
  m_table->setContextMenuPolicy(Qt::ActionsContextMenu);
  updateActions();
}

std::optional<ComparedRun> CompareController::comparedRun(const RunRecord& record, bool events) {
  if (!record.trace && !record.result) return std::nullopt;
  ComparedRun run;
  run.label = record.label.toStdString();
  auto store = std::make_shared<EventStore>();
  if (record.trace && (events || !record.result))
    store->setFromTrace(*record.trace);
  else if (record.trace)
    store->reset(*record.trace);
  run.store = std::move(store);
  run.result = record.result;
  return run;
}

bool CompareController::pin(const QList<int>& rows, QString* error) {
  const auto fail = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  if (rows.size() < 2) return fail(tr("select two or more runs in the Runs table to compare them"));
  std::vector<ComparedRun> runs;
  for (int row : rows) {
    if (row < 0 || row >= m_history->runCount()) return fail(tr("there is no run %1 in the Runs table").arg(row + 1));
    const RunRecord& record = m_history->run(row);
    if (!record.trace)
      return fail(tr("run %1's trace was dropped to save memory (only the last %2 are kept)")
                      .arg(row + 1)
                      .arg(RunHistoryModel::kKeptTraces));
    runs.push_back(*comparedRun(record));
  }
  if (!m_showRow(rows.front())) return fail(tr("run %1 cannot be shown while a run is in progress").arg(rows.front() + 1));
  m_inspection->setCompared(std::move(runs));
  m_pinned = rows;
  updateActions();
  return true;
}

void CompareController::unpin() {
  m_inspection->setCompared({});
  m_pinned.clear();
  updateActions();
}

QList<int> CompareController::selectedRows() const {
  QList<int> rows;
  for (const QModelIndex& index : m_table->selectionModel()->selectedRows()) rows << index.row();
  std::sort(rows.begin(), rows.end());
  return rows;
}

QString CompareController::readout(int a, int b) const {
  if (a < 0 || b < 0 || a >= m_history->runCount() || b >= m_history->runCount()) return {};
  const std::optional<ComparedRun> ra = comparedRun(m_history->run(a), false), rb = comparedRun(m_history->run(b), false);
  if (!ra || !rb) return {};
  QStringList parts;
  for (const FigureRatio& f : compareFigures(runFigures(*ra), runFigures(*rb))) {
    const QString name = QString::fromStdString(f.name);
    if (!f.a || !f.b) {
      parts << tr("%1 –").arg(name);
      continue;
    }
    parts << tr("%1 %2 / %3 (B/A %4)")
                 .arg(name, readoutValueText(*f.a, f.unit), readoutValueText(*f.b, f.unit),
                      f.ratio ? QString::number(*f.ratio, 'f', 2) + QStringLiteral("×") : QStringLiteral("–"));
  }
  return tr("A = %1, B = %2: ").arg(m_history->run(a).label, m_history->run(b).label) + parts.join(QStringLiteral(" · "));
}

void CompareController::selectionChanged() {
  const QList<int> rows = selectedRows();
  const QString text = rows.size() == 2 ? readout(rows[0], rows[1]) : QString();
  if (text == m_readout) {
    updateActions();
    return;
  }
  showReadout(text);
  updateActions();
}

void CompareController::showReadout(const QString& text) {
  const bool shown = !m_readout.isEmpty() && m_status->currentMessage() == m_readout;
  m_readout = text;
  if (m_readout.isEmpty()) {
    restoreStatus();
    if (shown) m_status->clearMessage();
    return;
  }
  m_status->showMessage(m_readout);
  // The readout is long: the run's own labels (step, loss, clock, …) make
  // room until it goes (another message, or another selection).
  for (QWidget* w : m_status->findChildren<QWidget*>(QString(), Qt::FindDirectChildrenOnly)) {
    if (!w->isVisible()) continue;
    w->hide();
    m_hiddenStatus << w;
  }
}

void CompareController::restoreStatus() {
  for (const QPointer<QWidget>& w : m_hiddenStatus)
    if (w) w->show();
  m_hiddenStatus.clear();
}

void CompareController::updateActions() {
  m_pinAction->setEnabled(selectedRows().size() >= 2);
  m_unpinAction->setEnabled(m_inspection->comparing());
}

}  // namespace shardscope
