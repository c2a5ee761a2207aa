#include "main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QHeaderView>
#include <QStyle>
#include <QTableView>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "theme.h"
#include "plot_style.h"
#include "palette.h"
#include "buckets_view.h"
#include "comm_view.h"
#include "engine_bridge.h"
#include "experiment_panel.h"
#include "figure_export.h"
#include "log_dock.h"
#include "loss_view.h"
#include "memory_view.h"
#include "run_history_model.h"
#include "step_walkthrough.h"
#include "stepping_controls.h"
#include "timeline_view.h"
#include "units_view.h"
#include "trace/chrome_trace_reader.h"
#include "common/json_tree.h"
#include "trace/chrome_trace_writer.h"

namespace shardscope {

namespace {

QLabel* statusLabel(const QString& text, const QString& tip, QWidget* parent) {
  auto* label = new QLabel(text, parent);
  label->setToolTip(tip);
  label->setContentsMargins(6, 0, 6, 0);
  return label;
}

// Asks for the view and the figure's size in pixels (PDF: points at the same numbers).
bool askFigure(QWidget* parent, QString* view, int* width, int* height) {
  QDialog dialog(parent);
  dialog.setWindowTitle(QObject::tr("Export figure"));
  auto* form = new QFormLayout(&dialog);
  auto* views = new QComboBox(&dialog);
  views->addItems(presetViews());
  views->setCurrentText(*view);
  auto* w = new QSpinBox(&dialog);
  auto* h = new QSpinBox(&dialog);
  w->setRange(200, 20000);
  h->setRange(150, 20000);
  w->setValue(*width);
  h->setValue(*height);
  w->setSuffix(QObject::tr(" px"));
  h->setSuffix(QObject::tr(" px"));
  form->addRow(QObject::tr("view"), views);
  form->addRow(QObject::tr("width"), w);
  form->addRow(QObject::tr("height"), h);
  auto* note = new QLabel(QObject::tr("Teaching theme: white, large fonts, legend, a title with the config."), &dialog);
  setTone(note, Tone::Muted);
  form->addRow(note);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
  QObject::connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
  QObject::connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
  form->addRow(buttons);
  if (dialog.exec() != QDialog::Accepted) return false;
  *view = views->currentText();
  *width = w->value();
  *height = h->value();
  return true;
}

QString configLabel(const RunConfig& c) {
  QString label = QStringLiteral("%1 · %2 ranks").arg(QString::fromStdString(c.strategy)).arg(c.ranks);
  if (!c.model.preset.empty()) label += QStringLiteral(" · ") + QString::fromStdString(c.model.preset);
  return label;
}

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent), m_bridge(new EngineBridge(&m_store, this)) {
  setWindowTitle(tr("ShardScope"));
  setObjectName(QStringLiteral("mainWindow"));
  // Side docks run the full height; the loss dock sits under the timeline only.
  setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
  setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
  setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks | QMainWindow::AllowNestedDocks);

  m_timeline = new TimelineView(&m_store, this);
  m_banner = new QLabel(this);
  m_banner->setObjectName(QStringLiteral("runBanner"));
  m_banner->setWordWrap(true);
  m_banner->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_banner->setVisible(false);
  auto* central = new QWidget(this);
  auto* box = new QVBoxLayout(central);
  box->setContentsMargins(0, 0, 0, 0);
  box->setSpacing(0);
  box->addWidget(m_banner);
  box->addWidget(m_timeline, 1);
  setCentralWidget(central);

  createDocks();
  createActions();
  createStatusBar();

  connect(m_bridge, &EngineBridge::runStarted, this, &MainWindow::onRunStarted);
  connect(m_bridge, &EngineBridge::eventsAppended, this, &MainWindow::refreshViews);
  connect(m_bridge, &EngineBridge::progress, this, &MainWindow::onProgress);
  connect(m_bridge, &EngineBridge::runFinished, this, &MainWindow::onRunFinished);
  connect(m_timeline, &TimelineView::cursorChanged, this, [this](qint64 ns) {
    setCursorTime(ns >= 0 ? std::optional<int64_t>(ns) : std::nullopt);
  });
  connect(m_units, &UnitsView::cursorRequested, this, [this](qint64 ns) { setCursorTime(ns); });
  // One selected rank: clicking an op of rank r shows r's memory over time.
  connect(m_timeline, &TimelineView::rankClicked, m_memory, &MemoryView::setSelectedRank);
  connect(m_timeline, &TimelineView::rangeChanged, this, [this] {
    const auto range = m_timeline->selectedRange();
    m_zoomSelectionAction->setEnabled(range.has_value());
    if (range)
      statusBar()->showMessage(tr("selected %1 ms of the timeline: Z zooms to it, a timeline figure covers it, Esc clears it")
                                   .arg(static_cast<double>(range->second - range->first) * 1e-6, 0, 'f', 3),
                               10000);
  });
  connect(m_panel, &ExperimentPanel::runRequested, this, [this] { requestRun(false); });
  connect(m_stepping, &SteppingControls::startPausedRequested, this, [this] { requestRun(true); });
  connect(m_bridge, &EngineBridge::gateStopped, this, &MainWindow::onGateStopped);
  connect(m_bridge, &EngineBridge::gateReleased, this, [this] {
    m_walkthrough->setGateOp(std::nullopt);
    if (!m_banner->isHidden() && m_bannerIsGate) m_banner->setVisible(false);
    updateActions();
  });
  connect(m_panel, &ExperimentPanel::presetChanged, this, [this] {
    if (const Preset* p = m_panel->activePreset()) showView(p->view);
  });
  connect(m_panel, &ExperimentPanel::stopRequested, m_bridge, &EngineBridge::cancel);
  connect(m_panel, &ExperimentPanel::validityChanged, this, &MainWindow::updateActions);

