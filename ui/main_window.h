// ShardScope's main window: the experiment form with its preset picker
// (left), the timeline (centre), the memory, buckets, units and
// communication pages and the step walkthrough (right), loss and the Runs
// table (bottom), as dock widgets the user can rearrange. A live run or an
// opened trace feeds one EventStore that every view reads, and one cursor
// time is shared by all of them. A preset's runs go one after another; each
// lands in the Runs table and can be brought back. Run errors appear once,
// in a banner above the timeline.
#pragma once

#include <QElapsedTimer>
#include <QMainWindow>
#include <QString>
#include <optional>

#include "inspect/event_store.h"
#include "preset.h"

class QAction;
class QDockWidget;
class QLabel;
class QProgressBar;
class QTableView;
class QTimer;

namespace shardscope {

class BucketsView;
class CommView;
class EngineBridge;
class ExperimentPanel;
class LossView;
class MemoryView;
class RunHistoryModel;
class SteppingControls;
class StepWalkthrough;
class TimelineView;
class UnitsView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Loads a trace written by shardscope; false with the reader's message on
  // error. The form then holds the trace's experiment (from its recorded flags).
  bool openTrace(const QString& path, QString* error);
  // An experiment file is a preset file: the form's config (or its active
  // preset's runs) as CLI flags. False with the message on error.
  bool saveExperiment(const QString& path, QString* error);
  bool openExperiment(const QString& path, QString* error);
  // Starts the experiment panel's config (paused: every rank stops before its
  // first op); false with validate()'s message on error.
  bool startRun(QString* error, bool paused = false);
  // Runs every config of a preset, one after another (presetFinished at the
  // end); false with the message when the first cannot start. paused: the
  // first run starts paused.
  bool runPreset(const Preset& preset, QString* error, bool paused = false);
  bool exportTrace(const QString& path, QString* error);
  // Writes one view's figure (view: one of presetViews()); the title names the
  // view and the moment, the subtitle the run's config.
  bool exportViewFigure(const QString& view, const QString& path, int width, int height, QString* error);
  // Why a view has nothing to draw for the run in the store ("" when it has).
  QString figureUnavailable(const QString& view) const;
  // Brings a view's dock (or the timeline) to the front.
  void showView(const QString& view);
  // The cursor every view shares (ns since run start); nullopt clears it.
  void setCursorTime(std::optional<int64_t> ns);
  std::optional<int64_t> cursorTime() const { return m_cursor; }
  // Shows a run of the Runs table in every view; false if its trace was dropped.
  bool showHistoryRun(int row);
  // Off for tests and --screenshot: nothing read from or written to QSettings.
  void setPersistSettings(bool persist) { m_persist = persist; }

  EventStore& store() { return m_store; }
  EngineBridge* bridge() const { return m_bridge; }
  ExperimentPanel* experimentPanel() const { return m_panel; }
  TimelineView* timeline() const { return m_timeline; }
  MemoryView* memoryView() const { return m_memory; }
  LossView* lossView() const { return m_loss; }
  BucketsView* bucketsView() const { return m_buckets; }
  UnitsView* unitsView() const { return m_units; }
  CommView* commView() const { return m_comm; }
  StepWalkthrough* walkthrough() const { return m_walkthrough; }
  SteppingControls* stepping() const { return m_stepping; }
  RunHistoryModel* history() const { return m_history; }
  QString bannerText() const;
  bool presetRunning() const { return m_preset.has_value(); }

 signals:
  void runFinished(bool ok, const QString& message);
  // ok: every run went as the preset intends (a preset about a hang expects its error).
  void presetFinished(bool ok, const QString& message);

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void createActions();
  void createDocks();
  void createStatusBar();
  void restoreSettings();
  void saveSettings();
  void updateActions();
  void updateStatus();
  void showBanner(const QString& text, bool error);
  void showInfoBanner(const QString& html);  // the gate's stop (rich text)
  void refreshViews();
  void refreshAllNow();
  bool startConfig(const RunConfig& config, const QString& label, QString* error, bool paused = false);
  void requestRun(bool paused);
  void startNextPresetRun();
  QString subtitle() const;
  QDockWidget* addViewDock(QWidget* view, const QString& title, const QString& name, Qt::DockWidgetArea area);

  void onOpenTrace();
  void onOpenExperiment();
  void onSaveExperiment();
  void onExportTrace();
  void onExportFigure();
  void onRunStarted();
  void onRunFinished(bool ok, const QString& message);
  void onProgress(int steps_done, int steps, double loss);
  void onGateStopped();

  EventStore m_store;
  EngineBridge* m_bridge;
  ExperimentPanel* m_panel = nullptr;
  TimelineView* m_timeline = nullptr;
  MemoryView* m_memory = nullptr;
  LossView* m_loss = nullptr;
  BucketsView* m_buckets = nullptr;
  UnitsView* m_units = nullptr;
  CommView* m_comm = nullptr;
  StepWalkthrough* m_walkthrough = nullptr;
  RunHistoryModel* m_history = nullptr;
  SteppingControls* m_stepping = nullptr;
  QTableView* m_historyView = nullptr;
  QLabel* m_banner = nullptr;
  QDockWidget* m_memoryDock = nullptr;
  QDockWidget* m_bucketsDock = nullptr;
  QDockWidget* m_unitsDock = nullptr;
  QDockWidget* m_commDock = nullptr;
  QDockWidget* m_lossDock = nullptr;
  QDockWidget* m_runsDock = nullptr;

  QAction* m_runAction = nullptr;
  QAction* m_stopAction = nullptr;
  QAction* m_fitAction = nullptr;
  QAction* m_stepsAction = nullptr;
  QAction* m_zoomSelectionAction = nullptr;
  QAction* m_exportTraceAction = nullptr;
  QAction* m_exportFigureAction = nullptr;

  QLabel* m_sourceLabel = nullptr;
  QLabel* m_stepLabel = nullptr;
  QLabel* m_lossLabel = nullptr;
  QLabel* m_elapsedLabel = nullptr;
  QLabel* m_backendLabel = nullptr;
  QLabel* m_clockLabel = nullptr;
  QProgressBar* m_progress = nullptr;
  QTimer* m_elapsedTimer = nullptr;

  QString m_source;  // "live run", the opened file's name, or a Runs table row
  QString m_runLabel;                    // the run in the store ("zero3 · 8 ranks")
  QString m_shownPreset;                 // the preset it belongs to, or ""
  QString m_shownRunOf;                  // "run 2 of 3", or ""
  std::optional<RunConfig> m_shownConfig;  // its config, when it was run here
  std::optional<Preset> m_preset;        // the preset whose runs are going
  size_t m_presetIndex = 0;              // its run in progress
  bool m_presetOk = true;
  QString m_presetMessage;
  std::optional<int64_t> m_cursor;
  bool m_fromBridge = false;  // the store holds the bridge's (live or last) run
  QElapsedTimer m_commClock;  // throttles the communication page while live
  QByteArray m_defaultState;
  bool m_persist = true;
  bool m_bannerIsGate = false;  // the banner describes the current stop
};

}  // namespace shardscope
