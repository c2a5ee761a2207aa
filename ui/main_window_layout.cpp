// The window's furniture: its docks (pages, form, walkthrough, Runs table),
// menus, toolbar and the figure export dialog.
#include "main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QStyle>
#include <QTableView>
#include <QToolBar>
#include <QVBoxLayout>
#include <algorithm>

#include "compare_controller.h"
#include "engine_bridge.h"
#include "experiment_panel.h"
#include "log_dock.h"
#include "palette.h"
#include "recent_files.h"
#include "shortcuts_dialog.h"
#include "run_files.h"
#include "run_history_model.h"
#include "step_walkthrough.h"
#include "stepping_controls.h"
#include "theme.h"
#include "timeline_view.h"
#include "trace_diff_page.h"
#include "view_pages.h"

namespace shardscope {

namespace {

// Asks for the view and the figure's size in pixels (PDF: points at the same numbers).
bool askFigure(QWidget* parent, const QStringList& offered, QString* view, int* width, int* height, bool* slide) {
  QDialog dialog(parent);
  dialog.setWindowTitle(QObject::tr("Export figure"));
  auto* form = new QFormLayout(&dialog);
  auto* views = new QComboBox(&dialog);
  views->addItems(offered);
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
  auto* slide_box = new QCheckBox(QObject::tr("Slide (presentation)"), &dialog);
  slide_box->setObjectName(QStringLiteral("slideFigure"));
  slide_box->setChecked(*slide);
  slide_box->setToolTip(QObject::tr("Text of at least 18 px at 1920 × 1080 (scaled with the size), thicker lines, "
                                    "no cursor: for a projector"));
  // A slide is 1920 × 1080 unless the size was changed by hand.
  QObject::connect(slide_box, &QCheckBox::toggled, &dialog, [w, h](bool on) {
    if (on && w->value() == 1600 && h->value() == 900) {
      w->setValue(1920);
      h->setValue(1080);
    }
  });
  form->addRow(QString(), slide_box);
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
  *slide = slide_box->isChecked();
  return true;
}

}  // namespace

QDockWidget* MainWindow::addPageDock(QWidget* widget, const QString& title, const QString& name, const QString& page,
                                     Qt::DockWidgetArea area) {
  auto* dock = new QDockWidget(title, this);
  dock->setObjectName(name);
  dock->setWidget(widget);
  addDockWidget(area, dock);
  if (!page.isEmpty()) m_docks.insert(page, dock);
  return dock;
}

void MainWindow::createDocks() {
  m_panel = new ExperimentPanel(this);
  // The form outgrows short screens: it scrolls, with Run and Stop below it,
  // always in view. The dock is never narrower than the form (no field or
  // label cut), with room for the scroll bar.
  auto* form_box = new QWidget(this);
  auto* form_layout = new QVBoxLayout(form_box);
  form_layout->setContentsMargins(0, 0, 0, 0);
  form_layout->setSpacing(0);
  auto* scroll = new QScrollArea(form_box);
  scroll->setObjectName(QStringLiteral("experimentScroll"));
  scroll->setWidget(m_panel);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  form_layout->addWidget(scroll, 1);
  form_layout->addWidget(m_panel->buttonBar());
  scroll->setMinimumWidth(m_panel->minimumSizeHint().width() + scroll->verticalScrollBar()->sizeHint().width());
  QDockWidget* experiment =
      addPageDock(form_box, tr("Experiment"), QStringLiteral("experimentDock"), {}, Qt::LeftDockWidgetArea);

  // Right: the pages that explain a step, tabbed; the walkthrough below them.
  auto* walk_scroll = new QScrollArea(this);
  walk_scroll->setWidget(m_walkthrough);
  walk_scroll->setWidgetResizable(true);
  walk_scroll->setFrameShape(QFrame::NoFrame);
  const auto pageDock = [this](Page* page, const char* name, Qt::DockWidgetArea area) {
    return addPageDock(page->widget(), page->title(), QString::fromLatin1(name), page->name(), area);
  };
  QDockWidget* memory = pageDock(m_memory, "memoryDock", Qt::RightDockWidgetArea);
  // Docks added to one area stack vertically: the walkthrough sits under the tabs.
  QDockWidget* walkthrough =
      addPageDock(walk_scroll, tr("Step walkthrough"), QStringLiteral("walkthroughDock"), {}, Qt::RightDockWidgetArea);
  QDockWidget* buckets = pageDock(m_buckets, "bucketsDock", Qt::RightDockWidgetArea);
  QDockWidget* units = pageDock(m_units, "unitsDock", Qt::RightDockWidgetArea);
  QDockWidget* comm = pageDock(m_comm, "commDock", Qt::RightDockWidgetArea);
  QDockWidget* stragglers = pageDock(m_pages.find(QStringLiteral("stragglers")), "stragglersDock", Qt::RightDockWidgetArea);
  tabifyDockWidget(memory, buckets);
  tabifyDockWidget(buckets, units);
  QDockWidget* pipeline = pageDock(m_pages.find(QStringLiteral("pipeline")), "pipelineDock", Qt::RightDockWidgetArea);
  tabifyDockWidget(units, comm);
  tabifyDockWidget(comm, pipeline);
  tabifyDockWidget(pipeline, stragglers);
  tabifyDockWidget(stragglers, pageDock(m_pages.find(QStringLiteral("ladder")), "ladderDock", Qt::RightDockWidgetArea));
  memory->raise();

  // Bottom: loss curves and the Runs table.
  QDockWidget* loss = pageDock(m_loss, "lossDock", Qt::BottomDockWidgetArea);
  m_history = new RunHistoryModel(this);
  m_historyView = new QTableView(this);
  m_historyView->setObjectName(QStringLiteral("runsTable"));
  m_historyView->setModel(m_history);
  m_historyView->setAlternatingRowColors(true);
  m_historyView->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_historyView->setSelectionMode(QAbstractItemView::ExtendedSelection);  // two or more: compare them
  m_historyView->verticalHeader()->setVisible(false);
  m_historyView->verticalHeader()->setDefaultSectionSize(m_historyView->fontMetrics().height() + 6);
  // Columns fit their contents whenever rows arrive or the table comes into
  // view (a hidden tab measures no rows: ResizeToContents cut run names to
  // "d…"); the user may still drag them.
  m_historyView->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  m_historyView->horizontalHeader()->setStretchLastSection(true);
  const auto fitColumns = [this] {
    if (m_historyView->isVisible()) m_historyView->resizeColumnsToContents();
  };
  connect(m_history, &QAbstractItemModel::rowsInserted, m_historyView, fitColumns, Qt::QueuedConnection);
  connect(m_history, &QAbstractItemModel::modelReset, m_historyView, fitColumns, Qt::QueuedConnection);
  m_historyView->installEventFilter(this);
  m_historyView->setToolTip(tr("Every run of this session; double-click one to show it in every view. Select two "
                               "(Ctrl+click) for their difference in the status bar, two or more and Ctrl+K to "
                               "compare them side by side"));
  connect(m_historyView, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    if (!showHistoryRun(index.row()))
      statusBar()->showMessage(tr("run %1's trace was dropped to save memory (only the last %2 are kept)")
                                   .arg(index.row() + 1)
                                   .arg(RunHistoryModel::kKeptTraces),
                               6000);
  });
  QDockWidget* runs = addPageDock(m_historyView, tr("Runs"), QStringLiteral("runsDock"), QStringLiteral("runs"),
                                  Qt::BottomDockWidgetArea);
  tabifyDockWidget(loss, runs);
  tabifyDockWidget(runs, addPageDock(new LogDock(this), tr("Log"), QStringLiteral("logDock"), {},
                                     Qt::BottomDockWidgetArea));
  // An imported job's critical path (bars per rank over a table of segments): wide, so at the bottom.
  Page* path = m_pages.find(QStringLiteral("critical-path"));
  tabifyDockWidget(runs, addPageDock(path->widget(), path->title(), QStringLiteral("criticalPathDock"), path->name(),
                                     Qt::BottomDockWidgetArea));
  // An imported job's HTA tables (idle time, queue length, kernels, launch delay): wide, so at the bottom.
  Page* hta = m_pages.find(QStringLiteral("hta"));
  tabifyDockWidget(runs, addPageDock(hta->widget(), hta->title(), QStringLiteral("htaDock"), hta->name(), Qt::BottomDockWidgetArea));
  // Two jobs compared op by op and kernel by kernel: a wide table, beside HTA's.
  Page* diff = m_pages.find(QStringLiteral("diff"));
  tabifyDockWidget(runs, addPageDock(diff->widget(), diff->title(), QStringLiteral("traceDiffDock"), diff->name(),
                                     Qt::BottomDockWidgetArea));
  loss->raise();
  m_experimentDock = experiment;
  m_walkthroughDock = walkthrough;
  for (const char* name : {"lossDock", "runsDock", "logDock", "criticalPathDock", "htaDock", "traceDiffDock"})
    m_bottomDocks << findChild<QDockWidget*>(QString::fromLatin1(name));
  arrangeDocks({1600, 900});
}

