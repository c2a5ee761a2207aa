#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
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
#include <QStyle>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>

#include "engine_bridge.h"
#include "experiment_panel.h"
#include "loss_view.h"
#include "memory_view.h"
#include "timeline_view.h"
#include "trace/chrome_trace_reader.h"
#include "trace/chrome_trace_writer.h"

namespace shardscope {

namespace {

QLabel* statusLabel(const QString& text, const QString& tip, QWidget* parent) {
  auto* label = new QLabel(text, parent);
  label->setToolTip(tip);
  label->setContentsMargins(6, 0, 6, 0);
  return label;
}

// Asks for the figure's size in pixels (PDF: points at the same numbers).
bool askFigureSize(QWidget* parent, int* width, int* height) {
  QDialog dialog(parent);
  dialog.setWindowTitle(QObject::tr("Figure size"));
  auto* form = new QFormLayout(&dialog);
  auto* w = new QSpinBox(&dialog);
  auto* h = new QSpinBox(&dialog);
  w->setRange(200, 20000);
  h->setRange(150, 20000);
  w->setValue(*width);
  h->setValue(*height);
  w->setSuffix(QObject::tr(" px"));
  h->setSuffix(QObject::tr(" px"));
  form->addRow(QObject::tr("width"), w);
  form->addRow(QObject::tr("height"), h);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
  QObject::connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
  QObject::connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
  form->addRow(buttons);
  if (dialog.exec() != QDialog::Accepted) return false;
  *width = w->value();
  *height = h->value();
  return true;
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
    m_memory->setCursorTime(ns >= 0 ? std::optional<int64_t>(ns) : std::nullopt);
  });
  connect(m_panel, &ExperimentPanel::runRequested, this, [this] {
    QString error;
    if (!startRun(&error)) showBanner(error, true);
  });
  connect(m_panel, &ExperimentPanel::stopRequested, m_bridge, &EngineBridge::cancel);
  connect(m_panel, &ExperimentPanel::validityChanged, this, &MainWindow::updateActions);

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

  m_memory = new MemoryView(&m_store, this);
  auto* memory = new QDockWidget(tr("Memory ledger"), this);
  memory->setObjectName(QStringLiteral("memoryDock"));
  memory->setWidget(m_memory);
  addDockWidget(Qt::RightDockWidgetArea, memory);

  m_loss = new LossView(&m_store, this);
  auto* loss = new QDockWidget(tr("Loss"), this);
  loss->setObjectName(QStringLiteral("lossDock"));
  loss->setWidget(m_loss);
  addDockWidget(Qt::BottomDockWidgetArea, loss);

  resizeDocks({experiment, memory}, {250, 470}, Qt::Horizontal);
  resizeDocks({loss}, {170}, Qt::Vertical);
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
  m_exportFigureAction->setToolTip(tr("Save the timeline as PNG, SVG or PDF"));
  connect(m_exportFigureAction, &QAction::triggered, this, &MainWindow::onExportFigure);
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
  m_stepsAction = new QAction(tr("Zoom to &steps"), this);
  m_stepsAction->setShortcut(QKeySequence(tr("Shift+F")));
  m_stepsAction->setToolTip(tr("Show the training steps without the setup (Shift+F)"));
  connect(m_stepsAction, &QAction::triggered, m_timeline, &TimelineView::zoomToSteps);

  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(open);
  file->addAction(m_exportTraceAction);
  file->addAction(m_exportFigureAction);
  file->addSeparator();
  file->addAction(quit);
  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run->addAction(m_runAction);
  run->addAction(m_stopAction);
  QMenu* view = menuBar()->addMenu(tr("&View"));
  view->addAction(m_fitAction);
  view->addAction(m_stepsAction);
  view->addSeparator();
  for (QDockWidget* dock : findChildren<QDockWidget*>()) view->addAction(dock->toggleViewAction());
  view->addSeparator();
  view->addAction(tr("Reset layout"), this, [this] { restoreState(m_defaultState); });
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("About ShardScope"), this, [this] {
    QMessageBox::about(this, tr("About ShardScope"),
                       tr("<b>ShardScope %1</b><br>A live inspector for data-parallel training: "
                          "real DDP steps on CPU ranks, measured memory ledgers, bucket firing "
                          "and communication timelines.<br><br>Timeline: wheel zooms, drag pans, "
                          "double-click or F fits, click sets the memory cursor, Esc clears it.")
                           .arg(QStringLiteral(SHARDSCOPE_VERSION)));
  });

  auto* bar = addToolBar(tr("Main"));
  bar->setObjectName(QStringLiteral("mainToolBar"));
  bar->setMovable(false);
  bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  bar->addAction(m_runAction);
  bar->addAction(m_stopAction);
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
  statusBar()->addPermanentWidget(statusLabel(tr("backend cpu"), tr("Ranks are CPU threads; collectives run on Gloo"), this));
  m_clockLabel = statusLabel(tr("clock measured"), QString(), this);
  statusBar()->addPermanentWidget(m_clockLabel);
  statusBar()->addPermanentWidget(m_progress);
  m_elapsedTimer = new QTimer(this);
  m_elapsedTimer->setInterval(200);
  connect(m_elapsedTimer, &QTimer::timeout, this, &MainWindow::updateStatus);
}

