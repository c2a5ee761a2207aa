#include "run_files.h"

#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QMainWindow>
#include <QMessageBox>
#include <QStatusBar>
#include <new>
#include <optional>
#include <vector>

#include "engine_bridge.h"
#include "experiment_panel.h"
#include "flight_recorder_import.h"
#include "input/input_detect.h"
#include "inspection.h"
#include "preset.h"
#include "preset_runner.h"
#include "trace/chrome_trace_writer.h"
#include "memory_timeline_import.h"
#include "snapshot_import.h"
#include "trace_import.h"

namespace shardscope {

RunFiles::RunFiles(Inspection* inspection, EngineBridge* bridge, ExperimentPanel* panel, QMainWindow* window)
    : QObject(window), m_inspection(inspection), m_bridge(bridge), m_panel(panel), m_window(window) {}

bool RunFiles::openTrace(const QString& path, QString* error) { return openFiles({path}, error); }

namespace {

bool isFlightRecorderKind(InputKind kind) {
  return kind == InputKind::FlightRecorderDump || kind == InputKind::FlightRecorderFolder;
}

QString kindText(InputKind kind) { return QString::fromUtf8(inputKindText(kind).data(), int(inputKindText(kind).size())); }

// The kind every path holds, or nullopt with *error: an unknown file (core's
// reason), or several files that are not one rank each of one kind.
std::optional<InputKind> kindOfAll(const QStringList& paths, QString* error) {
  std::vector<InputKind> kinds;
  for (const QString& path : paths) {
    const DetectedInput input = detectInput(path.toStdString());
    if (input.kind == InputKind::Unknown) {
      if (error) *error = QString::fromStdString(input.reason);
      return std::nullopt;
    }
    kinds.push_back(input.kind);
  }
  const InputKind first = kinds.front();
  const auto refuse = [error](const QString& what) {
    if (error)
      *error = what + QObject::tr("; several files open together only as memory snapshots or as flight-recorder "
                                  "dumps, one per rank, all of one kind");
    return std::nullopt;
  };
  if (kinds.size() > 1 && first != InputKind::MemorySnapshot && !isFlightRecorderKind(first))
    return refuse(QObject::tr("%1 is %2").arg(paths.front(), kindText(first)));
  for (size_t i = 1; i < kinds.size(); ++i)
    if (kinds[i] != first && !(isFlightRecorderKind(kinds[i]) && isFlightRecorderKind(first)))
      return refuse(QObject::tr("%1 is not %2 (it is %3)").arg(paths[int(i)], kindText(first), kindText(kinds[i])));
  return first;
}

}  // namespace

bool RunFiles::openFiles(const QStringList& paths, QString* error) {
  if (paths.isEmpty()) {
    if (error) *error = tr("no file given");
    return false;
  }
  // One door: core's detectInput says what each file holds, and its kind picks the reader and the view.
  const std::optional<InputKind> kind = kindOfAll(paths, error);
  if (!kind) return false;
  // The ladder page's dumps leave the run on screen alone: they open while a run goes on.
  if (!isFlightRecorderKind(*kind) && m_bridge->isRunning()) {
    if (error) *error = tr("a run is in progress; stop it (Ctrl+.) before opening %1").arg(paths.join(QStringLiteral(", ")));
    return false;
  }
  QWidget* const parent = m_window->isVisible() ? m_window : nullptr;
  switch (*kind) {
    case InputKind::FlightRecorderDump:
    case InputKind::FlightRecorderFolder:
      return openFlightRecorder(paths, error);
    case InputKind::MemorySnapshot:
      if (!showMemorySnapshots(*m_inspection, paths, parent, error)) return false;
      return shown(paths, tr("%1: PyTorch memory snapshot — click its chart for the ledger at any entry"));
    case InputKind::MemoryTimeline:
      // The profiler's memory timeline is not a trace: its page draws it (memory_timeline_page.h).
      if (!showMemoryTimeline(*m_inspection, paths.front(), parent, error)) return false;
      return shown(paths, tr("%1: PyTorch profiler memory timeline — bytes by category over time"));
    case InputKind::KinetoTrace:
    case InputKind::KinetoFolder:
    case InputKind::ShardScopeTrace:
      return openRunTrace(paths.front(), *kind, error);
    case InputKind::Unknown:
      break;  // kindOfAll named it
  }
  return false;
}

bool RunFiles::shown(const QStringList& paths, const QString& status) {
  m_notice.clear();
  m_window->statusBar()->showMessage(status.arg(m_inspection->run().source), 10000);
  emit traceOpened();
  for (const QString& p : paths) emit fileOpened(p, false);
  return true;
}

bool RunFiles::openRunTrace(const QString& path, InputKind kind, QString* error) {
  // Both read off the GUI thread through the one import harness (file_import.h).
  QWidget* const parent = m_window->isVisible() ? m_window : nullptr;
  std::shared_ptr<const kineto::JobAnalysis> hta;
  std::optional<RunTrace> trace = kind == InputKind::ShardScopeTrace ? importShardScopeTrace(path, parent, error)
                                                                     : importKinetoJob(path, parent, error, &hta);
  if (!trace) {
    if (error && error->isEmpty()) *error = tr("opening %1 was cancelled").arg(path);
    return false;
  }
  // The views' models are built here too (show() refreshes every page at
  // once): whatever they throw, bad_alloc included, is this file's error and
  // leaves an empty window, never an abort.
  try {
    showTrace(path, std::move(*trace), std::move(hta));
  } catch (const std::exception& e) {
    const QString why = dynamic_cast<const std::bad_alloc*>(&e) ? tr("not enough memory") : QString::fromUtf8(e.what());
    try {
      m_inspection->store().clear();
      m_inspection->show(ShownRun{});
    } catch (const std::exception&) {
      // The empty store was the fallback; the error below still stands.
    }
    if (error) *error = tr("%1: the trace was read but its views could not be built: %2").arg(path, why);
    return false;
  }
  emit traceOpened();
  emit fileOpened(path, false);
  return true;
}

void RunFiles::showTrace(const QString& path, RunTrace trace, std::shared_ptr<const kineto::JobAnalysis> hta) {
  m_inspection->store().setFromTrace(std::move(trace));
  ShownRun run;
  run.kind = ShownRun::Kind::File;
  run.source = QFileInfo(path).fileName();
  run.done = run.ok = true;
  if (const auto& imported = m_inspection->store().meta().imported) {
    // A PyTorch job: no ShardScope config to put in the form.
    run.hta = std::move(hta);
    m_inspection->show(std::move(run));
    m_notice.clear();
    m_window->statusBar()->showMessage(
        tr("%1: %2 — %3").arg(QFileInfo(path).fileName(), QString::fromStdString(imported->format),
                               QString::fromStdString(imported->notes.empty() ? std::string() : imported->notes.front())),
        10000);
    return;
  }
  // Traces record the config of their run: the form takes it, so Run repeats it.
  QString why;
  run.config = Inspection::recordedConfig(m_inspection->store().meta(), &why);
  if (run.config)
    m_panel->setConfig(*run.config);
  else if (!why.isEmpty())
    // An older or hand-edited trace: the views still work; the form stays as it was.
    m_window->statusBar()->showMessage(tr("%1; the form is unchanged").arg(why), 8000);
  m_inspection->show(std::move(run));
  m_notice.clear();
  if (m_inspection->store().empty()) {
    // The views can only say "no run yet": say why, where it is seen.
    m_notice = tr("%1 has no events: its traceEvents list is empty, so there is no run to show. A trace written by "
                  "shardscope-cli run --trace or by File ▸ Export trace holds every rank's ops.")
                   .arg(QFileInfo(path).fileName());
    auto* box = new QMessageBox(QMessageBox::Information, tr("Empty trace"), m_notice, QMessageBox::Ok, m_window);
    box->setObjectName(QStringLiteral("traceNotice"));
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setModal(false);
    box->show();
    m_window->statusBar()->showMessage(m_notice, 10000);
  }
}

bool RunFiles::exportTrace(const QString& path, QString* error) {
  if (m_inspection->store().meta().imported) {
    if (error) *error = tr("the run on screen is an imported PyTorch profiler trace: its own files are the trace (ShardScope "
                           "exports the runs it ran)");
    return false;
  }
  try {
    writeChromeTraceFile(m_inspection->store().toRunTrace(), path.toStdString());
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  return true;
}

bool RunFiles::saveExperiment(const QString& path, QString* error) {
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

bool RunFiles::openExperiment(const QString& path, QString* error) {
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
  emit fileOpened(path, true);
  return true;
}

void RunFiles::askOpenTrace() {
  const QStringList paths = QFileDialog::getOpenFileNames(
      m_window, tr("Open trace or memory snapshots"), QString(),
      tr("Traces: ShardScope, PyTorch profiler (*.json *.json.gz);;PyTorch memory snapshots, one per rank (*.pickle "
         "*.pkl *.json);;All files (*)"));
  if (paths.isEmpty()) return;
  QString error;
  if (!openFiles(paths, &error)) QMessageBox::critical(m_window, tr("Cannot open trace"), error);
}

void RunFiles::askOpenTraceFolder() {
  const QString path = QFileDialog::getExistingDirectory(m_window, tr("Open a folder of per-rank PyTorch profiler traces"));
  if (path.isEmpty()) return;
  QString error;
  if (!openTrace(path, &error)) QMessageBox::critical(m_window, tr("Cannot open traces"), error);
}

bool RunFiles::openFlightRecorder(const QStringList& paths, QString* error) {
  std::shared_ptr<const FlightRecorderSet> set = importFlightRecorder(paths, m_window->isVisible() ? m_window : nullptr, error);
  if (!set) return false;
  emit flightRecorderOpened(set);
  if (paths.size() == 1) emit fileOpened(paths.front(), false);
  return true;
}

void RunFiles::askOpenFlightRecorder() {
  const QStringList paths = QFileDialog::getOpenFileNames(
      m_window, tr("Open flight-recorder dumps (one file per rank; or open their folder with Open trace folder)"));
  if (paths.isEmpty()) return;
  QString error;
  if (!openFlightRecorder(paths, &error)) QMessageBox::critical(m_window, tr("Cannot open flight-recorder dumps"), error);
}

void RunFiles::askExportTrace() {
  const QString path = QFileDialog::getSaveFileName(m_window, tr("Export trace"), QStringLiteral("shardscope.trace.json"),
                                                    tr("Perfetto / Chrome JSON (*.json)"));
  if (path.isEmpty()) return;
  QString error;
  if (!exportTrace(path, &error))
    QMessageBox::critical(m_window, tr("Cannot export trace"), error);
  else
    m_window->statusBar()->showMessage(tr("trace written to %1 (opens in ui.perfetto.dev)").arg(path), 6000);
}

void RunFiles::askOpenExperiment() {
  const QString path = QFileDialog::getOpenFileName(m_window, tr("Open experiment"), QString(),
                                                    tr("ShardScope experiments and presets (*.json);;All files (*)"));
  if (path.isEmpty()) return;
  QString error;
  if (!openExperiment(path, &error)) QMessageBox::critical(m_window, tr("Cannot open experiment"), error);
}

void RunFiles::askSaveExperiment() {
  const QString path = QFileDialog::getSaveFileName(m_window, tr("Save experiment"), QStringLiteral("experiment.json"),
                                                    tr("ShardScope experiment (*.json)"));
  if (path.isEmpty()) return;
  QString error;
  if (!saveExperiment(path, &error))
    QMessageBox::critical(m_window, tr("Cannot save experiment"), error);
  else
    m_window->statusBar()->showMessage(
        tr("experiment written to %1 (open it here, or run it: shardscope --preset %1)").arg(path), 8000);
}

}  // namespace shardscope