  // Every plot follows the theme (Palette::themed), including after a figure
  // export has drawn it light.
  for (QCustomPlot* plot : findChildren<QCustomPlot*>()) PlotStyle::followTheme(plot);
  resize(1500, 920);
  m_defaultState = saveState();
  restoreSettings();
  updateActions();
  updateStatus();
}

MainWindow::~MainWindow() {
  // The bridge's run must stop before the store and views it feeds go away
  // (children are otherwise deleted after this class's members).
  delete m_bridge;
}

QDockWidget* MainWindow::addViewDock(QWidget* view, const QString& title, const QString& name,
                                     Qt::DockWidgetArea area) {
  auto* dock = new QDockWidget(title, this);
  dock->setObjectName(name);
  dock->setWidget(view);
  addDockWidget(area, dock);
  return dock;
}

void MainWindow::createDocks() {
  m_panel = new ExperimentPanel(this);
  auto* experiment = new QDockWidget(tr("Experiment"), this);
  experiment->setObjectName(QStringLiteral("experimentDock"));
  auto* scroll = new QScrollArea(experiment);  // the form outgrows short screens
  scroll->setWidget(m_panel);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  experiment->setWidget(scroll);
  addDockWidget(Qt::LeftDockWidgetArea, experiment);

  // Right: the pages that explain a step, tabbed; the walkthrough below them.
  m_memory = new MemoryView(&m_store, this);
  m_buckets = new BucketsView(&m_store, this);
  m_units = new UnitsView(&m_store, this);
  m_comm = new CommView(&m_store, this);
  m_walkthrough = new StepWalkthrough(&m_store, this);
  auto* walk_scroll = new QScrollArea(this);
  walk_scroll->setWidget(m_walkthrough);
  walk_scroll->setWidgetResizable(true);
  walk_scroll->setFrameShape(QFrame::NoFrame);
  m_memoryDock = addViewDock(m_memory, tr("Memory ledger"), QStringLiteral("memoryDock"), Qt::RightDockWidgetArea);
  // Docks added to one area stack vertically: the walkthrough sits under the tabs.
  auto* walkthrough = addViewDock(walk_scroll, tr("Step walkthrough"), QStringLiteral("walkthroughDock"), Qt::RightDockWidgetArea);
  m_bucketsDock = addViewDock(m_buckets, tr("Buckets"), QStringLiteral("bucketsDock"), Qt::RightDockWidgetArea);
  m_unitsDock = addViewDock(m_units, tr("FSDP units"), QStringLiteral("unitsDock"), Qt::RightDockWidgetArea);
  m_commDock = addViewDock(m_comm, tr("Communication"), QStringLiteral("commDock"), Qt::RightDockWidgetArea);
  tabifyDockWidget(m_memoryDock, m_bucketsDock);
  tabifyDockWidget(m_bucketsDock, m_unitsDock);
  tabifyDockWidget(m_unitsDock, m_commDock);
  m_memoryDock->raise();

  // Bottom: loss curves and the Runs table.
  m_loss = new LossView(&m_store, this);
  m_lossDock = addViewDock(m_loss, tr("Loss"), QStringLiteral("lossDock"), Qt::BottomDockWidgetArea);
  m_history = new RunHistoryModel(this);
  m_historyView = new QTableView(this);
  m_historyView->setObjectName(QStringLiteral("runsTable"));
  m_historyView->setModel(m_history);
  m_historyView->setAlternatingRowColors(true);
  m_historyView->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_historyView->setSelectionMode(QAbstractItemView::SingleSelection);
  m_historyView->verticalHeader()->setVisible(false);
  m_historyView->verticalHeader()->setDefaultSectionSize(m_historyView->fontMetrics().height() + 6);
  m_historyView->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_historyView->horizontalHeader()->setStretchLastSection(true);
  m_historyView->setToolTip(tr("Every run of this session; double-click one to show it in every view"));
  connect(m_historyView, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    if (!showHistoryRun(index.row()))
      statusBar()->showMessage(tr("run %1's trace was dropped to save memory (only the last %2 are kept)")
                                   .arg(index.row() + 1)
                                   .arg(RunHistoryModel::kKeptTraces),
                               6000);
  });
  m_runsDock = addViewDock(m_historyView, tr("Runs"), QStringLiteral("runsDock"), Qt::BottomDockWidgetArea);
  tabifyDockWidget(m_lossDock, m_runsDock);
  tabifyDockWidget(m_runsDock, addViewDock(new LogDock(this), tr("Log"), QStringLiteral("logDock"), Qt::BottomDockWidgetArea));
  m_lossDock->raise();

  resizeDocks({experiment, m_memoryDock}, {300, 520}, Qt::Horizontal);
  resizeDocks({m_memoryDock, walkthrough}, {560, 300}, Qt::Vertical);
  resizeDocks({m_lossDock}, {190}, Qt::Vertical);
}

void MainWindow::requestRun(bool paused) {
  QString error;
  const Preset* preset = m_panel->activePreset();
  const bool ok = preset && preset->runs.size() > 1 ? runPreset(*preset, &error, paused) : startRun(&error, paused);
  if (!ok) showBanner(error, true);
}

