// ShardScope's main window: the experiment form (left), the timeline (centre),
// the memory ledger (right) and loss (bottom) as dock widgets the user can
// rearrange; a live run or an opened trace feeds one EventStore that every
// view reads. Run errors appear once, in a banner above the timeline.
#pragma once

#include <QMainWindow>
#include <QString>

#include "event_store.h"

class QAction;
class QLabel;
class QProgressBar;
class QTimer;

namespace shardscope {

class EngineBridge;
class ExperimentPanel;
class LossView;
class MemoryView;
class TimelineView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Loads a trace written by shardscope; false with the reader's message on error.
  bool openTrace(const QString& path, QString* error);
  // Starts the experiment panel's config; false with validate()'s message on error.
  bool startRun(QString* error);
  bool exportTrace(const QString& path, QString* error);
  // Off for tests and --screenshot: nothing read from or written to QSettings.
  void setPersistSettings(bool persist) { m_persist = persist; }

  EventStore& store() { return m_store; }
  EngineBridge* bridge() const { return m_bridge; }
  ExperimentPanel* experimentPanel() const { return m_panel; }
  TimelineView* timeline() const { return m_timeline; }
  MemoryView* memoryView() const { return m_memory; }
  LossView* lossView() const { return m_loss; }
  QString bannerText() const;

 signals:
  void runFinished(bool ok, const QString& message);

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
  void refreshViews();

  void onOpenTrace();
  void onExportTrace();
  void onExportFigure();
  void onRunStarted();
  void onRunFinished(bool ok, const QString& message);
  void onProgress(int steps_done, int steps, double loss);

  EventStore m_store;
  EngineBridge* m_bridge;
  ExperimentPanel* m_panel = nullptr;
  TimelineView* m_timeline = nullptr;
  MemoryView* m_memory = nullptr;
  LossView* m_loss = nullptr;
  QLabel* m_banner = nullptr;

  QAction* m_runAction = nullptr;
  QAction* m_stopAction = nullptr;
  QAction* m_fitAction = nullptr;
  QAction* m_stepsAction = nullptr;
  QAction* m_exportTraceAction = nullptr;
  QAction* m_exportFigureAction = nullptr;

  QLabel* m_sourceLabel = nullptr;
  QLabel* m_stepLabel = nullptr;
  QLabel* m_lossLabel = nullptr;
  QLabel* m_elapsedLabel = nullptr;
  QLabel* m_clockLabel = nullptr;
  QProgressBar* m_progress = nullptr;
  QTimer* m_elapsedTimer = nullptr;

  QString m_source;  // "live run" or the opened file's name
  QByteArray m_defaultState;
  bool m_persist = true;
};

}  // namespace shardscope