bool MainWindow::startRun(QString* error) {
  try {
    m_bridge->start(m_panel->config());
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
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
  m_source = QFileInfo(path).fileName();
  setWindowTitle(tr("ShardScope — %1").arg(m_source));
  m_banner->setVisible(false);
  m_timeline->setCursorTime(std::nullopt);
  m_memory->setCursorTime(std::nullopt);
  m_timeline->setFollowLive(true);
  refreshViews();
  m_timeline->setFollowLive(false);
  m_memory->refresh(true);
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
  QString filter;
  const QString path = QFileDialog::getSaveFileName(this, tr("Export timeline figure"), QStringLiteral("timeline.png"),
                                                    tr("PNG image (*.png);;SVG vector (*.svg);;PDF document (*.pdf)"),
                                                    &filter);
  if (path.isEmpty()) return;
  int width = 1600, height = 900;
  if (!askFigureSize(this, &width, &height)) return;
  QString error;
  if (!m_timeline->exportFigure(path, width, height, &error))
    QMessageBox::critical(this, tr("Cannot export figure"), error);
  else
    statusBar()->showMessage(tr("figure written to %1").arg(path), 6000);
}

void MainWindow::onRunStarted() {
  m_source = tr("live run");
  m_loss->setFromTrace(false);
  setWindowTitle(tr("ShardScope — live run"));
  m_banner->setVisible(false);
  m_timeline->setCursorTime(std::nullopt);
  m_memory->setCursorTime(std::nullopt);
  m_timeline->setFollowLive(true);
  m_progress->setRange(0, m_bridge->config().steps);
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
  updateStatus();
}

void MainWindow::onRunFinished(bool ok, const QString& message) {
  m_elapsedTimer->stop();
  m_panel->setRunning(false);
  refreshViews();
  m_memory->refresh(true);
  if (ok)
    statusBar()->showMessage(message, 8000);
  else
    showBanner(message, true);
  updateActions();
  updateStatus();
  emit runFinished(ok, message);
}

void MainWindow::refreshViews() {
  m_timeline->refresh();
  m_memory->refresh();
  m_loss->refresh();
  updateActions();
  updateStatus();
}

void MainWindow::showBanner(const QString& text, bool error) {
  m_banner->setStyleSheet(error ? QStringLiteral("QLabel { background: #FDECEE; color: #8A0018; border-bottom: 1px solid #F2B8BF; padding: 6px 10px; }")
                                : QStringLiteral("QLabel { background: #EAF3FB; color: #0B3C5D; border-bottom: 1px solid #B9D6EE; padding: 6px 10px; }"));
  m_banner->setText((error ? tr("<b>Run stopped:</b> ") : QString()) + text.toHtmlEscaped());
  m_banner->setVisible(!text.isEmpty());
}

QString MainWindow::bannerText() const { return m_banner->isVisible() ? m_banner->text() : QString(); }

void MainWindow::updateActions() {
  const bool running = m_bridge->isRunning();
  m_runAction->setEnabled(!running && m_panel->isValid());
  m_stopAction->setEnabled(running);
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
    m_clockLabel->setToolTip(tr("Times are this machine's steady clock"));
  }
  const auto& losses = m_store.losses();
  const bool live = m_bridge->hasRun() && m_source == tr("live run");
  m_stepLabel->setText(live ? tr("step %1 / %2").arg(losses.size()).arg(m_bridge->config().steps) : tr("step –"));
  m_lossLabel->setText(losses.empty() ? tr("loss –") : tr("loss %1").arg(losses.back(), 0, 'f', 4));
  m_elapsedLabel->setText(live ? tr("%1 s").arg(m_bridge->elapsedSeconds(), 0, 'f', 1)
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
