#include "main_window.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QItemSelectionModel>
#include <QSettings>
#include <QStatusBar>
#include <QTabBar>
#include <QMenuBar>
#include <QScreen>
#include <QScrollArea>
#include <QTableView>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>
#include <cstdlib>
#include <qcustomplot.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "attach/attach_client.h"
#include "attach/curve_keys.h"
#include "attach_dialog.h"
#include "capacity_page.h"
#include "critical_path_page.h"
#include "hta_page.h"
#include "common/errors.h"
#include "config/serve_address.h"
#include "compare_controller.h"
#include "engine_bridge.h"
#include "experiment_panel.h"
#include "figure_export.h"
#include "flight_recorder_import.h"
#include "ladder_page.h"
#include "loss_view.h"
#include "memory_view.h"
#include "plot_style.h"
#include "page_help.h"
#include "pipeline_page.h"
#include "preset_runner.h"
#include "recent_files.h"
#include "run_banner.h"
#include "run_files.h"
#include "run_history_model.h"
#include "run_status.h"
#include "snapshot_page.h"
#include "memory_timeline_page.h"
#include "start_page.h"
#include "step_walkthrough.h"
#include "stepping_controls.h"
#include "straggler_page.h"
#include "timeline_view.h"
#include "kineto/critical_path.h"
#include "kineto/trace_analysis.h"
#include "trace_diff_page.h"
#include "user_guide.h"
#include "view_pages.h"

namespace {

// Gives the heap the process freed back to the system. glibc keeps freed
// memory in the arena it came from for reuse (every rank thread of a run has
// its own), so without this a dropped run's events stay resident and the
// window only ever grows, "Clear runs" included.
void returnFreedMemory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

// Five docks share the right-hand tabs: at 1280 px their titles would be cut
// to "Buck…"; whole titles, with scroll arrows when they do not all fit.
void showWholeDockTabTitles(QMainWindow* window) {
  for (QTabBar* bar : window->findChildren<QTabBar*>(QString(), Qt::FindDirectChildrenOnly)) {
    bar->setElideMode(Qt::ElideNone);
    bar->setUsesScrollButtons(true);
  }
}

// A memory snapshot or flight-recorder dumps ran no step of ShardScope's: the
// step walkthrough does not apply while one is on screen. It comes back with
// the next run shown, unless the user had closed it.
void setWalkthroughApplies(QMainWindow* window, bool applies) {
  auto* dock = window->findChild<QDockWidget*>(QStringLiteral("walkthroughDock"));
  if (dock == nullptr) return;
  const char* kHiddenHere = "hiddenForPostmortem";
  if (!applies && !dock->isHidden()) {
    dock->setProperty(kHiddenHere, true);
    dock->hide();
  } else if (applies && dock->property(kHiddenHere).toBool()) {
    dock->setProperty(kHiddenHere, false);
    dock->show();
  }
}

}  // namespace

