#include "view_pages.h"

#include <QStackedWidget>

#include "buckets_view.h"
#include "comm_stats_model.h"
#include "comm_view.h"
#include "compare_comm_view.h"
#include "compare_memory_view.h"
#include "compare_timeline_view.h"
#include "figure_export.h"
#include "inspect/rank_symmetry.h"
#include "inspection.h"
#include "loss_view.h"
#include "memory_view.h"
#include "step_walkthrough.h"
#include "timeline_view.h"
#include "units_view.h"

namespace shardscope {

namespace {

QString strategyOf(const Inspection& inspection) { return QString::fromStdString(inspection.store().meta().strategy); }

bool importedTrace(const Inspection& inspection) { return inspection.store().meta().imported != nullptr; }

}  // namespace

QString ViewPage::unavailable() const {
  if (m_inspection.store().empty()) return tr("there is no run to draw: run a preset or open a trace first");
  return {};
}

// ---- timeline

TimelinePage::TimelinePage(Inspection& inspection, QWidget* parent)
    : ViewPage(inspection),
      m_view(new TimelineView(&inspection.store(), parent)),
      m_compare(new CompareTimelineView(parent)),
      m_stack(new QStackedWidget(parent)) {
  m_stack->addWidget(m_view);
  m_stack->addWidget(m_compare);
  QObject::connect(&inspection, &Inspection::comparedChanged, m_compare, [this] {
    m_compare->setRuns(m_inspection.compared());
    m_stack->setCurrentWidget(m_inspection.comparing() ? static_cast<QWidget*>(m_compare) : m_view);
  });
  QObject::connect(m_compare, &CompareTimelineView::unpinRequested, &inspection,
                   [&inspection] { inspection.setCompared({}); });
  QObject::connect(&inspection, &Inspection::runShown, m_view, [this] {
    m_view->setFollowLive(true);
    m_settle = !m_inspection.run().live();
    m_foldCopies = true;
  });
  QObject::connect(&inspection, &Inspection::refreshed, m_view, [this] {
    // A live run's unfinished collectives are not a hang: only an ended run's are drawn stuck.
    const bool ended = !m_inspection.run().live() || m_inspection.run().done;
    m_view->setHangShown(ended);
    m_view->refresh();
    // An ended run of more ranks than the bar charts show one by one: its ranks
    // identical to rank 0 become one band, as in its figures (double-click opens it).
    if (ended && m_foldCopies) {
      m_foldCopies = false;
      if (m_inspection.store().rankCount() > kFoldAboveRanks) m_view->setCollapseIdenticalRanks(true);
    }
    if (m_settle) m_view->setFollowLive(false);
    m_settle = false;
  });
  QObject::connect(&inspection, &Inspection::cursorChanged, m_view, [this](std::optional<int64_t> ns) {
    if (m_view->cursorTime() != ns) m_view->setCursorTime(ns);
  });
  QObject::connect(m_view, &TimelineView::cursorChanged, &inspection, [&inspection](qint64 ns) {
    inspection.setCursor(ns >= 0 ? std::optional<int64_t>(ns) : std::nullopt);
  });
  QObject::connect(m_view, &TimelineView::rangeChanged, &inspection,
                   [this] { m_inspection.setRange(m_view->selectedRange()); });
  // Clicking an op selects its rank, and its unit and bucket (-1: none), for every page.
  QObject::connect(m_view, &TimelineView::rankClicked, &inspection, [this](int rank) {
    if (const auto picked = m_view->selectedEvent()) {
      const Event& e = m_inspection.store().events(picked->first)[static_cast<size_t>(picked->second)];
      m_inspection.setSelectedUnit(e.unit);
      m_inspection.setSelectedBucket(e.bucket);
    }
    m_inspection.setSelectedRank(rank);
  });
}

QString TimelinePage::title() const { return tr("Timeline"); }
QWidget* TimelinePage::widget() const { return m_stack; }

bool TimelinePage::figure(const QString& path, int width, int height, const QString& subtitle, QString* error) {
  if (m_inspection.comparing())
    return FigureExport::write(path, m_compare->figureTitle(), subtitle, {{m_compare->plot(), 1.0}}, width, height, error);
  return m_view->exportFigure(path, width, height, error,
                              importedTrace(m_inspection) ? tr("Timeline: ranks × GPU streams and CPU threads")
                                                          : tr("Timeline: ranks × lanes"),
                              subtitle);
}

// ---- memory

MemoryPage::MemoryPage(Inspection& inspection, QWidget* parent)
    : ViewPage(inspection),
      m_view(new MemoryView(&inspection.store(), parent)),
      m_compare(new CompareMemoryView(parent)),
      m_stack(new QStackedWidget(parent)) {
  m_stack->addWidget(m_view);
  m_stack->addWidget(m_compare);
  QObject::connect(&inspection, &Inspection::refreshed, m_view, [this](bool now) { m_view->refresh(now); });
  QObject::connect(&inspection, &Inspection::cursorChanged, m_view, &MemoryView::setCursorTime);
  QObject::connect(&inspection, &Inspection::rankSelected, m_view, &MemoryView::setSelectedRank);
  QObject::connect(&inspection, &Inspection::comparedChanged, m_compare, [this] {
    m_compare->setRuns(m_inspection.compared(), m_view->comparedCategories());
    m_stack->setCurrentWidget(m_inspection.comparing() ? static_cast<QWidget*>(m_compare) : m_view);
  });
  // The run's activations per layer and HFU: the summary's figures, once it measured them.
  const auto showActivations = [this] {
    const RunResult* result = m_inspection.run().result;  // null while a live run has not ended
    m_view->setActivationFigures(result ? activationFigures(*result) : std::nullopt);
  };
  QObject::connect(&inspection, &Inspection::runShown, m_view, showActivations);
  QObject::connect(&inspection, &Inspection::runFinished, m_view, showActivations);
  // The Categories button (or a preset's categories) chooses what compared runs draw too.
  QObject::connect(m_view, &MemoryView::shownCategoriesChanged, m_compare, [this] {
    if (m_inspection.comparing()) m_compare->setRuns(m_inspection.compared(), m_view->comparedCategories());
  });
}

QString MemoryPage::title() const { return tr("Memory ledger"); }
QWidget* MemoryPage::widget() const { return m_stack; }

QString MemoryPage::unavailable() const {
  if (QString why = ViewPage::unavailable(); !why.isEmpty()) return why;
  if (m_inspection.comparing() || !importedTrace(m_inspection)) return {};
  const MemorySeries& series = m_view->series();
  for (int r = 0; r < series.rankCount(); ++r)
    if (!series.samples(r).empty()) return {};
  return tr("this PyTorch profiler trace has no memory samples: it holds no [memory] events (the profiler records "
            "them with profile_memory=True)");
}

bool MemoryPage::figure(const QString& path, int width, int height, const QString& subtitle, QString* error) {
  if (m_inspection.comparing())
    return FigureExport::write(path, m_compare->figureTitle(), subtitle, {{m_compare->plot(), 1.0}}, width, height, error);
  QString title = tr("Memory ledger per rank, measured by the allocator");
  if (const CategoryFilter shown = m_view->shownCategories(); !shown.showsAll())
    title += tr(" (drawn: %1)").arg(QString::fromStdString(shown.describe()));
  return FigureExport::write(path, title, subtitle,
                             {{m_view->barsPlot(), 1.2}, {m_view->timePlot(), 1.0}}, width, height, error);
}

// ---- buckets

BucketsPage::BucketsPage(Inspection& inspection, QWidget* parent)
    : ViewPage(inspection), m_view(new BucketsView(&inspection.store(), parent)) {
  QObject::connect(&inspection, &Inspection::refreshed, m_view, [this](bool now) { m_view->refresh(now); });
  QObject::connect(&inspection, &Inspection::cursorChanged, m_view, &BucketsView::setCursorTime);
  const auto showError = [this] { m_view->setRunError(m_inspection.run().error); };
  QObject::connect(&inspection, &Inspection::runShown, m_view, showError);
  QObject::connect(&inspection, &Inspection::runFinished, m_view, showError);
}

QString BucketsPage::title() const { return tr("Buckets"); }
QWidget* BucketsPage::widget() const { return m_view; }

QString BucketsPage::unavailable() const {
  if (QString why = ViewPage::unavailable(); !why.isEmpty()) return why;
  if (importedTrace(m_inspection))
    return tr("a PyTorch profiler trace does not record DDP's gradient buckets (which gradients each held); its "
              "all-reduces, in the order they ran, are in the timeline and the communication view");
  if (m_view->activity().bucketCount() == 0)
    return tr("the buckets view shows ddp, zero1 and zero2 runs; this %1 run has FSDP units (use --view units)")
        .arg(strategyOf(m_inspection));
  return {};
}

bool BucketsPage::figure(const QString& path, int width, int height, const QString& subtitle, QString* error) {
  m_view->setInfoWrap(FigureExport::lineChars(width, height));  // the figure's width, not the dock's
  const bool ok = FigureExport::write(path, m_view->figureTitle(), subtitle, {{m_view->plot(), 1.0}}, width, height, error);
  m_view->setInfoWrap(0);
  return ok;
}

// ---- units

UnitsPage::UnitsPage(Inspection& inspection, QWidget* parent)
    : ViewPage(inspection), m_view(new UnitsView(&inspection.store(), parent)) {
  QObject::connect(&inspection, &Inspection::refreshed, m_view, [this](bool now) { m_view->refresh(now); });
  QObject::connect(&inspection, &Inspection::cursorChanged, m_view, &UnitsView::setCursorTime);
  QObject::connect(m_view, &UnitsView::cursorRequested, &inspection,
                   [&inspection](qint64 ns) { inspection.setCursor(ns); });
}

QString UnitsPage::title() const { return tr("FSDP units"); }
QWidget* UnitsPage::widget() const { return m_view; }

QString UnitsPage::unavailable() const {
  if (QString why = ViewPage::unavailable(); !why.isEmpty()) return why;
  if (importedTrace(m_inspection))
    return tr("a PyTorch profiler trace does not record when each FSDP unit's parameters are gathered, computed and "
              "freed; the memory view books what was allocated under each FSDP all-gather as gathered");
  if (m_view->states().unitCount() == 0)
    return tr("the units view shows zero3, fsdp and hsdp runs; this %1 run has gradient buckets (use --view buckets)")
        .arg(strategyOf(m_inspection));
  return {};
}

bool UnitsPage::figure(const QString& path, int width, int height, const QString& subtitle, QString* error) {
  return FigureExport::write(path, m_view->figureTitle(), subtitle, {{m_view->plot(), 1.0}}, width, height, error);
}

// ---- loss

LossPage::LossPage(Inspection& inspection, QWidget* parent)
    : ViewPage(inspection), m_view(new LossView(&inspection.store(), parent)) {
  QObject::connect(&inspection, &Inspection::refreshed, m_view, [this] { m_view->refresh(); });
  QObject::connect(&inspection, &Inspection::runShown, m_view, [this] {
    const ShownRun& run = m_inspection.run();
    m_view->setFromTrace(run.kind == ShownRun::Kind::File);
    if (run.kind == ShownRun::Kind::Live) m_view->startLessonRun(run.preset);
    if (run.kind == ShownRun::Kind::Live)
      m_view->setNoLossReason(metaBackend() ? tr("The meta backend runs shapes only: no math, so no loss (the timings, "
                                                 "ledger and traffic are still the real engine's).")
                                            : QString());
    else if (run.kind == ShownRun::Kind::History)
      m_view->setNoLossReason(metaBackend() ? tr("The meta backend runs shapes only: no math, so no loss.") : QString());
    else
      m_view->setNoLossReason(QString());
    if (run.kind == ShownRun::Kind::History && run.ok && !metaBackend()) m_view->markKept();
  });
  // A finished live run's curve stays, overlaid by the next runs' curves.
  QObject::connect(&inspection, &Inspection::runFinished, m_view, [this] {
    const ShownRun& run = m_inspection.run();
    if (run.ok && !metaBackend()) m_view->keepRun(run.label);
  });
}

bool LossPage::metaBackend() const {
  const RunConfig* config = m_inspection.runConfig();
  return config && config->backend == Backend::Meta;
}

QString LossPage::title() const { return tr("Loss"); }
QWidget* LossPage::widget() const { return m_view; }

QString LossPage::unavailable() const {
  if (QString why = ViewPage::unavailable(); !why.isEmpty()) return why;
  if (importedTrace(m_inspection) && m_view->pointCount() == 0)
    return tr("a PyTorch profiler trace records no losses");
  if (m_view->runCount() == 0 && m_view->pointCount() == 0)
    return metaBackend() ? tr("the loss view has no curve: the meta backend runs shapes only, no math")
                         : tr("the loss view has no curve: no training step completed");
  return {};
}

bool LossPage::figure(const QString& path, int width, int height, const QString& subtitle, QString* error) {
  // Overlaid runs: name them all, not just the last run's config.
  QString sub = subtitle;
  if (m_view->runCount() > 1) {
    QStringList labels;
    for (int i = 0; i < m_view->runCount(); ++i) labels << m_view->runLabel(i);
    sub = tr("runs overlaid: %1 · same model, data and random seed").arg(labels.join(QStringLiteral(", ")));
    if (const QString& preset = m_inspection.run().preset; !preset.isEmpty()) sub = tr("preset %1 · ").arg(preset) + sub;
  }
  return FigureExport::write(path, m_view->figureTitle(), sub, {{m_view->plot(), 1.0}}, width, height, error);
}

// ---- communication

CommPage::CommPage(Inspection& inspection, QWidget* parent)
    : ViewPage(inspection),
      m_view(new CommView(&inspection.store(), parent)),
      m_compare(new CompareCommView(parent)),
      m_stack(new QStackedWidget(parent)) {
  m_stack->addWidget(m_view);
  m_stack->addWidget(m_compare);
  QObject::connect(&inspection, &Inspection::comparedChanged, m_compare, [this] {
    m_compare->setRuns(m_inspection.compared());
    m_stack->setCurrentWidget(m_inspection.comparing() ? static_cast<QWidget*>(m_compare) : m_view);
  });
  QObject::connect(&inspection, &Inspection::runShown, m_view, [this] {
    if (m_inspection.run().live())
      m_view->clear();
    else
      m_view->setRun(m_inspection.run().result);
  });
  QObject::connect(&inspection, &Inspection::runFinished, m_view, [this] { m_view->setRun(m_inspection.run().result); });
  // Traffic so far, from the events (the run's own measurement comes at the
  // end); at most once a second, since it rescans the run.
  QObject::connect(&inspection, &Inspection::progressed, m_view, [this] {
    if (m_liveClock.isValid() && m_liveClock.elapsed() < 1000) return;
    m_liveClock.start();
    m_view->setRun(nullptr);
  });
}

QString CommPage::title() const { return tr("Communication"); }
QWidget* CommPage::widget() const { return m_stack; }

QString CommPage::unavailable() const {
  if (QString why = ViewPage::unavailable(); !why.isEmpty()) return why;
  if (m_view->model()->step() < 0)
    return importedTrace(m_inspection)
               ? tr("the communication view needs a profiler step (ProfilerStep#N) every rank completed; this trace has none")
               : tr("the communication view needs a step every rank completed; this run has none");
  return {};
}

bool CommPage::figure(const QString& path, int width, int height, const QString& subtitle, QString* error) {
  // Compared runs: the step times first (what a slow link or a layout costs), then the bytes.
  if (m_inspection.comparing())
    return FigureExport::write(path, m_compare->figureTitle(), subtitle,
                               {{m_compare->timePlot(), 1.0}, {m_compare->plot(), 1.0}}, width, height, error);
  return FigureExport::write(path, m_view->figureTitle(), subtitle, {{m_view->bytesPlot(), 1.0}, {m_view->timePlot(), 1.0}},
                             width, height, error);
}

void followInspection(StepWalkthrough* walkthrough, Inspection& inspection) {
  QObject::connect(&inspection, &Inspection::refreshed, walkthrough, [walkthrough] { walkthrough->refresh(); });
  QObject::connect(&inspection, &Inspection::cursorChanged, walkthrough, &StepWalkthrough::setCursorTime);
}

}  // namespace shardscope
