// ShardScope's main window: the experiment form with its preset picker
// (left), the timeline (centre), the memory, buckets, units and
// communication pages and the step walkthrough (right), loss and the Runs
// table (bottom), as dock widgets the user can rearrange. Every page looks at
// one Inspection (the run's events, the run on screen, the shared cursor and
// selection); a live run or an opened trace feeds it. A preset's runs go one
// after another (PresetRunner); each lands in the Runs table and can be
// brought back. Run errors appear once, in a banner above the timeline. On
// first start (no saved layout) the lessons' start page covers the docks.
#pragma once

#include <QHash>
#include <QList>
#include <QMainWindow>
#include <QString>
#include <QStringList>
#include <optional>

#include "figure_export.h"
#include "inspection.h"
#include "page_registry.h"
#include "preset.h"

class QAction;
class QScreen;
class QDockWidget;
class QTableView;

namespace shardscope {

class BucketsPage;
class CapacityPage;
class BucketsView;
class CommPage;
class CommView;
class CompareController;
class EngineBridge;
struct AttachRequest;
class ExperimentPanel;
class LossPage;
class LossView;
class MemoryPage;
class MemoryView;
class PresetRunner;
class RunBanner;
class RecentFiles;
class RunFiles;
class RunHistoryModel;
class RunStatus;
class SteppingControls;
class StartPage;
class StepWalkthrough;
class UserGuideDialog;
class TimelinePage;
class TimelineView;
class UnitsPage;
class UnitsView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // File I/O (RunFiles): false with the message on error.
  bool openTrace(const QString& path, QString* error);
  // Several PyTorch memory snapshots, one per rank (one path: openTrace).
  bool openFiles(const QStringList& paths, QString* error);
  // Shows a run served elsewhere (run --serve), live, from its first step;
  // false with one clear message when nothing answers, the key is refused or
  // the flags are bad. server_key: for any address but 127.0.0.1.
  bool attachToRun(const QString& address, const QString& server_key, QString* error);
  bool saveExperiment(const QString& path, QString* error);
  bool openExperiment(const QString& path, QString* error);
  bool exportTrace(const QString& path, QString* error);
  // Starts the experiment panel's config (paused: every rank stops before its
  // first op); false with validate()'s message on error.
  bool startRun(QString* error, bool paused = false);
  // Runs every config of a preset, one after another (presetFinished at the
  // end); false with the message when the first cannot start. paused: the
  // first run starts paused.
  bool runPreset(const Preset& preset, QString* error, bool paused = false);
  // Writes one page's figure (view: one of presetViews()); the title names the
  // view and the moment, the subtitle the run's config. options: a slide, ranks collapsed.
  bool exportViewFigure(const QString& view, const QString& path, int width, int height, QString* error,
                        const FigureOptions& options = {});
  // The views Export figure offers now: those with something to draw (the
  // capacity calculator always; an opened snapshot with no run), the one in
  // the window's centre first.
  QStringList figureViews() const;
  QAction* exportFigureAction() const { return m_exportFigureAction; }
  // Why a view has nothing to draw for the run in the store ("" when it has).
  QString figureUnavailable(const QString& view) const;
  // Brings a view's dock (or the timeline) to the front.
  void showView(const QString& view);
  // The cursor every view shares (ns since run start); nullopt clears it.
  void setCursorTime(std::optional<int64_t> ns) { m_inspection.setCursor(ns); }
  std::optional<int64_t> cursorTime() const { return m_inspection.cursor(); }
  // Shows a run of the Runs table in every view; false if its trace was dropped.
  bool showHistoryRun(int row);
  // Compare mode: pins rows of the Runs table side by side (two or more);
  // false with the reason. unpinRuns() returns to one run.
  bool compareRuns(const QList<int>& rows, QString* error);
  void unpinRuns();
  CompareController* compare() const { return m_compare; }
  // Off for tests and --screenshot: nothing read from or written to QSettings.
  void setPersistSettings(bool persist);
  // Sizes the window to the screen's available area and centres it there (the
  // first start's size; a saved geometry replaces it).
  void fitToScreen(const QScreen* screen);
  RecentFiles* recentFiles() const { return m_recent; }

  // The lessons' start page (File > Lessons), laid over the docks below the
  // menu bar; it opens by itself on first start (no saved window state).
  void showStartPage();
  void hideStartPage();
  bool startPageShown() const;
  StartPage* startPage() const { return m_startPage; }
  // Runs a built-in preset as the start page's Run does: the form takes it,
  // its runs start, the page closes. False with the message on error.
  bool runLesson(const QString& preset, QString* error);
  // Help > User guide: docs/guide from the compiled-in resources.
  UserGuideDialog* showUserGuide();

