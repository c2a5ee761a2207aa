// The window's files: open a trace into the Inspection, export the shown run
// as a trace, open and save experiment (preset) files in the experiment form;
// each with its dialog for the File menu.
#pragma once

#include <QObject>
#include <QString>
#include <memory>

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

  // Loads a trace written by shardscope, or a PyTorch profiler job (a folder
  // of per-rank Kineto traces, or one .json / .json.gz: kineto::isKinetoTraceInput); false with the reader's message on
  // error. The form then holds the trace's experiment (from its recorded flags).
  // Any exception from reading the file or from building the views' models
  // (std::bad_alloc included) becomes *error: opening a trace never aborts.
  // A trace without events opens (nothing to draw) and says why in a
  // non-modal dialog (notice()).
  bool openTrace(const QString& path, QString* error);
  // Flight-recorder dumps (a folder, or several dump files): read and handed
  // to the ladder page (flightRecorderOpened); the run on screen stays.
  bool openFlightRecorder(const QStringList& paths, QString* error);
  // Several files at once: PyTorch memory snapshots, one per rank (snapshot_import.h);
  // one path is openTrace's (a snapshot is recognised by its content there too).
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
  // store, form and pages; may throw. hta: an imported job's analyses.
  void showTrace(const QString& path, RunTrace trace, std::shared_ptr<const kineto::JobAnalysis> hta = nullptr);

  Inspection* m_inspection;
  EngineBridge* m_bridge;
  ExperimentPanel* m_panel;
  QMainWindow* m_window;
  QString m_notice;
};

}  // namespace shardscope
