// The settings table: one row per run setting, with everything each consumer
// needs — the CLI flag, the key in trace/summary config JSON, the preset key,
// its type, default, the runs it applies to, its allowed range, help text and
// the accessors into RunConfig. parseRunArgs, runUsage, validate, runArgs,
// the config JSON, preset files and the GUI's experiment form are generated
// from it, so a new setting is one row here (plus its use).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/run_config.h"

namespace shardscope {

enum class SettingType {
  Int,     // an int flag: "--ranks 4"
  Real,    // a double: "--lr 0.0001"
  RngState,  // the random generator's start, a uint64: "--seed 12345678901"
  Choice,  // one name of a list: "--prefetch both"
  Switch,  // on|off: "--replicate off"
  Text,    // free text: a profile name or a path
  RankBlock,  // R:L
};

// Which runs a setting means something for: validate() refuses it elsewhere
// (when applies_text is set) and the form hides it.
struct Applicability {
  unsigned strategies = ~0u;     // bit 1 << Strategy
  unsigned backends = ~0u;       // bit 1 << Backend
  bool gpt_only = false;         // the gpt model (or a published shape)
  bool custom_shape = false;     // not with a published --model
  bool modeled_clock = false;    // --clock modeled (or the meta backend)
  bool appliesTo(const RunConfig& c) const;
};

// The allowed range of a number: lo..hi for integers, "(lo, hi]" style with
// open ends for reals.
struct Range {
  double lo = 0, hi = 0;
  bool lo_open = false, hi_open = false;
  const char* unit = "";  // " MiB" in messages
  bool empty() const { return lo == 0 && hi == 0; }
  std::string text() const;  // "1..64", "(0, 4096] MiB"
};

// Where a setting sits in the experiment form.
struct FormRow {
  const char* group = nullptr;  // "Strategy", "Model", …; nullptr: not in the form
  const char* label = "";       // row label ("global batch"); a Switch's check box text
  double max = 0;               // spin box maximum (a little above the valid range: the validator says the rule)
  int decimals = 0;             // Real: decimals shown
  double step = 1;              // Real: single step
  const char* suffix = "";      // " ms", " MiB"
  const char* settings_key = nullptr;  // QSettings key; nullptr: the JSON key, else the preset key
};

struct Setting {
  const char* flag = nullptr;      // "--first-bucket-mb"; nullptr: no flag (written, never parsed)
  const char* json_key = nullptr;  // the key in config JSON ("first_bucket_mb"); nullptr: none
  int json_order = 0;              // position of json_key among the config JSON's members
  int args_order = 0;              // position among runArgs' flags
  SettingType type = SettingType::Int;
  const char* metavar = "";        // usage: "--ranks P"
  const char* default_text = nullptr;  // usage's [default]; nullptr: none shown
  std::vector<std::string> (*choices)() = nullptr;  // Choice: the accepted names
  Applicability applies;
  const char* applies_text = nullptr;  // "--strategy zero3, fsdp or hsdp (FSDP units)": refused elsewhere
  const char* not_applies_hint = "";   // after "…, not ddp"
  Range range;                         // fixed range checked by validate()
  // A range that depends on the rest of the config (hint: the text after "got v").
  Range (*range_for)(const RunConfig& c, std::string& hint) = nullptr;
  const char* range_hint = "";         // after "got v" for the fixed range
  const char* help = "";               // usage's text after the flag
  bool repeatable = false;             // may be given more than once (a list)
  bool in_presets = true;              // a preset file's config may name it
  bool one_of = false;                 // Choice: "must be one of a, b; got 'x'" instead of "must be a or b, got 'x'"
  const char* choice_hint = "";        // Choice: after the names in the parse error
  FormRow form;

  // The value as its flag's argument(s), as runArgs writes them; empty: not given.
  std::vector<std::string> (*args)(const RunConfig& c) = nullptr;
  // Sets the value from the flag's argument (throws ConfigError naming the flag).
  void (*set)(RunConfig& c, const Setting& s, const std::string& text) = nullptr;
  // The number validate() checks against the range; nullopt: unset (not checked).
  std::optional<double> (*number)(const RunConfig& c) = nullptr;
  // Whether the user gave it (validate refuses a given setting that does not apply).
  bool (*given)(const RunConfig& c) = nullptr;
  // A rule on the value and other settings, checked right after the range.
  void (*rule)(const RunConfig& c) = nullptr;
  // Adds its member(s) to the config JSON.
  void (*json)(const RunConfig& c, nlohmann::ordered_json& out) = nullptr;

  std::string presetKey() const { return flag ? std::string(flag).substr(2) : std::string(); }
  std::string settingsKey() const {
    return form.settings_key ? form.settings_key : json_key ? json_key : presetKey();
  }
};

// Every setting, in validation order.
const std::vector<Setting>& settings();
// The row of a flag ("--ranks") or preset key ("ranks"); nullptr if none.
const Setting* findSetting(const std::string& flag_or_key);

// ConfigError "--flag must be in lo..hi, got v<hint>" when v is outside.
void requireRange(const char* flag, long long v, long long lo, long long hi, const std::string& hint = "");

// Shortest text that parses back to the same double.
std::string exactText(double v);

// The ranks each backend allows.
Range ranksRange(Backend b);

}  // namespace shardscope
