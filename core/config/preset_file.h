// Preset files: a teaching experiment as JSON — a title, a "what to look for"
// paragraph, the view that shows the lesson and one or more runs. A run's
// config keys are the CLI's flags without "--", and each config goes through
// the CLI's own parser (parseRunArgs), so a preset refuses exactly what the
// command line refuses, with the field's path in the file
// ("runs[1].config: --batch 30 must be a multiple of --ranks 4"). A key given
// twice is an error (as in profiles), and the number of runs and the steps of
// each are bounded, so no file can make the app run for hours. Presets default
// to the modeled clock, so the same preset draws the same figure every time.
// Qt-free: the GUI's ui/preset.h adapts it, the fuzz targets call it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/run_config.h"

namespace shardscope {

inline constexpr size_t kMaxPresetRuns = 64;     // a lesson compares a few runs
inline constexpr int kMaxPresetSteps = 1000;     // per run; a figure needs a few

struct PresetFileRun {
  std::string label;              // as the file gives it; "" when it gives none
  std::vector<std::string> args;  // the equivalent `shardscope-cli run` flags
  RunConfig config;               // validated
};

struct PresetFile {
  std::string title;     // one line
  std::string question;  // the lesson's question, one line ("" when the file gives none)
  std::string text;      // one paragraph: what to look for
  std::string view;   // one of presetViewNames() ("timeline" when the file names none)
  // The memory-ledger categories the lesson is about, as --categories takes
  // them ("model-state,gathered"); "" draws the view's default. The window
  // checks the names (inspect/category_filter.h sits above config).
  std::string categories;
  bool expect_error = false;  // the lesson is a run that stops (a hang)
  std::vector<PresetFileRun> runs;
};

// View names a preset may name.
const std::vector<std::string>& presetViewNames();
// The keys a preset run's config may set (the CLI's flags without "--").
std::vector<std::string> presetConfigKeys();

// Parses one preset. `file` names it in messages ("ddp-basics.json"). Throws
// ConfigError "<file>: <field path>: <what is wrong>", one line.
PresetFile parsePresetJson(std::string_view json, const std::string& file);
// Reads a preset file under presetFileRule() (regular files only, a size
// cap) and parses it. Throws ConfigError.
PresetFile readPresetFile(const std::string& path);
// The JSON text that parsePresetJson reads back as this preset (configs as the
// CLI flags that give them; breakpoints are not part of an experiment).
std::string presetFileJson(const PresetFile& preset);

}  // namespace shardscope