void MainWindow::arrangeDocks(QSize size) {
  QDockWidget* memory = m_docks.value(QStringLiteral("memory"));
  QDockWidget* loss = m_bottomDocks.front();
  // A projector's 1280×720 left the timeline about 310×200 px between the
  // form, a 520-px column of pages and 250 px of loss curves below it. There
  // the bottom docks become tabs beside the pages (stacked under them, their
  // minimum heights made the window taller than the screen) and the column
  // narrows: the timeline gets the window's height and the most width.
  const bool small = size.width() < 1600 || size.height() < 900;
  const Qt::DockWidgetArea area = small ? Qt::RightDockWidgetArea : Qt::BottomDockWidgetArea;
  if (dockWidgetArea(loss) != area) {
    QDockWidget* raised = nullptr;  // the page tab in front stays in front
    QList<QDockWidget*> pages = tabifiedDockWidgets(memory);
    pages << memory;
    for (QDockWidget* tab : pages)
      if (!tab->visibleRegion().isEmpty()) raised = tab;
    QDockWidget* last_page = m_docks.value(QStringLiteral("capacity"), memory);
    QDockWidget* previous = small ? last_page : nullptr;
    for (QDockWidget* dock : m_bottomDocks) {
      const bool was_visible = !dock->isHidden();
      addDockWidget(area, dock);  // moves it
      if (previous) tabifyDockWidget(previous, dock);
      previous = dock;
      dock->setVisible(was_visible);
    }
    if (!small) loss->raise();
    (raised ? raised : memory)->raise();
  }
  if (small) {
    resizeDocks({m_experimentDock, memory}, {300, std::clamp(size.width() / 3, 360, 440)}, Qt::Horizontal);
    resizeDocks({memory, m_walkthroughDock}, {size.height() * 65 / 100, size.height() * 20 / 100}, Qt::Vertical);
  } else {
    resizeDocks({m_experimentDock, memory}, {300, 520}, Qt::Horizontal);
    resizeDocks({memory, m_walkthroughDock}, {560, 300}, Qt::Vertical);
    resizeDocks({loss}, {250}, Qt::Vertical);
  }
}

