#include "ladder_page.h"

#include <QDockWidget>
#include <QEvent>
#include <QFileInfo>
#include <QObject>
#include <functional>

#include "figure_export.h"
#include "flight_recorder_import.h"
#include "inspection.h"
#include "ladder_view.h"
#include "postmortem/fr_dump_writer.h"

namespace shardscope {

namespace {
// Runs a callback whenever the watched widget is shown, or the dock it sits
// in comes into view: a tabbed dock's page behind another tab stays "visible"
// (Qt moves it off the window), so only the dock's tab change says it is seen.
class LpShowWatcher : public QObject {
 public:
  LpShowWatcher(QObject* parent, std::function<void()> on_show) : QObject(parent), m_onShow(std::move(on_show)) {}
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (event->type() == QEvent::Show) m_onShow();
    if (event->type() == QEvent::ParentChange)
      if (auto* dock = qobject_cast<QDockWidget*>(static_cast<QWidget*>(watched)->parentWidget()))
        QObject::connect(dock, &QDockWidget::visibilityChanged, this, [this](bool seen) {
          if (seen) m_onShow();
        });
    return QObject::eventFilter(watched, event);
  }

 private:
  std::function<void()> m_onShow;
};
}  // namespace

LadderPage::LadderPage(Inspection& inspection, QWidget* parent) : ViewPage(inspection), m_view(new LadderView(parent)) {
  m_watcher = new LpShowWatcher(m_view, [this] { ensure(); });
  m_view->installEventFilter(m_watcher);
  QObject::connect(&inspection, &Inspection::runShown, m_view, [this] { runChanged(); });
  QObject::connect(&inspection, &Inspection::runFinished, m_view, [this] { runChanged(); });
}

LadderPage::~LadderPage() = default;

void LadderPage::runChanged() {
  m_stale = true;
  // On screen, not merely visible: behind another dock tab it waits for the tab.
  if (m_view->isVisible() && !m_view->visibleRegion().isEmpty()) ensure();
}

void LadderPage::ensure() const {
  if (!m_stale) return;
  m_stale = false;
  const ShownRun& run = m_inspection.run();
  const EventStore& store = m_inspection.store();
  if (run.kind == ShownRun::Kind::None || (run.live() && !run.done) || store.empty() || store.meta().imported) {
    m_view->setDumps(nullptr, {});
    return;
  }
  m_tooMany = store.rankCount() > kMaxDerivedRanks;
  if (m_tooMany) {
    m_view->setDumps(nullptr, {});
    return;
  }
  // The run's clock, not the wall's: the same run draws the same ladder.
  postmortem::FrWriteOptions options;
  options.epoch_ns = 0;
  m_view->setDumps(std::make_shared<const std::vector<postmortem::FrRankDump>>(
                       postmortem::flightRecorderDumps(store.toRunTrace(), options)),
                   run.source);
}

void LadderPage::setDumps(std::shared_ptr<const FlightRecorderSet> set) {
  m_stale = false;
  if (!set) {
    m_view->setDumps(nullptr, {});
    return;
  }
  QStringList names;
  for (const QString& in : set->inputs) names << QFileInfo(in).fileName();
  // The view holds the opened set's own dumps (it keeps the set alive), no copy.
  const std::vector<postmortem::FrRankDump>* dumps = &set->dumps;
  m_view->setDumps(std::shared_ptr<const std::vector<postmortem::FrRankDump>>(std::move(set), dumps),
                   names.join(QStringLiteral(", ")));
}

QString LadderPage::title() const { return tr("Ladder"); }
QWidget* LadderPage::widget() const { return m_view; }

QString LadderPage::unavailable() const {
  // Asked of every page when a run is shown: answered without deriving the
  // ladder (that waits until the page is seen or drawn into a figure).
  if (m_stale) {
    const EventStore& store = m_inspection.store();
    const ShownRun& run = m_inspection.run();
    if (run.kind != ShownRun::Kind::None && !(run.live() && !run.done) && !store.empty() && !store.meta().imported &&
        store.rankCount() <= kMaxDerivedRanks) {
      for (int r = 0; r < store.rankCount(); ++r)
        for (const Event& e : store.events(r))
          if (isAnyCollective(e.kind) && e.seq >= 0) return {};
    }
  }
  ensure();
  if (!m_view->empty()) return {};
  if (m_view->source().isEmpty())
    if (const QString why = ViewPage::unavailable(); !why.isEmpty()) return why;
  if (m_tooMany)
    return tr("this run has %1 ranks: the window derives a run's ladder for up to %2; write its dumps with "
              "`shardscope-cli run … --flight-recorder DIR` and read them with `shardscope-cli analyze DIR`")
        .arg(m_inspection.store().rankCount())
        .arg(kMaxDerivedRanks);
  if (m_inspection.store().meta().imported)
    return tr("a PyTorch profiler trace has no flight-recorder entries: open the job's flight-recorder dumps "
              "(a folder of nccl_trace_rank_N files) to see its ladder");
  return tr("no collectives to draw: the run on screen issued none");
}

bool LadderPage::figure(const QString& path, int width, int height, const QString& subtitle, QString* error) {
  ensure();
  QString sub = subtitle;
  if (sub.isEmpty() && !m_view->source().isEmpty()) sub = tr("flight-recorder dumps: %1").arg(m_view->source());
  m_view->wrapSentence(FigureExport::lineChars(width, height) * 3 / 4);  // bold and larger than body text
  const bool ok = FigureExport::write(path, m_view->figureTitle(), sub, {{m_view->plot(), 1.0}}, width, height, error);
  m_view->wrapSentence();
  return ok;
}

}  // namespace shardscope
