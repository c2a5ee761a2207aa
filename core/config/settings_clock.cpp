// Settings rows: the clock (measured or modeled under a hardware profile) and
// the meta backend's replication of symmetric ranks.
#include "config/settings_rows.h"

namespace shardscope::rows {

namespace {

const Setting kClockRows[] = {
    {
        .flag = "--clock", .json_key = "clock", .type = SettingType::Choice, .metavar = "KIND",
        .default_text = "measured",
        .help = "measured (this machine's time) or modeled (op costs under a hardware profile; deterministic)",
        .choices = clockNames,
        .form = {.group = "Clock and backend", .label = "clock"},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.clock = choose(s, v, parseClock); },
        .text = [](const RunConfig& c) -> Text { return clockName(c.clock); },
        .json = [](const RunConfig& c) -> std::optional<Json> { return clockName(c.clock); },
    },
    {
        .flag = "--profile", .json_key = "profile", .type = SettingType::Text, .metavar = "NAME",
        .default_text = "h100-sxm",
        .help = "modeled clock's hardware: h100-sxm, h200, a100-40gb-pcie, rtx4090-pcie, cluster-25gbe, this-cpu, or "
                "a .json",
        .applies = {.modeled_clock = true},
        .applies_text = "--clock modeled (a measured run takes this machine's time)",
        .form = {.group = "Clock and backend", .label = "profile", .suggestions = "profiles"},
        .parse = [](RunConfig& c, const Setting&, const std::string& v) { c.profile = v; },
        .text = [](const RunConfig& c) -> Text { return c.profileName(); },
        .written = [](const RunConfig& c) { return c.profile.has_value(); },
        .given = [](const RunConfig& c) { return c.profile.has_value(); },
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(c.clock == ClockKind::Modeled)) return std::nullopt;
          return c.profileName();
        },
    },
    {
        .flag = "--replicate", .type = SettingType::Switch, .metavar = "on|off", .default_text = "on",
        .help = "meta runs of 64+ symmetric ranks: simulate rank 0 (with --pp, one rank per stage) once and copy it "
                "to the others (same results)",
        .applies = {.backends = bit(Backend::Meta)},
        .form = {.group = "Clock and backend", .label = "simulate symmetric ranks once"},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.replicate = parseSwitch(s.flag, v); },
        .text = [](const RunConfig& c) { return onOff(c.replicate); },
        .written = [](const RunConfig& c) { return !c.replicate; },
        .rule = [](const RunConfig& c) {
          // Every rank a thread of its own: past a thousand, a machine's threads run out.
          if (c.backend == Backend::Meta && !c.replicate && c.ranks > kMetaRanksSimulatedEach)
            throw ConfigError("--replicate off runs every one of the --ranks " + std::to_string(c.ranks) +
                              " as threads; at most " + std::to_string(kMetaRanksSimulatedEach) +
                              " ranks can be simulated each (leave --replicate on)");
        },
    },
};

}  // namespace

std::span<const Setting> clockRows() { return kClockRows; }

}  // namespace shardscope::rows
