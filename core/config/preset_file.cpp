#include "config/preset_file.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "common/errors.h"
#include "common/input_file.h"
#include "config/settings.h"

namespace shardscope {

namespace {

using PresetJson = nlohmann::json;  // sorted keys, as presets have always been read

constexpr int kMaxDepth = 32;  // a preset is three levels deep; deeper is not a preset

[[noreturn]] void fail(const std::string& where, const std::string& what) { throw ConfigError(where + ": " + what); }

std::string typeName(const PresetJson& v) {
  switch (v.type()) {
    case PresetJson::value_t::null: return "null";
    case PresetJson::value_t::boolean: return "a boolean";
    case PresetJson::value_t::number_integer:
    case PresetJson::value_t::number_unsigned:
    case PresetJson::value_t::number_float: return "a number";
    case PresetJson::value_t::string: return "a string";
    case PresetJson::value_t::array: return "an array";
    case PresetJson::value_t::object: return "an object";
    default: return "undefined";
  }
}

std::string trimmed(const std::string& s) {
  const char* const space = " \t\n\r\f\v";
  const size_t first = s.find_first_not_of(space);
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(space) - first + 1);
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

std::string requireString(const PresetJson& o, const char* key, const std::string& where, bool required) {
  const auto it = o.find(key);
  if (it == o.end()) {
    if (required) fail(where, std::string("missing field \"") + key + "\" (a non-empty string)");
    return {};
  }
  if (!it->is_string() || trimmed(it->get<std::string>()).empty())
    fail(where, std::string("field \"") + key + "\" must be a non-empty string, got " + typeName(*it));
  return trimmed(it->get<std::string>());
}

// Parses with nlohmann's DOM, refusing a key that repeats in its object (the
// DOM would keep the last silently) with the key's path, and deep nesting.
class RepeatedKeyCheck {
 public:
  explicit RepeatedKeyCheck(const std::string& file) : m_file(file) {}
  bool operator()(int depth, PresetJson::parse_event_t event, PresetJson& parsed) {
    switch (event) {
      case PresetJson::parse_event_t::object_start:
      case PresetJson::parse_event_t::array_start:
        element();
        if (depth >= kMaxDepth) fail(m_file, "nested deeper than " + std::to_string(kMaxDepth) + " levels");
        m_frames.push_back({event == PresetJson::parse_event_t::array_start, -1, {}, {}});
        break;
      case PresetJson::parse_event_t::object_end:
      case PresetJson::parse_event_t::array_end:
        if (!m_frames.empty()) m_frames.pop_back();
        break;
      case PresetJson::parse_event_t::key: {
        Frame& top = m_frames.back();
        top.key = parsed.get<std::string>();
        if (!top.keys.insert(top.key).second) fail(m_file, "field \"" + path() + "\" appears twice");
        break;
      }
      case PresetJson::parse_event_t::value: element(); break;
    }
    return true;
  }

 private:
  struct Frame {
    bool array;
    long index;             // arrays: the element being read
    std::set<std::string> keys;  // objects: keys seen
    std::string key;             // objects: the member being read
  };
  void element() {
    if (!m_frames.empty() && m_frames.back().array) ++m_frames.back().index;
  }
  std::string path() const {
    std::string out;
    for (const Frame& f : m_frames) {
      if (f.array) out += "[" + std::to_string(f.index) + "]";
      else out += (out.empty() ? "" : ".") + f.key;
    }
    return out;
  }
  std::string m_file;
  std::vector<Frame> m_frames;
};

// A JSON value as the CLI would have it typed: integers without a decimal
// point; on/off settings (the settings table's Switch rows) also as booleans.
std::string argText(const PresetJson& v, const Setting& setting, const std::string& where) {
  const std::string key = setting.presetKey();
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number_unsigned()) return std::to_string(v.get<unsigned long long>());
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::abs(d) < 9e15) return std::to_string(static_cast<long long>(d));
    char text[40];
    std::snprintf(text, sizeof text, "%.17g", d);
    return text;
  }
  if (v.is_boolean()) {
    if (setting.type == SettingType::Switch) return v.get<bool>() ? "on" : "off";
    fail(where, "\"" + key + "\" must be a string or a number, got a boolean");
  }
  fail(where, "\"" + key + "\" must be a string or a number, got " + typeName(v));
}

PresetFileRun parseRun(const PresetJson& value, size_t index, const std::string& file) {
  const std::string where = file + ": runs[" + std::to_string(index) + "]";
  if (!value.is_object()) fail(where, "must be an object with \"config\", got " + typeName(value));
  for (const auto& [key, member] : value.items())
    if (key != "label" && key != "config") fail(where, "unknown field \"" + key + "\" (a run has \"label\" and \"config\")");
  PresetFileRun out;
  out.label = requireString(value, "label", where, false);
  const auto config_it = value.find("config");
  if (config_it == value.end() || !config_it->is_object())
    fail(where, "field \"config\" must be an object of CLI flags without \"--\", got " +
                    (config_it == value.end() ? std::string("undefined") : typeName(*config_it)));
  const PresetJson& config = *config_it;
  const std::vector<std::string> fields = presetConfigKeys();
  const std::string config_where = where + ".config";
  for (const auto& [key, member] : config.items())
    if (std::find(fields.begin(), fields.end(), key) == fields.end())
      fail(config_where, "unknown field \"" + key + "\"; fields are the CLI's flags without \"--\": " + join(fields, ", "));
  // The modeled clock unless the preset says otherwise; --model first, since a
  // model preset fixes the shape fields.
  out.args = {"--clock", "modeled"};
  std::vector<std::string> keys;
  for (const auto& [key, member] : config.items()) keys.push_back(key);  // sorted
  if (const auto model = std::find(keys.begin(), keys.end(), "model"); model != keys.end())
    std::rotate(keys.begin(), model, model + 1);
  for (const std::string& key : keys) {
    out.args.push_back("--" + key);
    out.args.push_back(argText(config.at(key), *findSetting(key), config_where));
  }
  try {
    bool help = false;
    out.config = parseRunArgs(out.args, &help);
  } catch (const ConfigError& e) {
    fail(config_where, e.what());
  }
  if (out.config.steps > kMaxPresetSteps)
    fail(config_where + ".steps", "a preset run may have at most " + std::to_string(kMaxPresetSteps) +
                                      " steps (a figure needs a few; longer runs belong on the command line), got " +
                                      std::to_string(out.config.steps));
  if (out.label.empty())
    out.label = strategyName(out.config.strategy) + " \u00b7 " + std::to_string(out.config.ranks) + " ranks";
  return out;
}

}  // namespace

