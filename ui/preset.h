// Teaching experiments shipped as resources/presets/*.json (compiled in as
// :/presets) or saved by the user: a title, a "what to look for" paragraph
// and one or more runs. The file format, its parsing and validation are
// core's (config/preset_file.h); this is the Qt side: names, resources and
// QString fields for the window.
#pragma once

#include <QByteArray>
#include <QString>
#include <QStringList>
#include <stdexcept>
#include <vector>

#include "config/run_config.h"

namespace shardscope {

// A bad preset file: the message names the file, the field and the rule.
class PresetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PresetRun {
  QString label;     // "zero3 · 8 ranks": legends and the Runs table
  QStringList args;  // the equivalent `shardscope-cli run` flags
  RunConfig config;  // validated
};

struct Preset {
  QString name;   // file base name, "ddp-basics"
  QString source; // the file it came from (":/presets/… for the built-in ones)
  QString title;  // one line
  QString question;  // the lesson's question, one line (the start page shows it); may be ""
  QString text;   // one paragraph: what to look for, tied to the ZeRO paper's claims
  QString view;   // the view that shows the lesson (one of presetViews())
  // The memory-ledger categories the lesson is about ("model-state,gathered"),
  // checked; the memory view and its run comparison draw them. "" = all.
  QString categories;
  bool expectError = false;  // the lesson is a run that stops (a hang)
  std::vector<PresetRun> runs;
};

// View names a preset (and `shardscope --figure --view`) may name.
QStringList presetViews();
// The flags a preset config may set (the CLI's, without "--").
QStringList presetConfigFields();

// Parses one preset; name is the file's base name. Throws PresetError.
Preset parsePreset(const QByteArray& json, const QString& name);
// Reads and parses a file; throws PresetError (unreadable, or bad content).
Preset loadPresetFile(const QString& path);
// The presets compiled into the application, in teaching order. Throws
// PresetError for a bad built-in file (a build problem the tests catch).
const std::vector<Preset>& builtinPresets();
// A built-in preset by name, or a path to a .json file. Throws PresetError.
Preset findPreset(const QString& name_or_path);
// The preset file that parsePreset reads back as this preset (configs as the
// CLI flags that give them; breakpoints are not part of an experiment).
QByteArray presetJson(const Preset& preset);
// An experiment of one run, as File ▸ Save experiment writes it.
Preset experimentPreset(const RunConfig& config, const QString& label);

}  // namespace shardscope
