#include "preset_runner.h"

#include <QTimer>

#include "analysis/run_preflight.h"
#include "engine_bridge.h"

namespace shardscope {

QString configLabel(const RunConfig& c) {
  QString label = QStringLiteral("%1 · %2 ranks").arg(QString::fromStdString(strategyName(c.strategy))).arg(c.ranks);
  if (!c.model.preset.empty()) label += QStringLiteral(" · ") + QString::fromStdString(c.model.preset);
  return label;
}

PresetRunner::PresetRunner(EngineBridge* bridge, QObject* parent) : QObject(parent), m_bridge(bridge) {}

bool PresetRunner::startOne(const RunConfig& config, const QString& label, QString* error, bool paused) {
  m_preset.reset();
  m_label = label;
  try {
    m_bridge->start(config, paused);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  return true;
}

bool PresetRunner::start(const Preset& preset, QString* error, bool paused) {
  if (m_bridge->isRunning()) {
    if (error) *error = tr("a run is in progress; stop it (Ctrl+.) before running preset %1").arg(preset.name);
    return false;
  }
  // Every run is checked before the first starts: a bad profile in run 2 must
  // not be found after run 1 has run.
  const MachineMemory machine = machineMemory();
  for (size_t i = 0; i < preset.runs.size(); ++i) {
    try {
      preflightRun(preset.runs[i].config, machine);
    } catch (const RunRefused& e) {
      const QString field = QStringLiteral("runs[%1].config").arg(i) +
                            (e.field().empty() ? QString() : QStringLiteral(".") + QString::fromStdString(e.field()));
      if (error) *error = QStringLiteral("%1: %2").arg(field, QString::fromStdString(e.what()));
      return false;
    }
  }
  m_preset = preset;
  m_index = 0;
  m_endedRuns = 0;
  m_ok = true;
  m_message.clear();
  emit viewWanted(preset.view);
  m_label = preset.runs.front().label;
  try {
    m_bridge->start(preset.runs.front().config, paused);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    m_preset.reset();
    return false;
  }
  return true;
}

QString PresetRunner::sourceText() const {
  if (!m_preset) return {};
  return tr("preset %1, run %2/%3: %4").arg(m_preset->name).arg(m_index + 1).arg(m_preset->runs.size()).arg(m_label);
}

QString PresetRunner::runOfText() const {
  if (!m_preset || m_preset->runs.size() <= 1) return {};
  return tr("run %1 of %2").arg(m_index + 1).arg(m_preset->runs.size());
}

void PresetRunner::runEnded(bool ok, bool cancelled, const QString& message) {
  if (!m_preset) return;
  const bool last = m_index + 1 >= m_preset->runs.size();
  if (!ok) {
    // A stop ends the preset; a hang preset expects its (last) run to stop.
    m_ok = !cancelled && m_preset->expectError && last;
    m_message = m_ok ? tr("preset %1: the run stopped, as the preset expects: %2").arg(m_preset->name, message) : message;
  }
  if (ok && !last) {
    ++m_index;
    QTimer::singleShot(0, this, &PresetRunner::startNext);
    return;
  }
  if (ok && m_preset->expectError) {
    m_ok = false;
    m_message = tr("preset %1 expected its run to stop, but it finished").arg(m_preset->name);
  }
  if (m_ok && m_message.isEmpty())
    m_message = tr("preset %1: %2 run%3 finished")
                    .arg(m_preset->name)
                    .arg(m_preset->runs.size())
                    .arg(m_preset->runs.size() == 1 ? "" : "s");
  const QString view = m_preset->view;
  m_endedRuns = m_preset->runs.size();
  m_preset.reset();
  emit viewWanted(view);
  emit finished(m_ok, m_message);
}

void PresetRunner::startNext() {
  if (!m_preset) return;
  const PresetRun& run = m_preset->runs[m_index];
  m_label = run.label;
  try {
    m_bridge->start(run.config, false);
  } catch (const std::exception& e) {
    const QString message = tr("preset %1, run %2: %3").arg(m_preset->name).arg(m_index + 1).arg(QString::fromStdString(e.what()));
    m_preset.reset();
    emit startFailed(message);
    emit finished(false, message);
  }
}

}  // namespace shardscope