namespace shardscope {

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent), m_bridge(new EngineBridge(&m_inspection.store(), this)) {
  setWindowTitle(tr("ShardScope"));
  setObjectName(QStringLiteral("mainWindow"));
  // Side docks run the full height; the loss dock sits under the timeline only.
  setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
  setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
  setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks | QMainWindow::AllowNestedDocks);

  m_runner = new PresetRunner(m_bridge, this);
  createPages();
  m_banner = new RunBanner(this);
  auto* central = new QWidget(this);
  auto* box = new QVBoxLayout(central);
  box->setContentsMargins(0, 0, 0, 0);
  box->setSpacing(0);
  box->addWidget(m_banner);
  box->addWidget(m_timeline->widget(), 1);
  // An opened memory snapshot takes the timeline's place (onRunShown).
  box->addWidget(m_pages.find(QStringLiteral("snapshot"))->widget(), 1);
  m_pages.find(QStringLiteral("snapshot"))->widget()->hide();
  // So does an opened profiler memory timeline.
  box->addWidget(m_pages.find(QStringLiteral("memory-timeline"))->widget(), 1);
  m_pages.find(QStringLiteral("memory-timeline"))->widget()->hide();
  setCentralWidget(central);

  createDocks();
  // The capacity calculator needs no run: a tab beside the communication page.
  QDockWidget* capacity = addPageDock(m_capacityPage->widget(), m_capacityPage->title(), QStringLiteral("capacityDock"),
                                      m_capacityPage->name(), Qt::RightDockWidgetArea);
  tabifyDockWidget(m_docks.value(QStringLiteral("comm")), capacity);
  m_docks.value(QStringLiteral("memory"))->raise();
  showWholeDockTabTitles(this);
  m_compare = new CompareController(&m_inspection, m_history, m_historyView, statusBar(),
                                    [this](int row) { return showHistoryRun(row); }, this);
  m_files = new RunFiles(&m_inspection, m_bridge, m_panel, this);
  // Opened flight-recorder dumps go to the ladder page, which comes into view.
  connect(m_files, &RunFiles::flightRecorderOpened, this, [this](std::shared_ptr<const FlightRecorderSet> set) {
    // The dumps ran no experiment of ShardScope's: the form says what is open, and no walkthrough.
    const int ranks = static_cast<int>(set->dumps.size());
    m_panel->showImported(tr("<b>Flight-recorder dumps</b>: %1 (%2)<br>ShardScope did not run them, so there "
                             "is no experiment to show. Pick a preset or edit an experiment to run one.")
                              .arg(set->inputs.join(QStringLiteral(", ")).toHtmlEscaped())
                              .arg(ranks == 1 ? tr("1 rank") : tr("%1 ranks").arg(ranks)));
    setWalkthroughApplies(this, false);
    static_cast<LadderPage*>(m_pages.find(QStringLiteral("ladder")))->setDumps(std::move(set));
    showView(QStringLiteral("ladder"));
    returnFreedMemory();  // the pickle trees the dumps were read through
  });
  // "Clear runs" (the loss view's button) also empties the Runs table.
  connect(lossView(), &LossView::runsCleared, this, &MainWindow::onRunsCleared);
  const auto countRuns = [this] { lossView()->setTableRuns(m_history->runCount()); };
  connect(m_history, &QAbstractItemModel::rowsInserted, this, countRuns);
  connect(m_history, &QAbstractItemModel::modelReset, this, countRuns);
  createActions();
  // Every view's "?": the user guide's paragraph on how to read it.
  for (const auto& page : m_pages.pages()) {
    QDockWidget* dock = m_docks.value(page->name());
    addHelpButton(dock ? static_cast<QWidget*>(dock) : page->widget(), page->name(), page->title());
  }
  if (auto* walk = findChild<QDockWidget*>(QStringLiteral("walkthroughDock")))
    addHelpButton(walk, QStringLiteral("walkthrough"), tr("Step walkthrough"));
  m_status = new RunStatus(&m_inspection, m_bridge, statusBar());
  m_startPage = new StartPage(this);
  m_startPage->hide();
  connect(m_startPage, &StartPage::runRequested, this, [this](const QString& preset) {
    QString error;
    if (!runLesson(preset, &error)) m_banner->showMessage(ExperimentPanel::guiWords(error), true);
  });
  connect(m_startPage, &StartPage::guideRequested, this, &MainWindow::showUserGuide);
  connect(m_startPage, &StartPage::closeRequested, this, &MainWindow::hideStartPage);

  connect(m_bridge, &EngineBridge::runStarted, this, &MainWindow::onRunStarted);
  connect(m_bridge, &EngineBridge::eventsAppended, this, [this] {
    // Stopped: a late event (a prefetch finishing) must show at once, and
    // nothing else is streaming, so skip the views' throttles; the banner
    // names what the memory view shows now.
    const bool stopped = m_bridge->gateStop().has_value();
    refreshAll(stopped);
    if (stopped)
      m_banner->showGateStop(*m_bridge->gateStop(), m_inspection.store(), memoryView()->barBytes(0), m_stepping->granularity());
  });
  connect(m_bridge, &EngineBridge::progress, this, [this](int done, int steps, double) {
    m_status->setProgress(done, steps);
    m_inspection.noteProgress();
    m_status->update();
  });
  connect(m_bridge, &EngineBridge::runFinished, this, &MainWindow::onRunFinished);
  connect(m_bridge, &EngineBridge::gateStopped, this, &MainWindow::onGateStopped);
  connect(m_bridge, &EngineBridge::notice, this, [this](const QString& text) { statusBar()->showMessage(text, 10000); });
  connect(m_bridge, &EngineBridge::gateReleased, this, [this] {
    m_walkthrough->setGateOp(std::nullopt);
    m_banner->gateReleased();
    updateActions();
  });
  connect(&m_inspection, &Inspection::runShown, this, &MainWindow::onRunShown);
  connect(&m_inspection, &Inspection::refreshed, this, [this] {
    updateActions();
    m_status->update();
  });
  connect(&m_inspection, &Inspection::rangeChanged, this, [this](std::optional<TimeRange> range) {
    m_zoomSelectionAction->setEnabled(range.has_value());
    if (range)
      statusBar()->showMessage(tr("selected %1 ms of the timeline: Z zooms to it, a timeline figure covers it, Esc clears it")
                                   .arg(static_cast<double>(range->second - range->first) * 1e-6, 0, 'f', 3),
                               10000);
  });
  connect(m_runner, &PresetRunner::viewWanted, this, &MainWindow::showView);
  connect(m_runner, &PresetRunner::startFailed, this,
          [this](const QString& message) { m_banner->showMessage(ExperimentPanel::guiWords(message), true); });
  connect(m_runner, &PresetRunner::finished, this, &MainWindow::onPresetFinished);
  connect(m_files, &RunFiles::traceOpened, this, [this] {
    if (!m_inspection.store().empty()) {
      // An opened trace joins the Runs table, under its file's name.
      RunRecord record = RunHistoryModel::fromTrace(m_inspection.store().toRunTrace(), m_inspection.run().source);
      record.label = m_history->uniqueLabel(record.label);
      m_history->addRun(std::move(record));
      m_inspection.setHistoryRow(m_history->runCount() - 1);
    }
    const int steps = static_cast<int>(timeline()->layout().stepStarts().size());
    m_status->setProgress(steps, std::max(steps, 1));
    updateActions();
    m_status->update();
  });
  connect(m_panel, &ExperimentPanel::runRequested, this, [this] { requestRun(false); });
  connect(m_stepping, &SteppingControls::startPausedRequested, this, [this] { requestRun(true); });
  connect(m_panel, &ExperimentPanel::presetChanged, this, [this] {
    if (const Preset* p = m_panel->activePreset()) showView(p->view);
  });
  connect(m_panel, &ExperimentPanel::stopRequested, m_bridge, &EngineBridge::cancel);
  connect(m_panel, &ExperimentPanel::validityChanged, this, &MainWindow::updateActions);
  connect(m_panel, &ExperimentPanel::edited, this, [this] {
    if (!m_bridge->isRunning()) m_banner->clearError();  // the error was about the previous experiment
  });
  connect(&m_inspection, &Inspection::historyShown, this, [this](int row) {
    if (row < 0 || row >= m_history->runCount())
      m_historyView->clearSelection();
    else
      m_historyView->selectRow(row);
  });

  // Every plot follows the theme (Palette::themed), including after a figure
  // export has drawn it light.
  for (QCustomPlot* plot : findChildren<QCustomPlot*>()) {
    PlotStyle::followTheme(plot);
    PlotStyle::wheelScrollsPage(plot);
    // A plot's own minimum is its widest legend row and tick labels, which grow
    // with a run (the communication view's formula entry): with the docks side
    // by side that pushed the window past a 1280 px screen. The legend wraps
    // (PlotStyle::fitLegend) at any width, so a fixed floor suffices.
    if (plot->minimumWidth() == 0) plot->setMinimumWidth(180);
  }
  fitToScreen(QGuiApplication::primaryScreen());
  arrangeDocks(size());
  m_defaultState = saveState();
  restoreSettings();
  updateActions();
  m_status->update();
}

