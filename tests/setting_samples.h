// Test samples generated from the settings table, so a new row is covered
// with no test code: for each row, the flags of a run it applies to, and
// values other than that run's own that its flag accepts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/errors.h"
#include "config/config_json.h"
#include "config/run_config.h"
#include "config/settings.h"

namespace shardscope::testing {

// Flags of a run the row applies to: the first strategy, backend (not a GPU
// one), model and clock its applicability allows.
inline std::vector<std::string> applyingFlags(const Setting& row) {
  std::vector<std::string> flags;
  const Applicability& a = row.applies;
  if (!(a.strategies & (1u << static_cast<unsigned>(Strategy::Ddp)))) {
    for (Strategy s : allStrategies()) {
      if (!(a.strategies & (1u << static_cast<unsigned>(s)))) continue;
      flags.insert(flags.end(), {"--strategy", strategyName(s)});
      if (isHybrid(s)) flags.insert(flags.end(), {"--shard-group", "2"});
      break;
    }
  }
  if (!(a.backends & (1u << static_cast<unsigned>(Backend::Cpu)))) {
    for (Backend b : allBackends()) {
      if (isGpuBackend(b) || !(a.backends & (1u << static_cast<unsigned>(b)))) continue;
      flags.insert(flags.end(), {"--backend", backendName(b)});
      break;
    }
  }
  if (a.gpt_only) flags.insert(flags.end(), {"--model", "gpt"});
  if (a.modeled_clock) flags.insert(flags.end(), {"--clock", "modeled"});
  return flags;
}

// Values to try for the row, other than `current` (its text in the base run).
// Text rows try `items` (what the form offers) before a pool of typical texts.
inline std::vector<std::string> candidateValues(const Setting& row, const std::optional<std::string>& current,
                                                const std::vector<std::string>& items = {}) {
  std::vector<std::string> out;
  switch (row.type) {
    case SettingType::Int:
    case SettingType::RngState: {
      const long long n = current ? std::stoll(*current) : 1;
      for (long long v : {2 * n, n + 1, n - 1, 2LL, 1LL, 3LL}) out.push_back(std::to_string(v));
      break;
    }
    case SettingType::Real: {
      const double x = current ? std::stod(*current) : 1.0;
      for (double v : {2 * x, x / 2, 0.5, 2.0}) out.push_back(exactText(v));
      break;
    }
    case SettingType::Choice: out = row.choices(); break;
    case SettingType::Switch: out = {"off", "on"}; break;
    case SettingType::Text:
      out = items;
      for (const char* v : {"h200", "file:///tmp/shardscope-rdzv", "job-7", "10.0.0.2", "5555", "out.json"})
        out.emplace_back(v);
      break;
    case SettingType::RankBlock: out = {"1:2", "1:1", "0:0"}; break;
  }
  std::erase_if(out, [&](const std::string& v) { return current && v == *current; });
  return out;
}

struct SettingSample {
  std::vector<std::string> base;  // flags of a run the row applies to
  std::string value;              // the row's flag's value, other than the base run's
  RunConfig config;               // parseRunArgs(base + {flag, value})
};

// A sample the CLI accepts as a whole run (parse and validate), and whose
// value reads back as given; nullopt when no candidate is such a run.
inline std::optional<SettingSample> validSample(const Setting& row, const std::vector<std::string>& items = {}) {
  SettingSample s;
  s.base = applyingFlags(row);
  const RunConfig base = parseRunArgs(s.base);
  for (const std::string& v : candidateValues(row, row.get(base), items)) {
    std::vector<std::string> flags = s.base;
    flags.insert(flags.end(), {row.flag, v});
    try {
      s.config = parseRunArgs(flags);
    } catch (const ConfigError&) {
      continue;
    }
    if (row.get(s.config) != std::optional<std::string>(v) && !row.repeatable) continue;
    s.value = v;
    return s;
  }
  return std::nullopt;
}

// The run as every row reads it, and its config JSON without the flags:
// two configs that mean the same run compare equal.
inline std::string meaning(const RunConfig& c) {
  std::string out;
  for (const Setting& row : settings()) {
    std::string v = "-";
    if (row.repeatable) {
      v.clear();
      for (const std::string& a : row.args(c)) v += a + ",";
    } else if (const std::optional<std::string> text = row.get(c)) {
      v = *text;
    }
    out += (row.flag ? row.flag : row.json_key ? row.json_key : "?") + std::string("=") + v + "\n";
  }
  nlohmann::ordered_json json = configToJson(c);
  json.erase("args");
  json.erase("command");
  return out + json.dump();
}

}  // namespace shardscope::testing