void MainWindow::showView(const QString& view) {
  QDockWidget* dock = view == QLatin1String("memory")    ? m_memoryDock
                      : view == QLatin1String("buckets") ? m_bucketsDock
                      : view == QLatin1String("units")   ? m_unitsDock
                      : view == QLatin1String("comm")    ? m_commDock
                      : view == QLatin1String("loss")    ? m_lossDock
                      : view == QLatin1String("runs")    ? m_runsDock
                                                         : nullptr;
  if (!dock) return;  // the timeline is always in view
  dock->show();
  dock->raise();
}

void MainWindow::setCursorTime(std::optional<int64_t> ns) {
  m_cursor = ns;
  if (m_timeline->cursorTime() != ns) m_timeline->setCursorTime(ns);
  m_memory->setCursorTime(ns);
  m_buckets->setCursorTime(ns);
  m_units->setCursorTime(ns);
  m_walkthrough->setCursorTime(ns);
}

void MainWindow::createActions() {
  QStyle* s = style();
  auto* open = new QAction(s->standardIcon(QStyle::SP_DialogOpenButton), tr("&Open trace…"), this);
  open->setShortcut(QKeySequence::Open);
  open->setToolTip(tr("Open a Perfetto/Chrome JSON trace written by shardscope"));
  connect(open, &QAction::triggered, this, &MainWindow::onOpenTrace);
  m_exportTraceAction = new QAction(s->standardIcon(QStyle::SP_DialogSaveButton), tr("Export &trace…"), this);
  m_exportTraceAction->setShortcut(QKeySequence(tr("Ctrl+Shift+S")));
  connect(m_exportTraceAction, &QAction::triggered, this, &MainWindow::onExportTrace);
  m_exportFigureAction = new QAction(tr("Export &figure…"), this);
  m_exportFigureAction->setShortcut(QKeySequence(tr("Ctrl+E")));
  m_exportFigureAction->setToolTip(tr("Save a view as a PNG, SVG or PDF teaching figure"));
  connect(m_exportFigureAction, &QAction::triggered, this, &MainWindow::onExportFigure);
  auto* open_experiment = new QAction(tr("Open e&xperiment…"), this);
  open_experiment->setShortcut(QKeySequence(tr("Ctrl+Shift+O")));
  open_experiment->setToolTip(tr("Load an experiment or preset file (JSON) into the form"));
  connect(open_experiment, &QAction::triggered, this, &MainWindow::onOpenExperiment);
  auto* save_experiment = new QAction(tr("&Save experiment…"), this);
  save_experiment->setShortcut(QKeySequence::Save);
  save_experiment->setToolTip(tr("Save the form's experiment (or its preset's runs) as JSON"));
  connect(save_experiment, &QAction::triggered, this, &MainWindow::onSaveExperiment);
  auto* quit = new QAction(tr("&Quit"), this);
  quit->setShortcut(QKeySequence::Quit);
  connect(quit, &QAction::triggered, this, &QWidget::close);

  m_runAction = new QAction(s->standardIcon(QStyle::SP_MediaPlay), tr("&Run"), this);
  m_runAction->setShortcut(QKeySequence(tr("Ctrl+R")));
  m_runAction->setToolTip(tr("Run the experiment (Ctrl+R)"));
  connect(m_runAction, &QAction::triggered, m_panel, &ExperimentPanel::runRequested);
  m_stopAction = new QAction(s->standardIcon(QStyle::SP_MediaStop), tr("&Stop"), this);
  m_stopAction->setShortcut(QKeySequence(tr("Ctrl+.")));
  m_stopAction->setToolTip(tr("Stop the run (Ctrl+.)"));
  connect(m_stopAction, &QAction::triggered, m_bridge, &EngineBridge::cancel);
  m_fitAction = new QAction(tr("Zoom to &fit"), this);
  m_fitAction->setShortcut(QKeySequence(Qt::Key_F));
  m_fitAction->setToolTip(tr("Show the whole run (F, or double-click the timeline)"));
  connect(m_fitAction, &QAction::triggered, m_timeline, &TimelineView::zoomToFit);
  m_zoomSelectionAction = new QAction(tr("Zoom to se&lection"), this);
  m_zoomSelectionAction->setShortcut(QKeySequence(Qt::Key_Z));
  m_zoomSelectionAction->setToolTip(tr("Show the time range selected with Shift+drag on the timeline (Z)"));
  m_zoomSelectionAction->setEnabled(false);
  connect(m_zoomSelectionAction, &QAction::triggered, m_timeline, &TimelineView::zoomToSelection);
  m_stepsAction = new QAction(tr("Zoom to &steps"), this);
  m_stepsAction->setShortcut(QKeySequence(tr("Shift+F")));
  m_stepsAction->setToolTip(tr("Show the training steps without the setup (Shift+F)"));
  connect(m_stepsAction, &QAction::triggered, m_timeline, &TimelineView::zoomToSteps);

  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(open_experiment);
  file->addAction(save_experiment);
  file->addSeparator();
  file->addAction(open);
  file->addAction(m_exportTraceAction);
  file->addAction(m_exportFigureAction);
  file->addSeparator();
  file->addAction(quit);
  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run->addAction(m_runAction);
  run->addAction(m_stopAction);
  run->addSeparator();
  m_stepping = new SteppingControls(
      m_bridge, [this] { return m_bridge->isRunning() ? m_bridge->config() : m_panel->config(); }, this);
  QMenu* view = menuBar()->addMenu(tr("&View"));
  view->addAction(m_fitAction);
  view->addAction(m_stepsAction);
  view->addAction(m_zoomSelectionAction);
  view->addSeparator();
  for (QDockWidget* dock : findChildren<QDockWidget*>()) view->addAction(dock->toggleViewAction());
  view->addSeparator();
  QMenu* theme = view->addMenu(tr("&Theme"));
  auto* themes = new QActionGroup(theme);
  for (const auto& [name, value] : {std::pair{tr("Light"), Theme::Light}, std::pair{tr("Dark"), Theme::Dark}}) {
    QAction* a = theme->addAction(name);
    a->setCheckable(true);
    a->setChecked(Palette::theme() == value);
    themes->addAction(a);
    connect(a, &QAction::triggered, this, [this, value = value, name = name] {
      if (m_persist) QSettings().setValue(QStringLiteral("view/theme"), value == Theme::Dark ? "dark" : "light");
      applyTheme(value);
      statusBar()->showMessage(tr("%1 theme (figures are always exported light)").arg(name), 6000);
    });
  }
  view->addSeparator();
  view->addAction(tr("Reset layout"), this, [this] { restoreState(m_defaultState); });
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("About ShardScope"), this, [this] {
    QMessageBox::about(this, tr("About ShardScope"),
                       tr("<b>ShardScope %1</b><br>A live inspector for data-parallel training: "
                          "real DDP steps on CPU ranks, measured memory ledgers, bucket firing "
                          "and communication timelines.<br><br>Timeline: wheel zooms, drag pans, "
                          "double-click or F fits, a click sets the cursor every view follows (drag the "
                          "cursor line to scrub a step), Esc clears it.")
                           .arg(QStringLiteral(SHARDSCOPE_VERSION)));
  });

  auto* bar = addToolBar(tr("Main"));
  bar->setObjectName(QStringLiteral("mainToolBar"));
  bar->setMovable(false);
  bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  bar->addAction(m_runAction);
  bar->addAction(m_stopAction);
  bar->addSeparator();
  m_stepping->addTo(bar, run);
  bar->addSeparator();
  bar->addAction(m_fitAction);
  bar->addAction(m_stepsAction);
  bar->addSeparator();
  bar->addAction(open);
  bar->addAction(m_exportTraceAction);
  bar->addAction(m_exportFigureAction);
}