MainWindow::~MainWindow() {
  // The bridge's run must stop before the store and views it feeds go away
  // (children are otherwise deleted after this class's members).
  delete m_bridge;
}

void MainWindow::createPages() {
  // Pages refresh in the order they are added: the timeline first.
  m_timeline = static_cast<TimelinePage*>(m_pages.add(std::make_unique<TimelinePage>(m_inspection, this)));
  m_memory = static_cast<MemoryPage*>(m_pages.add(std::make_unique<MemoryPage>(m_inspection, this)));
  m_loss = static_cast<LossPage*>(m_pages.add(std::make_unique<LossPage>(m_inspection, this)));
  m_buckets = static_cast<BucketsPage*>(m_pages.add(std::make_unique<BucketsPage>(m_inspection, this)));
  m_units = static_cast<UnitsPage*>(m_pages.add(std::make_unique<UnitsPage>(m_inspection, this)));
  m_comm = static_cast<CommPage*>(m_pages.add(std::make_unique<CommPage>(m_inspection, this)));
  m_pages.add(std::make_unique<PipelinePage>(m_inspection, this));  // pipelined runs: the schedule, the bubble measured
  m_pages.add(std::make_unique<StragglerPage>(m_inspection, this));  // imported jobs: who made the others wait
  m_pages.add(std::make_unique<HtaPage>(m_inspection, this));  // imported jobs: HTA's idle time, queues, kernels, launches
  m_pages.add(std::make_unique<CriticalPathPage>(m_inspection, this));  // imported jobs: what bounded the step, per rank
  m_pages.add(std::make_unique<LadderPage>(m_inspection, this));  // flight-recorder dumps, or a run's collectives
  m_pages.add(std::make_unique<SnapshotPage>(m_inspection, this));   // opened PyTorch memory snapshots
  m_pages.add(std::make_unique<MemoryTimelinePage>(m_inspection, this));  // an opened profiler memory timeline
  m_capacityPage = static_cast<CapacityPage*>(m_pages.add(std::make_unique<CapacityPage>(this)));
  m_pages.add(std::make_unique<TraceDiffPage>(this));  // two PyTorch jobs compared (File > Compare PyTorch jobs…)
  m_walkthrough = new StepWalkthrough(&m_inspection.store(), this);
  followInspection(m_walkthrough, m_inspection);
}