void MainWindow::createActions() {
  QStyle* s = style();
  auto* open = new QAction(s->standardIcon(QStyle::SP_DialogOpenButton), tr("&Open trace…"), this);
  open->setShortcut(QKeySequence::Open);
  open->setToolTip(tr("Open a trace written by shardscope, or one rank's PyTorch profiler trace (.json, .json.gz)"));
  connect(open, &QAction::triggered, m_files, &RunFiles::askOpenTrace);
  m_openJobAction = new QAction(tr("Open PyTorch &job folder…"), this);
  m_openJobAction->setToolTip(tr("Open a folder of per-rank PyTorch profiler (Kineto) traces"));
  connect(m_openJobAction, &QAction::triggered, m_files, &RunFiles::askOpenTraceFolder);
  auto* open_dumps = new QAction(tr("Open flight-recorder &dumps…"), this);
  open_dumps->setObjectName(QStringLiteral("openDumpsAction"));
  open_dumps->setToolTip(tr("Open PyTorch flight-recorder dumps (one file per rank) as a collective ladder; "
                            "Open trace opens their folder too"));
  connect(open_dumps, &QAction::triggered, m_files, &RunFiles::askOpenFlightRecorder);
  auto* compare_jobs = new QAction(tr("&Compare PyTorch jobs…"), this);
  compare_jobs->setObjectName(QStringLiteral("compareJobsAction"));
  compare_jobs->setToolTip(tr("Compare two PyTorch profiler jobs (a folder of per-rank traces each) op by op and "
                              "kernel by kernel, per profiled step: shardscope-cli analyze --diff"));
  connect(compare_jobs, &QAction::triggered, this, [this] {
    const QString control = QFileDialog::getExistingDirectory(this, tr("CONTROL: the job to compare against"));
    if (control.isEmpty()) return;
    const QString test = QFileDialog::getExistingDirectory(this, tr("TEST: the job compared with %1").arg(control));
    if (test.isEmpty()) return;
    QString error;
    auto* page = static_cast<TraceDiffPage*>(m_pages.find(QStringLiteral("diff")));
    if (!page->openJobs(control, test, &error)) {
      QMessageBox::critical(this, tr("Cannot compare the jobs"), error);
      return;
    }
    showView(page->name());
  });
  m_exportTraceAction = new QAction(s->standardIcon(QStyle::SP_DialogSaveButton), tr("Export &trace…"), this);
  m_exportTraceAction->setShortcut(QKeySequence(tr("Ctrl+Shift+S")));
  connect(m_exportTraceAction, &QAction::triggered, m_files, &RunFiles::askExportTrace);
  m_exportFigureAction = new QAction(tr("Export &figure…"), this);
  m_exportFigureAction->setShortcut(QKeySequence(tr("Ctrl+E")));
  m_exportFigureAction->setToolTip(tr("Save a view as a PNG, SVG or PDF teaching figure"));
  connect(m_exportFigureAction, &QAction::triggered, this, &MainWindow::askExportFigure);
  auto* open_experiment = new QAction(tr("Open e&xperiment…"), this);
  open_experiment->setShortcut(QKeySequence(tr("Ctrl+Shift+O")));
  open_experiment->setToolTip(tr("Load an experiment or preset file (JSON) into the form"));
  connect(open_experiment, &QAction::triggered, m_files, &RunFiles::askOpenExperiment);
  auto* save_experiment = new QAction(tr("&Save experiment…"), this);
  save_experiment->setShortcut(QKeySequence::Save);
  save_experiment->setToolTip(tr("Save the form's experiment (or its preset's runs) as JSON"));
  connect(save_experiment, &QAction::triggered, m_files, &RunFiles::askSaveExperiment);
  auto* attach = new QAction(tr("&Attach to run…"), this);
  attach->setToolTip(tr("Show a run served elsewhere (shardscope-cli run … --serve ADDR), live from its first step"));
  connect(attach, &QAction::triggered, this, &MainWindow::askAttach);
  m_detachAction = new QAction(tr("&Detach"), this);
  m_detachAction->setToolTip(tr("Stop showing the attached run; it goes on where it is served"));
  connect(m_detachAction, &QAction::triggered, m_bridge, &EngineBridge::detach);
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
  connect(m_fitAction, &QAction::triggered, timeline(), &TimelineView::zoomToFit);
  m_zoomSelectionAction = new QAction(tr("Zoom to se&lection"), this);
  m_zoomSelectionAction->setShortcut(QKeySequence(Qt::Key_Z));
  m_zoomSelectionAction->setToolTip(tr("Show the time range selected with Shift+drag on the timeline (Z)"));
  m_zoomSelectionAction->setEnabled(false);
  connect(m_zoomSelectionAction, &QAction::triggered, timeline(), &TimelineView::zoomToSelection);
  m_stepsAction = new QAction(tr("Zoom to &steps"), this);
  m_stepsAction->setShortcut(QKeySequence(tr("Shift+F")));
  m_stepsAction->setToolTip(tr("Show the training steps without the setup (Shift+F)"));
  connect(m_stepsAction, &QAction::triggered, timeline(), &TimelineView::zoomToSteps);

  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* lessons = file->addAction(tr("&Lessons"), this, &MainWindow::showStartPage);
  lessons->setObjectName(QStringLiteral("lessonsAction"));
  lessons->setToolTip(tr("The shipped lessons in teaching order, each with its question and a Run button"));
  file->addSeparator();
  file->addAction(open_experiment);
  file->addAction(save_experiment);
  file->addSeparator();
  file->addAction(open);
  file->addAction(m_openJobAction);
  file->addAction(open_dumps);
  file->addAction(compare_jobs);
  m_recent = new RecentFiles(
      file->addMenu(tr("Recent &files")),
      [this](RecentFiles::Kind kind, const QString& path, QString* error) {
        return kind == RecentFiles::Kind::Experiment ? m_files->openExperiment(path, error) : m_files->openTrace(path, error);
      },
      this);
  m_recent->menu()->setObjectName(QStringLiteral("recentFilesMenu"));
  m_recent->setPersist(m_persist);
  connect(m_files, &RunFiles::fileOpened, m_recent, [this](const QString& path, bool experiment) {
    m_recent->add(experiment                  ? RecentFiles::Kind::Experiment
                  : QFileInfo(path).isDir() ? RecentFiles::Kind::Job
                                            : RecentFiles::Kind::Trace,
                  path);
  });
  connect(m_recent, &RecentFiles::message, this, [this](const QString& text) { statusBar()->showMessage(text, 10000); });
  file->addAction(attach);
  file->addAction(m_detachAction);
  file->addAction(m_exportTraceAction);
  file->addAction(m_exportFigureAction);
  file->addSeparator();
  file->addAction(quit);
  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run->addAction(m_runAction);
  run->addAction(m_stopAction);
  run->addSeparator();
  run->addAction(m_compare->pinAction());
  run->addAction(m_compare->unpinAction());
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
  QAction* shortcuts = help->addAction(tr("&Keyboard shortcuts"), this, [this] { showShortcutsDialog(this); });
  shortcuts->setObjectName(QStringLiteral("shortcutsAction"));
  shortcuts->setShortcut(QKeySequence(tr("Ctrl+/")));
  QAction* guide = help->addAction(tr("&User guide"), this, &MainWindow::showUserGuide);
  guide->setObjectName(QStringLiteral("userGuideAction"));
  guide->setShortcut(QKeySequence::HelpContents);
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

void MainWindow::askExportFigure() {
  const QStringList offered = figureViews();
  if (offered.isEmpty()) return;
  QString view = offered.front();
  int width = 1600, height = 900;
  FigureOptions options;
  if (!askFigure(this, offered, &view, &width, &height, &options.slide)) return;
  const QString path = QFileDialog::getSaveFileName(this, tr("Export %1 figure").arg(view), view + QStringLiteral(".png"),
                                                    tr("PNG image (*.png);;SVG vector (*.svg);;PDF document (*.pdf)"));
  if (path.isEmpty()) return;
  QString error;
  if (!exportViewFigure(view, path, width, height, &error, options))
    QMessageBox::critical(this, tr("Cannot export figure"), error);
  else
    statusBar()->showMessage(tr("figure written to %1").arg(path), 6000);
}

}  // namespace shardscope
