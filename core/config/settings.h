// The settings table: one row per run setting, with everything each consumer
// needs — the CLI flag, the key in trace/summary config JSON, its type,
// default, the runs it applies to, its allowed range, help text, its place in
// the experiment form and the accessors into RunConfig. parseRunArgs,
// runUsage, validate, runArgs, the config JSON, preset files, QSettings and
// the GUI's experiment form all go through a row's set()/get(), so a new
// setting is one row in a settings_*.cpp file (plus its use).
// Row order is the config JSON's member order (and validation order).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
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
  double min = 0;               // spin box minimum
  const char* suggestions = nullptr;  // Text: a list the GUI offers ("profiles": this installation's)
};

struct Setting {
  const char* flag = nullptr;      // "--first-bucket-mb"; nullptr: no flag (written, never parsed)
  const char* json_key = nullptr;  // the key in config JSON ("first_bucket_mb"); nullptr: none
  SettingType type = SettingType::Int;
  const char* metavar = "";        // usage: "--ranks P"
  const char* default_text = nullptr;  // usage's [default]; nullptr: none shown
  const char* help = "";               // usage's text after the flag
  std::vector<std::string> (*choices)() = nullptr;  // Choice: the accepted names
  bool one_of = false;                 // Choice: "must be one of a, b; got 'x'" instead of "must be a or b, got 'x'"
  const char* choice_hint = "";        // Choice: after the names in the parse error
  Applicability applies;
  const char* applies_text = nullptr;  // "--strategy zero3, fsdp or hsdp (FSDP units)": refused elsewhere
  const char* not_applies_hint = "";   // after "…, not ddp"
  Range range;                         // fixed range checked by validate()
  // A range that depends on the rest of the config (hint: the text after "got v").
  Range (*range_for)(const RunConfig& c, std::string& hint) = nullptr;
  const char* range_hint = "";         // after "got v" for the fixed range
  bool repeatable = false;             // may be given more than once (a list)
  bool in_presets = true;              // a preset file's config may name it
  FormRow form;

  // Accessors; use set(), get() and args() below rather than these.
  // Sets the value from the flag's argument (throws ConfigError naming the flag).
  void (*parse)(RunConfig& c, const Setting& s, const std::string& text) = nullptr;
  // The value as its flag's argument, as the form shows it: the effective
  // value (a default included); nullopt: none (no file, no injected branch).
  std::optional<std::string> (*text)(const RunConfig& c) = nullptr;
  // Whether runArgs writes the flag (nullptr: whenever text() has a value).
  bool (*written)(const RunConfig& c) = nullptr;
  // A repeatable setting's arguments, one per time it is given.
  std::vector<std::string> (*values)(const RunConfig& c) = nullptr;
  // The number validate() checks against the range; nullopt: unset (not checked).
  std::optional<double> (*number)(const RunConfig& c) = nullptr;
  // Whether the user gave it (validate refuses a given setting that does not apply).
  bool (*given)(const RunConfig& c) = nullptr;
  // A rule on the value and other settings, checked right after the range.
  void (*rule)(const RunConfig& c) = nullptr;
  // Its value in the config JSON, under json_key; nullopt: not written (a
  // setting that does not apply, or a default left out).
  std::optional<nlohmann::ordered_json> (*json)(const RunConfig& c) = nullptr;

  // The row's API, which every consumer (CLI, JSON, presets, QSettings, the form) uses.
  // Parses text as the flag's argument into c; throws ConfigError naming the flag.
  void set(RunConfig& c, std::string_view text) const;
  // The value as the CLI takes it ("zero3", "0.0001", "on", "1:3"); nullopt: none.
  std::optional<std::string> get(const RunConfig& c) const;
  // The flag's arguments runArgs writes for c (empty: left to its default).
  std::vector<std::string> args(const RunConfig& c) const;
  bool parses() const { return flag && parse; }
  bool inForm() const { return form.group != nullptr && parses() && text; }

  std::string presetKey() const { return flag ? std::string(flag).substr(2) : std::string(); }
  std::string settingsKey() const {
    return form.settings_key ? form.settings_key : json_key ? json_key : presetKey();
  }
};

// Every setting, in row order: the config JSON's member order and validation order.
const std::vector<Setting>& settings();
// The rows runArgs writes, in its order.
const std::vector<const Setting*>& argsOrder();
// Every row with a flag: argsOrder(), then the rest in row order. Usage and the
// form list rows in this order (the CLI's: model, training, sharding, clock, faults).
const std::vector<const Setting*>& flagOrder();
// The row of a flag ("--ranks") or preset key ("ranks"); nullptr if none.
const Setting* findSetting(std::string_view flag_or_key);

// ConfigError "--flag must be in lo..hi, got v<hint>" when v is outside.
void requireRange(const char* flag, long long v, long long lo, long long hi, const std::string& hint = "");

// Shortest text that parses back to the same double.
std::string exactText(double v);

// The ranks each backend allows.
Range ranksRange(Backend b);
// The meta backend's largest run with every rank simulated as a thread of its own.
inline constexpr int kMetaRanksSimulatedEach = 1024;

}  // namespace shardscope