TimelineView* MainWindow::timeline() const { return m_timeline->view(); }
MemoryView* MainWindow::memoryView() const { return m_memory->view(); }
LossView* MainWindow::lossView() const { return m_loss->view(); }
BucketsView* MainWindow::bucketsView() const { return m_buckets->view(); }
UnitsView* MainWindow::unitsView() const { return m_units->view(); }
CommView* MainWindow::commView() const { return m_comm->view(); }
bool MainWindow::presetRunning() const { return m_runner->running(); }

void MainWindow::requestRun(bool paused) {
  QString error;
  if (!startActive(paused, &error)) m_banner->showMessage(ExperimentPanel::guiWords(error), true);
}

bool MainWindow::startActive(bool paused, QString* error) {
  const Preset* preset = m_panel->activePreset();
  return preset && preset->runs.size() > 1 ? runPreset(*preset, error, paused) : startRun(error, paused);
}

bool MainWindow::runLesson(const QString& name, QString* error) {
  try {
    m_panel->showPreset(findPreset(name));
  } catch (const PresetError& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
  hideStartPage();
  return startActive(false, error);
}

void MainWindow::showStartPage() {
  placeStartPage();
  m_startPage->show();
  m_startPage->raise();
  m_startPage->setFocus();
}

void MainWindow::hideStartPage() { m_startPage->hide(); }

bool MainWindow::startPageShown() const { return !m_startPage->isHidden(); }

void MainWindow::placeStartPage() {
  // Below the menu bar (File > Lessons and Help stay reachable), over the rest.
  const int top = menuBar()->isVisible() ? menuBar()->geometry().bottom() + 1 : 0;
  m_startPage->setGeometry(0, top, width(), height() - top);
}

UserGuideDialog* MainWindow::showUserGuide() {
  if (!m_guide) m_guide = new UserGuideDialog(this);
  m_guide->show();
  m_guide->raise();
  m_guide->activateWindow();
  return m_guide;
}

void MainWindow::showEvent(QShowEvent* event) {
  // The size it opens at (a screen's, --screenshot's --size, a test's) picks
  // the docks' arrangement, unless the user's own was restored.
  if (!m_shownOnce && !m_layoutFromSettings) {
    arrangeDocks(size());
    m_defaultState = saveState();
  }
  QMainWindow::showEvent(event);
  if (!m_shownOnce && !m_layoutFromSettings)
    // Once laid out: dock sizes asked before the first layout are not all kept.
    QTimer::singleShot(0, this, [this] {
      arrangeDocks(size());
      m_defaultState = saveState();
    });
  // First start: the lessons, unless something is already on its way (a
  // preset or trace from the command line, a run).
  if (!m_shownOnce && m_firstStart && m_persist && !m_bridge->isRunning() && m_inspection.store().empty() &&
      !m_panel->activePreset())
    showStartPage();
  m_shownOnce = true;
}

void MainWindow::resizeEvent(QResizeEvent* event) {
  QMainWindow::resizeEvent(event);
  if (startPageShown()) placeStartPage();
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_historyView && event->type() == QEvent::Show) m_historyView->resizeColumnsToContents();
  return QMainWindow::eventFilter(watched, event);
}