void MainWindow::createStatusBar() {
  m_sourceLabel = statusLabel(QString(), tr("Where the events come from"), this);
  m_stepLabel = statusLabel(QString(), tr("Completed training steps"), this);
  m_lossLabel = statusLabel(QString(), tr("Mean loss over ranks, last completed step"), this);
  m_elapsedLabel = statusLabel(QString(), tr("Wall time of the run"), this);
  m_progress = new QProgressBar(this);
  m_progress->setMaximumWidth(160);
  m_progress->setMaximumHeight(16);
  m_progress->setTextVisible(true);
  m_progress->setFormat(tr("%v / %m steps"));
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  statusBar()->addWidget(m_sourceLabel, 1);
  statusBar()->addPermanentWidget(m_stepLabel);
  statusBar()->addPermanentWidget(m_lossLabel);
  statusBar()->addPermanentWidget(m_elapsedLabel);
  m_backendLabel = statusLabel(tr("backend cpu"), tr("Ranks are CPU threads; collectives run on Gloo"), this);
  statusBar()->addPermanentWidget(m_backendLabel);
  m_clockLabel = statusLabel(tr("clock measured"), QString(), this);
  statusBar()->addPermanentWidget(m_clockLabel);
  statusBar()->addPermanentWidget(m_progress);
  m_elapsedTimer = new QTimer(this);
  m_elapsedTimer->setInterval(200);
  connect(m_elapsedTimer, &QTimer::timeout, this, &MainWindow::updateStatus);
}

