// The window's files: open a trace into the Inspection, export the shown run
// as a trace, open and save experiment (preset) files in the experiment form;
// each with its dialog for the File menu.
#pragma once

#include <QObject>
#include <QString>
#include <memory>

#include "input/input_detect.h"

class QMainWindow;

namespace shardscope {

class EngineBridge;
class ExperimentPanel;
class Inspection;
struct RunTrace;
struct FlightRecorderSet;
namespace kineto {
struct JobAnalysis;
}

class RunFiles : public QObject {
  Q_OBJECT
 public:
  RunFiles(Inspection* inspection, EngineBridge* bridge, ExperimentPanel* panel, QMainWindow* window);

  // Opens a file by what core's detectInput finds in it (input/input_detect.h):
  // a trace written by shardscope, a PyTorch profiler job (a folder of
  // per-rank Kineto traces, or one .json / .json.gz), a memory snapshot, the
  // profiler's memory timeline or flight-recorder dumps; false with the
  // reason (an unknown file) or the reader's message. A ShardScope trace puts
  // its experiment in the form (from its recorded flags). Any exception from
  // reading the file or from building the views' models (std::bad_alloc
  // included) becomes *error: opening a file never aborts. A trace without
  // events opens (nothing to draw) and says why in a non-modal dialog (notice()).
  bool openTrace(const QString& path, QString* error);
  // Flight-recorder dumps (a folder, or several dump files): read and handed
  // to the ladder page (flightRecorderOpened); the run on screen stays.
  bool openFlightRecorder(const QStringList& paths, QString* error);
  // The one dispatch (openTrace is it for one path): several files open
  // together as memory snapshots or flight-recorder dumps, one per rank.
  bool openFiles(const QStringList& paths, QString* error);
  // The last such explanation ("" when the last trace had events).
  const QString& notice() const { return m_notice; }
  bool exportTrace(const QString& path, QString* error);
  // An experiment file is a preset file: the form's config (or its active
  // preset's runs) as CLI flags. False with the message on error.
  bool saveExperiment(const QString& path, QString* error);
  bool openExperiment(const QString& path, QString* error);

  // The File menu's dialogs.
  void askOpenTrace();
  void askOpenTraceFolder();  // a PyTorch job: a folder of per-rank Kineto traces
  void askOpenFlightRecorder();  // dump files (several: one per rank)
  void askExportTrace();
  void askOpenExperiment();
  void askSaveExperiment();

 signals:
  void traceOpened();  // after the trace's run is on screen
  void flightRecorderOpened(std::shared_ptr<const FlightRecorderSet> set);
  // A trace, job folder or experiment file opened without error (File > Recent files).
  void fileOpened(const QString& path, bool experiment);

 private:
  // A ShardScope trace or a profiler job, read and shown.
  bool openRunTrace(const QString& path, InputKind kind, QString* error);
  // After a snapshot or a memory timeline is on screen: status (%1: the source) and signals.
  bool shown(const QStringList& paths, const QString& status);
  // store, form and pages; may throw. hta: an imported job's analyses.
  void showTrace(const QString& path, RunTrace trace, std::shared_ptr<const kineto::JobAnalysis> hta = nullptr);

  Inspection* m_inspection;
  EngineBridge* m_bridge;
  ExperimentPanel* m_panel;
  QMainWindow* m_window;
  QString m_notice;
};

}  // namespace shardscope