const std::vector<std::string>& presetViewNames() {
  static const std::vector<std::string> names = {"timeline", "memory", "buckets", "units", "loss", "comm", "pipeline", "stragglers", "hta", "critical-path", "ladder", "snapshot", "memory-timeline"};
  return names;
}

std::vector<std::string> presetConfigKeys() {
  std::vector<std::string> keys;
  for (const Setting& s : settings())
    if (s.flag && s.in_presets) keys.push_back(s.presetKey());
  return keys;
}

PresetFile parsePresetJson(std::string_view json, const std::string& file) {
  PresetJson root;
  try {
    root = PresetJson::parse(json.begin(), json.end(), RepeatedKeyCheck(file));
  } catch (const PresetJson::parse_error& e) {
    // nlohmann's message starts "[json.exception.parse_error.101] parse error at line 1, column 11: …".
    std::string what = e.what();
    if (const size_t colon = what.find(": "); what.rfind("[json.exception", 0) == 0 && colon != std::string::npos)
      what = what.substr(colon + 2);
    fail(file, "not valid JSON at byte " + std::to_string(e.byte) + ": " + what);
  } catch (const PresetJson::exception& e) {
    fail(file, std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object()) fail(file, "the top level must be a JSON object");
  static const std::vector<std::string> kKeys = {"title", "question", "text", "view", "categories", "expect_error", "runs"};
  for (const auto& [key, member] : root.items())
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end())
      fail(file, "unknown field \"" + key + "\" (a preset has " + join(kKeys, ", ") + ")");
  PresetFile p;
  p.title = requireString(root, "title", file, true);
  p.question = requireString(root, "question", file, false);
  if (p.question.find('\n') != std::string::npos) fail(file, "field \"question\" must be one line");
  p.text = requireString(root, "text", file, true);
  p.view = requireString(root, "view", file, false);
  if (p.view.empty()) p.view = "timeline";
  const std::vector<std::string>& views = presetViewNames();
  if (std::find(views.begin(), views.end(), p.view) == views.end())
    fail(file, "field \"view\" must be one of " + join(views, ", ") + ", got \"" + p.view + "\"");
  p.categories = requireString(root, "categories", file, false);
  if (const auto expect = root.find("expect_error"); expect != root.end()) {
    if (!expect->is_boolean()) fail(file, "field \"expect_error\" must be true or false, got " + typeName(*expect));
    p.expect_error = expect->get<bool>();
  }
  const auto runs = root.find("runs");
  if (runs == root.end() || !runs->is_array() || runs->empty())
    fail(file, "field \"runs\" must be a non-empty array of {\"label\", \"config\"}, got " +
                   (runs == root.end() ? std::string("nothing") : typeName(*runs)));
  if (runs->size() > kMaxPresetRuns)
    fail(file, "runs: a preset may have at most " + std::to_string(kMaxPresetRuns) + " runs, got " +
                   std::to_string(runs->size()));
  for (size_t i = 0; i < runs->size(); ++i) p.runs.push_back(parseRun(runs->at(i), i, file));
  return p;
}

PresetFile readPresetFile(const std::string& path) {
  const std::string bytes = readInputFile(path, presetFileRule());
  const size_t slash = path.find_last_of('/');
  return parsePresetJson(bytes, slash == std::string::npos ? path : path.substr(slash + 1));
}

std::string presetFileJson(const PresetFile& preset) {
  nlohmann::ordered_json root;
  root["title"] = preset.title;
  if (!preset.question.empty()) root["question"] = preset.question;
  root["text"] = preset.text;
  root["view"] = preset.view.empty() ? std::string("timeline") : preset.view;
  if (!preset.categories.empty()) root["categories"] = preset.categories;
  if (preset.expect_error) root["expect_error"] = true;
  root["runs"] = nlohmann::ordered_json::array();
  for (const PresetFileRun& run : preset.runs) {
    nlohmann::ordered_json config = nlohmann::ordered_json::object();
    const std::vector<std::string> args = runArgs(run.config);
    for (size_t i = 0; i + 1 < args.size(); i += 2) {
      const Setting* setting = findSetting(args[i]);
      if (!setting || !setting->in_presets) continue;  // --break-on / --break-unit
      const std::string& value = args[i + 1];
      long long n = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      // Integers as JSON numbers (as the shipped presets write them); the
      // rest as the exact text the CLI takes.
      if (ec == std::errc() && end == value.data() + value.size() && std::llabs(n) < (1LL << 53))
        config[setting->presetKey()] = n;
      else
        config[setting->presetKey()] = value;
    }
    nlohmann::ordered_json entry;
    entry["label"] = run.label;
    entry["config"] = std::move(config);
    root["runs"].push_back(std::move(entry));
  }
  return root.dump(4) + "\n";
}

}  // namespace shardscope