bool MainWindow::startConfig(const RunConfig& config, const QString& label, QString* error, bool paused) {
  m_runLabel = label;
  try {
    m_bridge->start(config, paused);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  return true;
}

bool MainWindow::startRun(QString* error, bool paused) {
  m_preset.reset();
  const RunConfig config = m_panel->config();
  const Preset* active = m_panel->activePreset();
  return startConfig(active ? active->runs.front().config : config,
                     active ? active->runs.front().label : configLabel(config), error, paused);
}

bool MainWindow::runPreset(const Preset& preset, QString* error, bool paused) {
  if (m_bridge->isRunning()) {
    if (error) *error = tr("a run is in progress; stop it (Ctrl+.) before running preset %1").arg(preset.name);
    return false;
  }
  m_preset = preset;
  m_presetIndex = 0;
  m_presetOk = true;
  m_presetMessage.clear();
  showView(preset.view);
  if (!startConfig(preset.runs.front().config, preset.runs.front().label, error, paused)) {
    m_preset.reset();
    return false;
  }
  return true;
}

void MainWindow::startNextPresetRun() {
  if (!m_preset) return;
  const PresetRun& run = m_preset->runs[m_presetIndex];
  QString error;
  if (!startConfig(run.config, run.label, &error)) {
    const QString message = tr("preset %1, run %2: %3").arg(m_preset->name).arg(m_presetIndex + 1).arg(error);
    m_preset.reset();
    showBanner(message, true);
    emit presetFinished(false, message);
  }
}

bool MainWindow::showHistoryRun(int row) {
  if (row < 0 || row >= m_history->runCount() || m_bridge->isRunning()) return false;
  const RunRecord& r = m_history->run(row);
  if (!r.trace) return false;
  m_store.setFromTrace(*r.trace);
  m_store.setLosses(r.losses);
  m_fromBridge = false;
  m_shownConfig = r.config;
  m_runLabel = r.label;
  m_shownPreset = r.preset;
  m_shownRunOf.clear();
  m_source = tr("run %1: %2").arg(row + 1).arg(r.label);
  setWindowTitle(tr("ShardScope — %1").arg(m_source));
  m_loss->setFromTrace(false);
  m_loss->setNoLossReason(r.config.backend == Backend::Meta ? tr("The meta backend runs shapes only: no math, so no loss.")
                                                            : QString());
  if (r.ok && r.config.backend != Backend::Meta) m_loss->markKept();
  m_buckets->setRunError(r.ok ? QString() : r.error);
  m_comm->setRun(r.result.get());
  setCursorTime(std::nullopt);
  m_timeline->setFollowLive(true);
  refreshAllNow();
  m_timeline->setFollowLive(false);
  if (r.ok) m_banner->setVisible(false);
  else showBanner(r.error, true);
  updateStatus();
  return true;
}

bool MainWindow::openTrace(const QString& path, QString* error) {
  if (m_bridge->isRunning()) {
    if (error) *error = tr("a run is in progress; stop it (Ctrl+.) before opening %1").arg(path);
    return false;
  }
  RunTrace trace;
  try {
    trace = readChromeTraceFile(path.toStdString());
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  m_store.setFromTrace(std::move(trace));
  m_loss->setFromTrace(true);
  m_loss->setNoLossReason(QString());
  m_fromBridge = false;
  m_shownConfig.reset();
  // Traces record the flags of their run: the form takes them, so Run repeats it.
  try {
    const Json config = parseJsonTree(m_store.meta().config_json);
    if (const auto args = config.find("args"); args != config.end()) {
      std::vector<std::string> flags = args->get<std::vector<std::string>>();
      m_shownConfig = parseRunArgs(flags);
      m_panel->setConfig(*m_shownConfig);
    }
  } catch (const std::exception& e) {
    // An older or hand-edited trace: the views still work; the form stays as it was.
    statusBar()->showMessage(tr("the trace's recorded flags could not be read (%1); the form is unchanged").arg(e.what()), 8000);
  }
  m_runLabel.clear();
  m_shownPreset.clear();
  m_shownRunOf.clear();
  m_buckets->setRunError(QString());
  m_comm->setRun(nullptr);
  m_source = QFileInfo(path).fileName();
  setWindowTitle(tr("ShardScope — %1").arg(m_source));
  m_banner->setVisible(false);
  setCursorTime(std::nullopt);
  m_timeline->setFollowLive(true);
  refreshAllNow();
  m_timeline->setFollowLive(false);
  const int steps = static_cast<int>(m_timeline->layout().stepStarts().size());
  m_progress->setRange(0, std::max(steps, 1));
  m_progress->setValue(steps);
  updateActions();
  updateStatus();
  return true;
}

bool MainWindow::exportTrace(const QString& path, QString* error) {
  try {
    writeChromeTraceFile(m_store.toRunTrace(), path.toStdString());
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  return true;
}

void MainWindow::onOpenTrace() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open trace"), QString(),
                                                    tr("ShardScope traces (*.json);;All files (*)"));
  if (path.isEmpty()) return;
  QString error;
  if (!openTrace(path, &error)) QMessageBox::critical(this, tr("Cannot open trace"), error);
}

bool MainWindow::saveExperiment(const QString& path, QString* error) {
  if (!m_panel->isValid()) {
    if (error) *error = m_panel->errorText();
    return false;
  }
  const Preset preset = m_panel->activePreset() ? *m_panel->activePreset()
                                                : experimentPreset(m_panel->config(), configLabel(m_panel->config()));
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) || file.write(presetJson(preset)) < 0 || !file.flush()) {
    if (error) *error = tr("cannot write %1: %2").arg(path, file.errorString());
    return false;
  }
  return true;
}

bool MainWindow::openExperiment(const QString& path, QString* error) {
  if (m_bridge->isRunning()) {
    if (error) *error = tr("a run is in progress; stop it (Ctrl+.) before opening %1").arg(path);
    return false;
  }
  try {
    m_panel->showPreset(loadPresetFile(path));
  } catch (const PresetError& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  return true;
}

void MainWindow::onOpenExperiment() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open experiment"), QString(),
                                                    tr("ShardScope experiments and presets (*.json);;All files (*)"));
  if (path.isEmpty()) return;
  QString error;
  if (!openExperiment(path, &error)) QMessageBox::critical(this, tr("Cannot open experiment"), error);
}

void MainWindow::onSaveExperiment() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Save experiment"), QStringLiteral("experiment.json"),
                                                    tr("ShardScope experiment (*.json)"));
  if (path.isEmpty()) return;
  QString error;
  if (!saveExperiment(path, &error))
    QMessageBox::critical(this, tr("Cannot save experiment"), error);
  else
    statusBar()->showMessage(tr("experiment written to %1 (open it here, or run it: shardscope --preset %1)").arg(path), 8000);
}

void MainWindow::onExportTrace() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Export trace"), QStringLiteral("shardscope.trace.json"),
                                                    tr("Perfetto / Chrome JSON (*.json)"));
  if (path.isEmpty()) return;
  QString error;
  if (!exportTrace(path, &error))
    QMessageBox::critical(this, tr("Cannot export trace"), error);
  else
    statusBar()->showMessage(tr("trace written to %1 (opens in ui.perfetto.dev)").arg(path), 6000);
}

