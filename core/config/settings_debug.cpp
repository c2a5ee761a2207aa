// Settings rows: teaching a failure — a rank-dependent branch injected on
// purpose, and breakpoints that stop all ranks in lockstep.
#include "common/errors.h"
#include "config/settings_rows.h"

namespace shardscope::rows {

namespace {

void setInjectBranch(RunConfig& c, const Setting& s, const std::string& v) {
  const auto colon = v.find(':');
  if (colon == std::string::npos) throw ConfigError("--inject-branch expects RANK:BLOCK (e.g. 1:3), got '" + v + "'");
  c.inject_branch = InjectBranch{parseInt32(s.flag, v.substr(0, colon)), parseInt32(s.flag, v.substr(colon + 1))};
}

const Setting kDebugRows[] = {
    {
        .flag = "--inject-branch", .json_key = "inject_branch", .type = SettingType::RankBlock, .metavar = "R:L",
        .help = "rank R skips block L (a rank-dependent branch)",
        .form = {.group = "Fault injection", .label = "rank skips a block", .settings_key = "inject"},
        .parse = setInjectBranch,
        .text = [](const RunConfig& c) -> Text {
          if (!c.inject_branch) return std::nullopt;
          return std::to_string(c.inject_branch->rank) + ":" + std::to_string(c.inject_branch->block);
        },
        .rule = [](const RunConfig& c) {
          if (!c.inject_branch) return;
          requireRange("--inject-branch RANK", c.inject_branch->rank, 0, c.ranks - 1);
          requireRange("--inject-branch BLOCK", c.inject_branch->block, 0, c.model.layers - 1);
        },
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!c.inject_branch) return std::nullopt;
          return Json{{"rank", c.inject_branch->rank}, {"block", c.inject_branch->block}};
        },
    },
    {
        .flag = "--break-on", .type = SettingType::Choice, .metavar = "OP",
        .help = "stop all ranks in lockstep before each forward, backward or optimizer_step op, each free of gathered "
                "parameters or each all_gather / reduce_scatter launch; print their state",
        .choices = breakOpNames, .choice_hint = " (compute ops, frees, launches)",
        .repeatable = true, .in_presets = false,
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) {
          c.break_on.push_back(choose(s, v, parseBreakOp));
        },
        .values = [](const RunConfig& c) {
          std::vector<std::string> a;
          for (BreakOp op : c.break_on) a.push_back(breakOpName(op));
          return a;
        },
    },
    {
        .flag = "--break-unit", .metavar = "U", .help = "stop before ops of FSDP unit U (block U otherwise), 0..L+1",
        .repeatable = true, .in_presets = false,
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) {
          c.break_units.push_back(parseInt32(s.flag, v));
        },
        .values = [](const RunConfig& c) {
          std::vector<std::string> a;
          for (int u : c.break_units) a.push_back(std::to_string(u));
          return a;
        },
        .rule = [](const RunConfig& c) {
          for (int u : c.break_units) requireRange("--break-unit", u, 0, c.model.layers + 1);
        },
    },
};

}  // namespace

std::span<const Setting> debugRows() { return kDebugRows; }

}  // namespace shardscope::rows
