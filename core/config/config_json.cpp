#include "config/config_json.h"

#include <algorithm>

#include "common/errors.h"
#include "config/settings.h"

namespace shardscope {

using Json = nlohmann::ordered_json;

Json configToJson(const RunConfig& c) {
  // Members in row order (the table's order is the JSON's).
  Json j = Json::object();
  for (const Setting& s : settings()) {
    if (!s.json) continue;
    if (std::optional<Json> value = s.json(c)) j[s.json_key] = std::move(*value);
    // A published shape is named beside its kind, and read back first (as --model NAME).
    if (s.json_key == std::string("model") && !c.model.preset.empty()) j["model_preset"] = c.model.preset;
  }
  // The flags that run this config again (an opened trace restores its form from them).
  j["args"] = runArgs(c);
  j["command"] = runCommandLine(c);
  return j;
}

std::string configJsonText(const RunConfig& c) { return configToJson(c).dump(); }

namespace {

[[noreturn]] void badKey(const std::string& key, const std::string& what) {
  throw ConfigError("config \"" + key + "\": " + what);
}

// A JSON member as the text its flag takes.
std::string flagText(const std::string& key, const Setting& s, const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) {
    if (s.type != SettingType::Switch) badKey(key, "must be a string or a number, got a boolean");
    return v.get<bool>() ? "on" : "off";
  }
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_float()) return exactText(v.get<double>());
  badKey(key, std::string("must be a string or a number, got ") + v.type_name());
}

}  // namespace

RunConfig configFromJson(const Json& j) {
  if (!j.is_object()) throw ConfigError(std::string("config must be a JSON object, got ") + j.type_name());
  std::vector<std::string> args;
  if (const auto it = j.find("args"); it != j.end()) {
    if (!it->is_array()) badKey("args", std::string("must be an array of strings, got ") + it->type_name());
    for (const Json& a : *it) {
      if (!a.is_string()) badKey("args", std::string("must be an array of strings, got a ") + a.type_name());
      args.push_back(a.get<std::string>());
    }
    try {
      return parseRunArgs(args);
    } catch (const ConfigError& e) {
      badKey("args", e.what());
    }
  }
  // No flags recorded: the typed members, each where its setting applies (the
  // JSON writes defaults of sharded settings too).
  const Json* strategy = j.contains("strategy") ? &j.at("strategy") : nullptr;
  const std::optional<Strategy> s =
      strategy && strategy->is_string() ? parseStrategy(strategy->get<std::string>()) : std::optional<Strategy>();
  if (strategy && !s) badKey("strategy", "must be one of " + [] {
    std::string names;
    for (const std::string& n : strategyNames()) names += (names.empty() ? "" : ", ") + n;
    return names;
  }());
  if (const auto preset = j.find("model_preset"); preset != j.end()) {
    if (!preset->is_string()) badKey("model_preset", "must be a string");
    args.insert(args.end(), {"--model", preset->get<std::string>()});
  }
  for (const Setting& row : settings()) {
    if (!row.parses() || !row.json_key) continue;
    const auto it = j.find(row.json_key);
    if (it == j.end()) continue;
    if (row.json_key == std::string("model") && j.contains("model_preset")) continue;
    if (row.applies_text && s && !(row.applies.strategies & (1u << static_cast<unsigned>(*s)))) continue;
    if (row.json_key == std::string("profile") && j.value("clock", "") != "modeled") continue;
    if (row.type == SettingType::RankBlock) {
      if (!it->is_object() || !it->contains("rank") || !it->contains("block"))
        badKey(row.json_key, "must be an object with \"rank\" and \"block\"");
      args.insert(args.end(), {row.flag, flagText(row.json_key, row, it->at("rank")) + ":" +
                                             flagText(row.json_key, row, it->at("block"))});
      continue;
    }
    args.insert(args.end(), {row.flag, flagText(row.json_key, row, *it)});
  }
  try {
    RunConfig c = parseRunArgs(args);
    if (const auto io = j.find("io_dim"); io != j.end() && io->is_number_integer()) c.model.io_dim = io->get<int>();
    return c;
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("config: ") + e.what());
  }
}

}  // namespace shardscope