void MainWindow::onExportFigure() {
  QString view = QStringLiteral("timeline");
  int width = 1600, height = 900;
  if (!askFigure(this, &view, &width, &height)) return;
  const QString path = QFileDialog::getSaveFileName(this, tr("Export %1 figure").arg(view), view + QStringLiteral(".png"),
                                                    tr("PNG image (*.png);;SVG vector (*.svg);;PDF document (*.pdf)"));
  if (path.isEmpty()) return;
  QString error;
  if (!exportViewFigure(view, path, width, height, &error))
    QMessageBox::critical(this, tr("Cannot export figure"), error);
  else
    statusBar()->showMessage(tr("figure written to %1").arg(path), 6000);
}

QString MainWindow::subtitle() const {
  const QString config = FigureExport::configLine(m_store, m_shownConfig ? &*m_shownConfig : nullptr);
  QString head;
  if (!m_shownPreset.isEmpty())
    head = tr("preset %1").arg(m_shownPreset) + (m_shownRunOf.isEmpty() ? QString() : QStringLiteral(", ") + m_shownRunOf) +
           (m_runLabel.isEmpty() || config.startsWith(m_runLabel) ? QString() : QStringLiteral(": ") + m_runLabel);
  else if (!m_runLabel.isEmpty() && !config.startsWith(m_runLabel))
    head = m_runLabel;
  return head.isEmpty() ? config : head + QStringLiteral(" · ") + config;
}

QString MainWindow::figureUnavailable(const QString& view) const {
  const QString strategy = QString::fromStdString(m_store.meta().strategy);
  if (m_store.empty()) return tr("there is no run to draw: run a preset or open a trace first");
  if (view == QLatin1String("buckets") && m_buckets->activity().bucketCount() == 0)
    return tr("the buckets view shows ddp, zero1 and zero2 runs; this %1 run has FSDP units (use --view units)").arg(strategy);
  if (view == QLatin1String("units") && m_units->states().unitCount() == 0)
    return tr("the units view shows zero3, fsdp and hsdp runs; this %1 run has gradient buckets (use --view buckets)").arg(strategy);
  if (view == QLatin1String("loss") && m_loss->runCount() == 0 && m_loss->pointCount() == 0)
    return m_shownConfig && m_shownConfig->backend == Backend::Meta
               ? tr("the loss view has no curve: the meta backend runs shapes only, no math")
               : tr("the loss view has no curve: no training step completed");
  if (view == QLatin1String("comm") && m_comm->model()->step() < 0)
    return tr("the communication view needs a step every rank completed; this run has none");
  return {};
}

bool MainWindow::exportViewFigure(const QString& view, const QString& path, int width, int height, QString* error) {
  refreshAllNow();
  if (presetViews().contains(view)) {
    if (const QString why = figureUnavailable(view); !why.isEmpty()) {
      if (error) *error = why;
      return false;
    }
  }
  const QString sub = subtitle();
  if (view == QLatin1String("timeline"))
    return m_timeline->exportFigure(path, width, height, error, tr("Timeline: ranks × lanes"), sub);
  if (view == QLatin1String("memory"))
    return FigureExport::write(path, tr("Memory ledger per rank, measured by the allocator"), sub,
                               {{m_memory->barsPlot(), 1.2}, {m_memory->timePlot(), 1.0}}, width, height, error);
  if (view == QLatin1String("buckets")) {
    m_buckets->setInfoWrap(FigureExport::lineChars(width, height));  // the figure's width, not the dock's
    const bool ok = FigureExport::write(path, m_buckets->figureTitle(), sub, {{m_buckets->plot(), 1.0}}, width, height, error);
    m_buckets->setInfoWrap(0);
    return ok;
  }
  if (view == QLatin1String("units"))
    return FigureExport::write(path, m_units->figureTitle(), sub, {{m_units->plot(), 1.0}}, width, height, error);
  if (view == QLatin1String("loss")) {
    // Overlaid runs: name them all, not just the last run's config.
    QString loss_sub = sub;
    if (m_loss->runCount() > 1) {
      QStringList labels;
      for (int i = 0; i < m_loss->runCount(); ++i) labels << m_loss->runLabel(i);
      loss_sub = tr("runs overlaid: %1 · same model, data and seed").arg(labels.join(QStringLiteral(", ")));
      if (!m_shownPreset.isEmpty()) loss_sub = tr("preset %1 · ").arg(m_shownPreset) + loss_sub;
    }
    return FigureExport::write(path, m_loss->figureTitle(), loss_sub, {{m_loss->plot(), 1.0}}, width, height, error);
  }
  if (view == QLatin1String("comm"))
    return FigureExport::write(path, m_comm->figureTitle(), sub, {{m_comm->bytesPlot(), 1.0}, {m_comm->timePlot(), 1.0}},
                               width, height, error);
  if (error) *error = tr("unknown view '%1': use one of %2").arg(view, presetViews().join(QStringLiteral(", ")));
  return false;
}