void MainWindow::showView(const QString& view) {
  QDockWidget* dock = m_docks.value(view);
  if (!dock) return;  // the timeline is always in view
  dock->show();
  dock->raise();
}

bool MainWindow::startRun(QString* error, bool paused) {
  const RunConfig config = m_panel->config();
  const Preset* active = m_panel->activePreset();
  return m_runner->startOne(active ? active->runs.front().config : config,
                            active ? active->runs.front().label : configLabel(config), error, paused);
}

bool MainWindow::runPreset(const Preset& preset, QString* error, bool paused) {
  if (!m_runner->start(preset, error, paused)) return false;
  // The ledger categories the lesson is about (checked when the preset was read).
  std::optional<CategoryFilter> shown;
  if (!preset.categories.isEmpty()) shown = CategoryFilter::parse(preset.categories.toStdString(), nullptr);
  memoryView()->setShownCategories(shown ? *shown : CategoryFilter::all());
  return true;
}

bool MainWindow::compareRuns(const QList<int>& rows, QString* error) { return m_compare->pin(rows, error); }
void MainWindow::unpinRuns() { m_compare->unpin(); }

bool MainWindow::openTrace(const QString& path, QString* error) { return m_files->openTrace(path, error); }
bool MainWindow::openFiles(const QStringList& paths, QString* error) { return m_files->openFiles(paths, error); }