  Inspection& inspection() { return m_inspection; }
  const PageRegistry& pages() const { return m_pages; }
  EventStore& store() { return m_inspection.store(); }
  EngineBridge* bridge() const { return m_bridge; }
  ExperimentPanel* experimentPanel() const { return m_panel; }
  TimelineView* timeline() const;
  MemoryView* memoryView() const;
  LossView* lossView() const;
  BucketsView* bucketsView() const;
  UnitsView* unitsView() const;
  CommView* commView() const;
  CapacityPage* capacityPage() const { return m_capacityPage; }
  StepWalkthrough* walkthrough() const { return m_walkthrough; }
  SteppingControls* stepping() const { return m_stepping; }
  RunHistoryModel* history() const { return m_history; }
  RunFiles* files() const { return m_files; }
  QTableView* runsTable() const { return m_historyView; }
  QString bannerText() const;
  bool presetRunning() const;

 signals:
  void runFinished(bool ok, const QString& message);
  // ok: every run went as the preset intends (a preset about a hang expects its error).
  void presetFinished(bool ok, const QString& message);

 protected:
  void closeEvent(QCloseEvent* event) override;
  void showEvent(QShowEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;  // the Runs table coming into view

 private:
  void createPages();
  void createDocks();    // main_window_layout.cpp
  void createActions();  // main_window_layout.cpp
  // The docks' default arrangement for a window of this size (main_window_layout.cpp).
  void arrangeDocks(QSize size);
  void askExportFigure();
  void askAttach();
  void restoreSettings();
  void saveSettings();
  void updateActions();
  void refreshAll(bool now);
  void requestRun(bool paused);
  bool startActive(bool paused, QString* error);  // the form's experiment or its preset's runs
  void placeStartPage();
  QString subtitle() const;
  QDockWidget* addPageDock(QWidget* widget, const QString& title, const QString& name, const QString& page,
                           Qt::DockWidgetArea area);

  void onRunShown();
  void onRunStarted();
  void onRunFinished(bool ok, const QString& message);
  void onGateStopped();
  void onPresetFinished(bool ok, const QString& message);
  void onRunsCleared();  // the loss view's "Clear runs": the Runs table's rows go too

  Inspection m_inspection;
  EngineBridge* m_bridge;
  PresetRunner* m_runner = nullptr;
  RunFiles* m_files = nullptr;
  RecentFiles* m_recent = nullptr;  // File > Recent files
  RunStatus* m_status = nullptr;
  PageRegistry m_pages;
  TimelinePage* m_timeline = nullptr;
  MemoryPage* m_memory = nullptr;
  LossPage* m_loss = nullptr;
  BucketsPage* m_buckets = nullptr;
  UnitsPage* m_units = nullptr;
  CommPage* m_comm = nullptr;
  CapacityPage* m_capacityPage = nullptr;  // calc in the window
  QHash<QString, QDockWidget*> m_docks;  // by page name, and "runs"
  ExperimentPanel* m_panel = nullptr;
  StepWalkthrough* m_walkthrough = nullptr;
  RunHistoryModel* m_history = nullptr;
  SteppingControls* m_stepping = nullptr;
  QTableView* m_historyView = nullptr;
  RunBanner* m_banner = nullptr;
  CompareController* m_compare = nullptr;
  StartPage* m_startPage = nullptr;
  UserGuideDialog* m_guide = nullptr;
  bool m_firstStart = false;      // no saved window state: the start page opens on the first show
  bool m_shownOnce = false;
  bool m_layoutFromSettings = false;  // a saved window state was restored: the user's arrangement stands
  QList<QDockWidget*> m_bottomDocks;  // Loss, Runs, Log and the imported job's pages, in tab order
  QDockWidget* m_experimentDock = nullptr;
  QDockWidget* m_walkthroughDock = nullptr;

  QAction* m_runAction = nullptr;
  QAction* m_stopAction = nullptr;
  QAction* m_detachAction = nullptr;
  QString m_lastAttachAddress, m_lastAttachKey;
  QAction* m_fitAction = nullptr;
  QAction* m_stepsAction = nullptr;
  QAction* m_zoomSelectionAction = nullptr;
  QAction* m_exportTraceAction = nullptr;
  QAction* m_openJobAction = nullptr;
  QAction* m_exportFigureAction = nullptr;

  QByteArray m_defaultState;
  bool m_persist = true;
};

}  // namespace shardscope