void MainWindow::onRunStarted() {
  const RunConfig& config = m_bridge->config();
  m_fromBridge = true;
  m_shownConfig = config;
  m_shownPreset = m_preset ? m_preset->name : QString();
  m_shownRunOf = m_preset && m_preset->runs.size() > 1
                     ? tr("run %1 of %2").arg(m_presetIndex + 1).arg(m_preset->runs.size())
                     : QString();
  m_source = m_preset ? tr("preset %1, run %2/%3: %4")
                            .arg(m_preset->name)
                            .arg(m_presetIndex + 1)
                            .arg(m_preset->runs.size())
                            .arg(m_runLabel)
                      : tr("live run");
  m_loss->setFromTrace(false);
  m_loss->setNoLossReason(config.backend == Backend::Meta
                              ? tr("The meta backend runs shapes only: no math, so no loss (the timings, ledger and "
                                   "traffic are still the real engine's).")
                              : QString());
  setWindowTitle(tr("ShardScope — %1").arg(m_source));
  m_banner->setVisible(false);
  m_buckets->setRunError(QString());
  m_comm->clear();
  setCursorTime(std::nullopt);
  m_timeline->setFollowLive(true);
  m_progress->setRange(0, config.steps);
  m_progress->setValue(0);
  m_elapsedTimer->start();
  m_panel->setRunning(true);
  refreshViews();
  updateActions();
  updateStatus();
}

void MainWindow::onProgress(int steps_done, int steps, double) {
  m_progress->setRange(0, steps);
  m_progress->setValue(steps_done);
  // Traffic so far, from the events (the run's own measurement comes at the
  // end); at most once a second, since it rescans the run.
  if (!m_commClock.isValid() || m_commClock.elapsed() >= 1000) {
    m_commClock.start();
    m_comm->setRun(nullptr);
  }
  updateStatus();
}

void MainWindow::onGateStopped() {
  const auto& stop = m_bridge->gateStop();
  if (!stop) return;
  // The store holds every event up to the gate: show exactly that moment.
  const GatePoint& p = stop->points.front();
  refreshAllNow();
  m_walkthrough->setGateOp(p.kind, stop->at_ns);
  setCursorTime(stop->at_ns);
  QString html = tr("<b>Paused</b> — %1.").arg(SteppingControls::describe(stop->points, stop->lockstep, m_store).toHtmlEscaped());
  const auto bytes = m_memory->barBytes(0);
  const auto mib = [](int64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); };
  const int64_t gathered = bytes[static_cast<size_t>(Category::Gathered)];
  const int64_t grad_full = bytes[static_cast<size_t>(Category::GradFull)];
  if (gathered > 0 || p.unit >= 0)
    html += tr(" Rank 0 holds %1 MiB of gathered parameters and %2 MiB of full gradients here.")
                .arg(mib(gathered), 0, 'f', 2)
                .arg(mib(grad_full), 0, 'f', 2);
  html += tr(" Every view shows this moment (the cursor). <b>F10</b> steps by %1, <b>F5</b> continues, <b>Ctrl+.</b> stops.")
              .arg(m_stepping->granularity() == StepMode::NextOp     ? tr("op")
                   : m_stepping->granularity() == StepMode::NextUnit ? tr("unit")
                   : m_stepping->granularity() == StepMode::NextPhase ? tr("phase")
                                                                      : tr("training step"));
  showInfoBanner(html);
  updateActions();
}

void MainWindow::onRunFinished(bool ok, const QString& message) {
  m_elapsedTimer->stop();
  m_panel->setRunning(false);
  const bool cancelled = !ok && m_bridge->lastError().isEmpty();
  if (!ok && !cancelled) m_buckets->setRunError(message);
  m_comm->setRun(m_bridge->lastResult() ? &*m_bridge->lastResult() : nullptr);
  refreshAllNow();
  if (!cancelled) {
    RunRecord record;
    record.label = m_runLabel.isEmpty() ? configLabel(m_bridge->config()) : m_runLabel;
    record.preset = m_preset ? m_preset->name : QString();
    record.config = m_bridge->config();
    record.ok = ok;
    record.error = ok ? QString() : message;
    record.trace = std::make_shared<const RunTrace>(m_store.toRunTrace());
    record.losses = m_store.losses();
    if (m_bridge->lastResult()) {
      auto result = std::make_shared<RunResult>(*m_bridge->lastResult());
      result->final_master.clear();  // N floats the table never reads
      record.result = std::move(result);
    }
    m_history->addRun(std::move(record));
    if (ok && m_bridge->config().backend != Backend::Meta) m_loss->keepRun(m_runLabel);
  }
  if (ok)
    statusBar()->showMessage(message, 8000);
  else
    showBanner(message, true);
  updateActions();
  updateStatus();
  emit runFinished(ok, message);

  if (!m_preset) return;
  const bool last = m_presetIndex + 1 >= m_preset->runs.size();
  if (!ok) {
    // A stop ends the preset; a hang preset expects its (last) run to stop.
    m_presetOk = !cancelled && m_preset->expectError && last;
    m_presetMessage = m_presetOk ? tr("preset %1: the run stopped, as the preset expects: %2").arg(m_preset->name, message)
                                 : message;
  }
  if (ok && !last) {
    ++m_presetIndex;
    QTimer::singleShot(0, this, &MainWindow::startNextPresetRun);
    return;
  }
  if (ok && m_preset->expectError) {
    m_presetOk = false;
    m_presetMessage = tr("preset %1 expected its run to stop, but it finished").arg(m_preset->name);
  }
  if (m_presetOk && m_presetMessage.isEmpty())
    m_presetMessage = tr("preset %1: %2 run%3 finished").arg(m_preset->name).arg(m_preset->runs.size()).arg(m_preset->runs.size() == 1 ? "" : "s");
  const Preset done = *m_preset;
  m_preset.reset();
  showView(done.view);
  emit presetFinished(m_presetOk, m_presetMessage);
}

