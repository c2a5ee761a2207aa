// What the settings_*.cpp row files share: the parse helpers that give every
// flag the same error wording, and the groups of rows settings.cpp joins into
// the table (in this order, which is the config JSON's member order).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config/settings.h"

namespace shardscope::rows {

using Json = nlohmann::ordered_json;
using Text = std::optional<std::string>;

constexpr unsigned bit(Strategy s) { return 1u << static_cast<unsigned>(s); }
constexpr unsigned bit(Backend b) { return 1u << static_cast<unsigned>(b); }
constexpr unsigned kSharded = bit(Strategy::Zero3) | bit(Strategy::Fsdp) | bit(Strategy::Hsdp);
constexpr unsigned kHybrid = bit(Strategy::Hsdp);

long long parseInt(const std::string& flag, const std::string& text);
int parseInt32(const std::string& flag, const std::string& text);
double parseDouble(const std::string& flag, const std::string& text);
bool parseSwitch(const std::string& flag, const std::string& v);
std::string joinComma(const std::vector<std::string>& names);
// A Choice flag's parse error, in the row's style.
[[noreturn]] void badChoice(const Setting& s, const std::string& v);
// An output file's name: an empty one would silently write nothing.
std::string outputPath(const Setting& s, const std::string& v);

template <class E>
E choose(const Setting& s, const std::string& v, std::optional<E> (*parse)(std::string_view)) {
  const std::optional<E> e = parse(v);
  if (!e) badChoice(s, v);
  return *e;
}

inline Text num(long long v) { return std::to_string(v); }
inline Text onOff(bool v) { return std::string(v ? "on" : "off"); }
inline bool published(const RunConfig& c) { return !c.model.preset.empty(); }
inline bool gpt(const RunConfig& c) { return c.model.kind == ModelKind::Gpt; }

// The groups, each a short list of rows (settings_<group>.cpp).
std::span<const Setting> parallelRows();  // strategy, ranks, tp
std::span<const Setting> modelRows();     // the model's shape and what it keeps for backward
std::span<const Setting> trainingRows();  // batch, steps, buckets, lr, seed, timeout
std::span<const Setting> clockRows();     // clock, profile
std::span<const Setting> fsdpRows();      // FSDP units, MixedPrecision, hsdp's shard group
std::span<const Setting> debugRows();     // fault injection, breakpoints, meta replication
std::span<const Setting> launchRows();    // where ranks run, live serving, output files

}  // namespace shardscope::rows
