// Runs a preset's runs one after another through the engine bridge: starts
// the first, the next when one finishes, and says at the end whether every run
// went as the preset intends (a preset about a hang expects its last run to
// stop). Single runs go through it too, so the label of the run that starts is
// known in one place. Qt Core only.
#pragma once

#include <QObject>
#include <QString>
#include <cstddef>
#include <optional>

#include "preset.h"

namespace shardscope {

class EngineBridge;

// A run's name in the Runs table and figure subtitles: "zero3 · 8 ranks · gpt2-124m".
QString configLabel(const RunConfig& config);

class PresetRunner : public QObject {
  Q_OBJECT
 public:
  explicit PresetRunner(EngineBridge* bridge, QObject* parent = nullptr);

  // Runs one config (no preset); false with the bridge's message on error.
  bool startOne(const RunConfig& config, const QString& label, QString* error, bool paused = false);
  // Runs every config of the preset (finished() at the end); false with the
  // message ("runs[1].config.profile: unknown profile …") when any run would be
  // refused (every one is checked before the first starts) or the first
  // cannot start. paused: the first run starts paused.
  bool start(const Preset& preset, QString* error, bool paused = false);

  bool running() const { return m_preset.has_value(); }
  const Preset* preset() const { return m_preset ? &*m_preset : nullptr; }
  size_t index() const { return m_index; }  // the preset's run in progress
  QString label() const { return m_label; }  // of the run started last
  // "preset P, run 2/3: label" while a preset runs; "" otherwise.
  QString sourceText() const;
  // "run 2 of 3" for a preset of several runs; "" otherwise.
  QString runOfText() const;
  // How many runs the preset that ended last had (0 before any ended): the
  // window compares that many rows of the Runs table at a lesson's end.
  size_t endedRuns() const { return m_endedRuns; }

  // Call when the bridge's run ended (after everything that reads preset()):
  // starts the next run or ends the preset.
  void runEnded(bool ok, bool cancelled, const QString& message);

 signals:
  void viewWanted(const QString& view);        // the preset's view: at its start and end
  void startFailed(const QString& message);    // a later run could not start; the preset ends
  void finished(bool ok, const QString& message);

 private:
  void startNext();

  EngineBridge* m_bridge;
  std::optional<Preset> m_preset;
  size_t m_index = 0;
  size_t m_endedRuns = 0;
  bool m_ok = true;
  QString m_message;
  QString m_label;
};

}  // namespace shardscope