void MainWindow::refreshViews() {
  if (m_bridge->gateStop()) {
    // Stopped: a late event (a prefetch finishing) must show at once, and
    // nothing else is streaming, so skip the views' throttles.
    refreshAllNow();
    return;
  }
  m_timeline->refresh();
  m_memory->refresh();
  m_loss->refresh();
  m_buckets->refresh();
  m_units->refresh();
  m_walkthrough->refresh();
  updateActions();
  updateStatus();
}

void MainWindow::refreshAllNow() {
  m_timeline->refresh();
  m_memory->refresh(true);
  m_loss->refresh();
  m_buckets->refresh(true);
  m_units->refresh(true);
  m_walkthrough->refresh();
  updateActions();
  updateStatus();
}

void MainWindow::showInfoBanner(const QString& html) {
  showBanner(QString(), false);
  m_banner->setText(html);
  m_banner->setVisible(true);
  m_bannerIsGate = true;
}

void MainWindow::showBanner(const QString& text, bool error) {
  m_bannerIsGate = false;
  m_banner->setStyleSheet(error ? QStringLiteral("QLabel { background: #FDECEE; color: #8A0018; border-bottom: 1px solid #F2B8BF; padding: 6px 10px; }")
                                : QStringLiteral("QLabel { background: #EAF3FB; color: #0B3C5D; border-bottom: 1px solid #B9D6EE; padding: 6px 10px; }"));
  m_banner->setText((error ? tr("<b>Run stopped:</b> ") : QString()) + text.toHtmlEscaped());
  m_banner->setVisible(!text.isEmpty());
}

QString MainWindow::bannerText() const { return m_banner->isHidden() ? QString() : m_banner->text(); }

void MainWindow::updateActions() {
  const bool running = m_bridge->isRunning();
  m_runAction->setEnabled(!running && m_panel->isValid());
  m_stopAction->setEnabled(running);
  m_stepping->updateEnabled(!running && m_panel->isValid());
  m_fitAction->setEnabled(!m_store.empty());
  m_stepsAction->setEnabled(!m_store.empty());
  m_exportTraceAction->setEnabled(!m_store.empty() && !running);
  m_exportFigureAction->setEnabled(!m_store.empty());
}

void MainWindow::updateStatus() {
  const RunTrace& meta = m_store.meta();
  QString source = m_source.isEmpty() ? tr("no run") : m_source;
  if (!meta.strategy.empty())
    source += tr(" · %1 · %2 ranks · %3 M params · %4 events")
                  .arg(QString::fromStdString(meta.strategy))
                  .arg(meta.ranks)
                  .arg(static_cast<double>(meta.params) * 1e-6, 0, 'f', 2)
                  .arg(QLocale().toString(static_cast<qulonglong>(m_store.eventCount())));
  m_sourceLabel->setText(source);
  m_progress->setFormat(m_store.empty() ? tr("no steps") : tr("%v / %m steps"));
  if (m_store.modeledClock()) {
    const QString profile = QString::fromStdString(m_store.configString("profile", "?"));
    m_clockLabel->setText(tr("clock modeled · %1").arg(profile));
    m_clockLabel->setToolTip(tr("Times are op costs priced under the %1 hardware profile (deterministic), "
                                "not this machine's time").arg(profile));
  } else {
    m_clockLabel->setText(tr("clock measured"));
    const bool gpu = m_shownConfig && isGpuBackend(m_shownConfig->backend);
    m_clockLabel->setToolTip(gpu ? tr("Op spans are CUDA-event times on each GPU stream; instants and memory events "
                                      "are host times (when the work was launched)")
                                 : tr("Times are this machine's steady clock"));
  }
  const auto& losses = m_store.losses();
  const bool live = m_bridge->isRunning() || m_fromBridge;
  const Backend backend = m_shownConfig ? m_shownConfig->backend : Backend::Cpu;
  const bool meta_backend = backend == Backend::Meta;
  m_backendLabel->setText(tr("backend %1").arg(QString::fromStdString(backendName(backend))));
  switch (backend) {
    case Backend::Meta:
      m_backendLabel->setToolTip(tr("Shapes only: no math and no bytes, but the same engine, ledger and traffic, "
                                    "priced on the modeled clock"));
      break;
    case Backend::Cuda:
      m_backendLabel->setToolTip(tr("One rank per GPU; collectives run on NCCL; op spans are CUDA-event times"));
      break;
    case Backend::CudaEmulated:
      m_backendLabel->setToolTip(tr("Every rank on GPU 0 with its own streams and memory; collectives are device "
                                    "copies and reductions; op spans are CUDA-event times"));
      break;
    case Backend::Cpu:
      m_backendLabel->setToolTip(tr("Ranks are CPU threads; collectives run on Gloo"));
      break;
  }
  m_stepLabel->setText(live ? tr("step %1 / %2").arg(losses.size()).arg(m_bridge->config().steps) : tr("step –"));
  m_lossLabel->setText(losses.empty() || meta_backend ? tr("loss –") : tr("loss %1").arg(losses.back(), 0, 'f', 4));
  const double elapsed = m_bridge->elapsedSeconds();
  m_elapsedLabel->setText(live ? tr("%1 s").arg(elapsed, 0, 'f', elapsed < 10 ? 2 : 1)
                               : m_store.empty() ? tr("– s")
                                                 : tr("%1 ms traced").arg(static_cast<double>(m_store.endNs()) * 1e-6, 0, 'f', 1));
}

void MainWindow::restoreSettings() {
  QSettings settings;
  restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
  restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
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
  m_bridge->cancel();
  QMainWindow::closeEvent(event);
}

}  // namespace shardscope