bool MainWindow::attachToRun(const QString& address, const QString& server_key, QString* error) {
  if (m_bridge->isRunning()) {
    if (error) *error = tr("a run is in progress: stop it (or detach) first");
    return false;
  }
  m_lastAttachAddress = address;
  m_lastAttachKey = server_key;
  try {
    AttachOptions options;
    options.address = parseServeAddress(address.toStdString(), "attach address", false);
    options.server_key = server_key.toStdString();
    if (options.address.secured) {
      if (!isCurveKey(options.server_key))
        throw ConfigError("attaching to " + options.address.host + " needs the serving machine's key (`shardscope-cli keys` "
                          "prints it there; 40 characters)");
      options.config_dir = shardscopeConfigDir();
    }
    QApplication::setOverrideCursor(Qt::WaitCursor);  // at most the connect timeout
    AttachedRun attached;
    try {
      attached = shardscope::attachToRun(options);
    } catch (...) {
      QApplication::restoreOverrideCursor();
      throw;
    }
    QApplication::restoreOverrideCursor();
    m_panel->setConfig(attached.run->config());  // the form shows what runs there
    m_bridge->attach(std::move(attached));
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  if (!m_bridge->canStep())
    statusBar()->showMessage(tr("attached to %1: the ShardScope serving it steps only threads runs, so this "
                                "processes run can be watched and stopped, not stepped")
                                 .arg(m_bridge->attachedTo()), 10000);
  return true;
}

void MainWindow::askAttach() {
  AttachRequest request{m_lastAttachAddress, m_lastAttachKey};
  if (!askAttachRequest(this, &request)) return;
  QString error;
  if (!attachToRun(request.address, request.server_key, &error)) m_banner->showMessage(tr("Attach: %1").arg(error), true);
}
bool MainWindow::exportTrace(const QString& path, QString* error) { return m_files->exportTrace(path, error); }
bool MainWindow::saveExperiment(const QString& path, QString* error) { return m_files->saveExperiment(path, error); }
bool MainWindow::openExperiment(const QString& path, QString* error) { return m_files->openExperiment(path, error); }

bool MainWindow::showHistoryRun(int row) {
  if (row < 0 || row >= m_history->runCount() || m_bridge->isRunning()) return false;
  const RunRecord& r = m_history->run(row);
  if (!r.trace) return false;
  m_inspection.store().setFromTrace(*r.trace);
  m_inspection.store().setLosses(r.losses);
  // The form takes the run's config, so Run repeats the experiment on screen
  // (a run of the form's preset: the form shows that run and keeps the preset).
  if (r.configKnown) m_panel->showRunConfig(r.config);
  ShownRun run;
  run.kind = ShownRun::Kind::History;
  run.historyRow = row;
  run.source = tr("run %1: %2").arg(row + 1).arg(r.label);
  run.label = r.label;
  run.preset = r.preset;
  if (r.configKnown) run.config = r.config;
  run.done = true;
  run.ok = r.ok;
  run.error = r.ok ? QString() : r.error;
  run.result = r.result.get();
  m_inspection.show(std::move(run));
  return true;
}

QString MainWindow::subtitle() const {
  const ShownRun& run = m_inspection.run();
  if (m_inspection.comparing()) {
    QStringList labels;
    for (const ComparedRun& r : m_inspection.compared()) labels << QString::fromStdString(r.label);
    const QString compared = tr("%1 runs compared: %2").arg(labels.size()).arg(labels.join(QStringLiteral(", ")));
    return run.preset.isEmpty() ? compared : tr("preset %1 · ").arg(run.preset) + compared;
  }
  const QString config = FigureExport::configLine(m_inspection.store(), m_inspection.runConfig());
  const QString label = FigureExport::labelBesides(run.label, config);  // what the config does not say
  QString head;
  if (!run.preset.isEmpty())
    head = tr("preset %1").arg(run.preset) + (run.runOf.isEmpty() ? QString() : QStringLiteral(", ") + run.runOf) +
           (label.isEmpty() ? QString() : QStringLiteral(": ") + label);
  else
    head = label;
  return head.isEmpty() ? config : head + QStringLiteral(" · ") + config;
}

QString MainWindow::figureUnavailable(const QString& view) const {
  if (const Page* page = m_pages.find(view)) return page->unavailable();
  return m_inspection.store().empty() ? m_timeline->unavailable() : QString();
}

QStringList MainWindow::figureViews() const {
  QStringList candidates = presetViews();
  candidates << QStringLiteral("capacity");
  QStringList views;
  for (const QString& view : candidates) {
    const Page* page = m_pages.find(view);
    if (page && page->unavailable().isEmpty()) views << view;
  }
  // What takes the timeline's place (an opened snapshot or memory timeline) leads.
  for (const QString& centre : {QStringLiteral("snapshot"), QStringLiteral("memory-timeline")})
    if (const Page* page = m_pages.find(centre); page && page->widget()->isVisibleTo(this) && views.contains(centre))
      views.move(views.indexOf(centre), 0);
  return views;
}

bool MainWindow::exportViewFigure(const QString& view, const QString& path, int width, int height, QString* error,
                                  const FigureOptions& options) {
  refreshAll(true);
  Page* page = m_pages.find(view);
  if (!page) {
    if (error) *error = tr("unknown view '%1': use one of %2").arg(view, presetViews().join(QStringLiteral(", ")));
    return false;
  }
  if (const QString why = page->unavailable(); !why.isEmpty()) {
    if (error) *error = why;
    return false;
  }
  const FigureExport::Using figure_options(options);
  return page->figure(path, width, height, subtitle(), error);
}

void MainWindow::refreshAll(bool now) { m_inspection.refresh(now); }

void MainWindow::onRunStarted() {
  hideStartPage();  // a run from anywhere (Ctrl+R, the CLI's --run, an attach) is what to look at
  ShownRun run;
  run.kind = ShownRun::Kind::Live;
  run.config = m_bridge->config();
  // Two runs never share a name: the Runs table and the loss legend tell them apart.
  run.label = m_history->uniqueLabel(m_runner->label().isEmpty() ? configLabel(m_bridge->config()) : m_runner->label());
  run.preset = m_runner->preset() ? m_runner->preset()->name : QString();
  run.runOf = m_runner->runOfText();
  // The form shows the preset's run in progress, as every view does.
  if (m_runner->running() && m_panel->activePreset() && m_panel->activePreset()->name == run.preset)
    m_panel->showPresetRun(m_runner->index());
  run.source = m_bridge->isAttached() ? tr("attached to %1").arg(m_bridge->attachedTo())
               : m_runner->running()    ? m_runner->sourceText()
                                        : tr("live run");
  m_inspection.show(std::move(run));
}

void MainWindow::onRunShown() {
  hideStartPage();
  // A tooltip names an event of the run shown before: it must not stay up over
  // the next run (still there while the next one steps, the pointer unmoved).
  QToolTip::hideText();
  const ShownRun& run = m_inspection.run();
  // An imported PyTorch trace ran nothing of ShardScope's: the form says what
  // is on screen instead of an experiment that did not produce it.
  if (const auto& imported = m_inspection.store().meta().imported)
    m_panel->showImported(tr("<b>Imported PyTorch trace</b>: %1<br>%2 · %3<br>ShardScope did not run it, so "
                             "there is no experiment to show. Pick a preset or edit an experiment to run one.")
                              .arg(run.source.toHtmlEscaped())
                              .arg(QString::fromStdString(m_inspection.store().meta().ranksText()))
                              .arg(QString::fromStdString(imported->format).toHtmlEscaped()));
  else if (run.snapshots)
    m_panel->showImported(tr("<b>PyTorch memory snapshot</b>: %1<br>ShardScope did not run it, so there is no "
                             "experiment to show. Pick a preset or edit an experiment to run one.")
                              .arg(run.source.toHtmlEscaped()));
  else if (run.memory_timeline)
    m_panel->showImported(tr("<b>PyTorch profiler memory timeline</b>: %1<br>ShardScope did not run it, so there "
                             "is no experiment to show. Pick a preset or edit an experiment to run one.")
                              .arg(run.source.toHtmlEscaped()));
  else
    m_panel->clearImported();
  // A snapshot has no timeline: its page takes the centre while it is shown.
  const bool no_timeline = run.snapshots || run.memory_timeline;
  m_timeline->widget()->setVisible(!no_timeline);
  setWalkthroughApplies(this, !no_timeline);
  m_pages.find(QStringLiteral("snapshot"))->widget()->setVisible(run.snapshots != nullptr);
  m_pages.find(QStringLiteral("memory-timeline"))->widget()->setVisible(run.memory_timeline != nullptr);
  // An imported job's critical path, for the timeline to outline (key P): core's ops of its shown rank.
  if (m_inspection.store().meta().imported && run.hta && run.hta->critical_path.shownPath())
    timeline()->setCriticalPath(run.hta->critical_path.shownPath()->rank, kineto::criticalPathOps(run.hta->critical_path));
  else
    timeline()->setCriticalPath(-1, {});
  setWindowTitle(tr("ShardScope — %1").arg(run.source));
  if (run.error.isEmpty())
    m_banner->setVisible(false);
  else
    m_banner->showMessage(run.error, true);
  if (!run.live()) return;
  m_status->setProgress(0, m_bridge->config().steps);
  m_status->startClock();
  m_panel->setRunning(true);
}

void MainWindow::onGateStopped() {
  const auto& stop = m_bridge->gateStop();
  if (!stop) return;
  // The store holds every event up to the gate: show exactly that moment.
  refreshAll(true);
  m_walkthrough->setGateOp(stop->points.front().kind, stop->at_ns);
  setCursorTime(stop->at_ns);
  m_banner->showGateStop(*stop, m_inspection.store(), memoryView()->barBytes(0), m_stepping->granularity());
  updateActions();
}

void MainWindow::onRunFinished(bool ok, const QString& message) {
  m_status->stopClock();
  m_panel->setRunning(false);
  const bool cancelled = !ok && m_bridge->lastError().isEmpty();
  const std::optional<RunResult>& result = m_bridge->lastResult();
  m_inspection.finishRun(ok, ok || cancelled ? QString() : message, result ? &*result : nullptr);
  refreshAll(true);
  if (!cancelled) {
    RunRecord record;
    const QString& label = m_inspection.run().label;
    record.label = label.isEmpty() ? configLabel(m_bridge->config()) : label;
    record.preset = m_runner->preset() ? m_runner->preset()->name : QString();
    record.config = m_bridge->config();
    record.ok = ok;
    record.error = ok ? QString() : message;
    record.trace = std::make_shared<const RunTrace>(m_inspection.store().toRunTrace());
    record.losses = m_inspection.store().losses();
    if (result) {
      auto kept = std::make_shared<RunResult>(*result);
      kept->final_master.clear();  // N floats the table never reads
      record.result = std::move(kept);
    }
    m_history->addRun(std::move(record));
    m_inspection.setHistoryRow(m_history->runCount() - 1);  // the row follows the run on screen
    returnFreedMemory();  // the run's buffers, and the trace the table let go past its last kKeptTraces
  }
  if (ok)
    statusBar()->showMessage(message, 8000);
  else
    m_banner->showMessage(message, true);
  updateActions();
  m_status->update();
  emit runFinished(ok, message);
  m_runner->runEnded(ok, cancelled, message);
}

void MainWindow::onRunsCleared() {
  // The Runs table's rows go with the curves, but for the run on screen: the
  // views read its result from its row. Compared runs hold their own copies.
  m_compare->unpin();
  m_inspection.setHistoryRow(m_history->clearExcept(m_inspection.run().historyRow));
  returnFreedMemory();
  updateActions();
  statusBar()->showMessage(tr("earlier runs cleared: their curves, rows and memory"), 6000);
}

void MainWindow::onPresetFinished(bool ok, const QString& message) {
  // A lesson of several runs ends on its comparison (the classic ZeRO figure,
  // the gathered slices side by side, the step times stacked): its runs are the
  // last rows of the Runs table, selected and pinned as Ctrl+K pins them.
  const int runs = static_cast<int>(m_runner->endedRuns());
  const int count = m_history->runCount();
  if (ok && runs > 1 && count >= runs) {
    QList<int> rows;
    for (int row = count - runs; row < count; ++row) rows << row;
    QString error;
    // The compared pages' minimums must not take width from the form (at
    // 1280×720 its fields would be cut): its dock keeps the width it had.
    QDockWidget* form = findChild<QDockWidget*>(QStringLiteral("experimentDock"));
    const int form_width = form ? form->width() : 0;
    if (m_compare->pin(rows, &error)) {
      if (form && form->isVisible() && !form->isFloating()) {
        // At least what the form needs beside its scroll bar.
        const auto* scroll = form->findChild<QScrollArea*>();
        const int chrome = scroll ? form->width() - scroll->viewport()->width() : 0;
        resizeDocks({form}, {std::max(form_width, m_panel->minimumSizeHint().width() + chrome)}, Qt::Horizontal);
      }
      const QItemSelection selected(m_history->index(rows.front(), 0),
                                    m_history->index(rows.back(), m_history->columnCount() - 1));
      m_historyView->selectionModel()->select(selected, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    } else {
      statusBar()->showMessage(tr("the lesson's runs cannot be compared: %1").arg(error), 8000);
    }
  }
  emit presetFinished(ok, message);
}

QString MainWindow::bannerText() const { return m_banner->shownText(); }

void MainWindow::updateActions() {
  const bool running = m_bridge->isRunning();
  const bool empty = m_inspection.store().empty();
  m_runAction->setEnabled(!running && m_panel->canRun());
  m_stopAction->setEnabled(running);
  m_detachAction->setEnabled(running && m_bridge->isAttached());
  m_stepping->updateEnabled(!running && m_panel->canRun());
  m_fitAction->setEnabled(!empty);
  m_stepsAction->setEnabled(!empty);
  m_exportTraceAction->setEnabled(!empty && !running);
  // Always: the capacity calculator needs no run (figureViews lists what can be drawn).
  m_exportFigureAction->setEnabled(true);
}

void MainWindow::fitToScreen(const QScreen* screen) {
  if (!screen) return;
  // A small screen (a projector at 1280×720) gets all of it; a larger one
  // most of it. The frame is not known before the window is shown: room for
  // a usual title bar and borders.
  constexpr int kFrameWidth = 8, kFrameHeight = 40;
  const QRect available = screen->availableGeometry();
  const auto side = [](int room, int frame, int roomy) {
    return room >= roomy ? room * 9 / 10 : room - frame;
  };
  const QSize size(side(available.width(), kFrameWidth, 1600), side(available.height(), kFrameHeight, 1000));
  resize(size.expandedTo(minimumSizeHint()).boundedTo(available.size()));
  const QSize frame = this->size() + QSize(kFrameWidth, kFrameHeight);
  move(available.topLeft() + QPoint(std::max(0, (available.width() - frame.width()) / 2),
                                    std::max(0, (available.height() - frame.height()) / 2)));
}

void MainWindow::setPersistSettings(bool persist) {
  m_persist = persist;
  if (!persist) m_firstStart = false;  // tests and --screenshot open on the window itself
  if (!persist && m_layoutFromSettings && !m_shownOnce) {
    // Nothing read from QSettings: the default arrangement, not the saved one.
    restoreState(m_defaultState);
    m_layoutFromSettings = false;
  }
  m_recent->setPersist(persist);
}

void MainWindow::restoreSettings() {
  QSettings settings;
  m_firstStart = !settings.contains(QStringLiteral("window/state"));
  m_layoutFromSettings = !m_firstStart;
  restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
  restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
  showWholeDockTabTitles(this);
  m_panel->restoreSettings(settings);
}

void MainWindow::saveSettings() {
  if (!m_persist) return;
  QSettings settings;
  settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
  settings.setValue(QStringLiteral("window/state"), saveState());
  m_panel->saveSettings(settings);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  saveSettings();
  // Closing leaves an attached run going; this window's own run stops.
  if (m_bridge->isAttached()) m_bridge->detach();
  else m_bridge->cancel();
  QMainWindow::closeEvent(event);
}

}  // namespace shardscope
