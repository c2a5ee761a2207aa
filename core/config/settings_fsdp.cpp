// Settings rows: sharded data parallel (zero3, fsdp, hsdp) — FSDP units, the
// MixedPrecision dtypes of their collectives, and hsdp's shard group. Each is
// unset unless given, so a knob given to ddp can be named in the error.
#include <sstream>

#include "common/errors.h"
#include "config/settings_rows.h"

namespace shardscope::rows {

namespace {

constexpr const char* kUnitsApply = "--strategy zero3, fsdp or hsdp (FSDP units)";
constexpr Applicability kUnits = {.strategies = kSharded};

// "--shard-group G must divide N; use one of 1 2 …"
[[noreturn]] void shardGroupDivides(int g, int n, const std::string& what) {
  std::ostringstream os;
  os << "--shard-group " << g << " must divide " << what << n << "; use one of";
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) os << ' ' << d;
  throw ConfigError(os.str());
}

void shardGroupRule(const RunConfig& c) {
  if (!isHybrid(c.strategy)) return;
  if (!c.shard_group) throw ConfigError("--strategy hsdp needs --shard-group G (ranks per shard group, G divides --ranks)");
  const int g = *c.shard_group;
  if (c.tp > 1 || c.pp > 1) {  // the shard group lies along the data-parallel axis
    const int dp = c.dataParallelSize();
    if (g < 1 || g > dp || dp % g != 0) shardGroupDivides(g, dp, "the data-parallel ranks --ranks/(--tp x --pp) = ");
    return;
  }
  if (g < 1 || g > c.ranks || c.ranks % g != 0) shardGroupDivides(g, c.ranks, "--ranks ");
}

const Setting kFsdpRows[] = {
    {
        .flag = "--unit-blocks", .json_key = "unit_blocks", .metavar = "K", .default_text = "1",
        .help = "zero3/fsdp/hsdp: blocks per FSDP unit, 1..L",
        .applies = kUnits, .applies_text = kUnitsApply,
        .range_for = [](const RunConfig& c, std::string& hint) {
          std::ostringstream os;
          os << " (the model has --layers " << c.model.layers << " blocks; K groups K consecutive blocks per unit)";
          hint = os.str();
          return Range{1, static_cast<double>(c.model.layers)};
        },
        .form = {.group = "FSDP units", .label = "blocks/unit", .max = 4096},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.unit_blocks = parseInt32(s.flag, v); },
        .text = [](const RunConfig& c) { return num(c.unitBlocks()); },
        .written = [](const RunConfig& c) { return c.unit_blocks.has_value(); },
        .number = [](const RunConfig& c) -> std::optional<double> {
          return c.unit_blocks ? std::optional<double>(*c.unit_blocks) : std::nullopt;
        },
        .given = [](const RunConfig& c) { return c.unit_blocks.has_value(); },
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(c.isSharded())) return std::nullopt;
          return c.unitBlocks();
        },
    },
    {
        .flag = "--prefetch", .json_key = "prefetch", .type = SettingType::Choice, .metavar = "MODE",
        .default_text = "both",
        .help = "zero3/fsdp/hsdp: gather the next unit while this one computes: none, forward, backward, both",
        .choices = prefetchNames, .one_of = true,
        .applies = kUnits, .applies_text = kUnitsApply,
        .form = {.group = "FSDP units", .label = "prefetch"},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.prefetch = choose(s, v, parsePrefetch); },
        .text = [](const RunConfig& c) -> Text { return prefetchName(c.prefetchMode()); },
        .written = [](const RunConfig& c) { return c.prefetch.has_value(); },
        .given = [](const RunConfig& c) { return c.prefetch.has_value(); },
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(c.isSharded())) return std::nullopt;
          return prefetchName(c.prefetchMode());
        },
    },
    {
        .flag = "--reshard-after-forward", .json_key = "reshard_after_forward", .type = SettingType::Switch,
        .metavar = "on|off", .default_text = "on",
        .help = "zero3/fsdp/hsdp: free gathered params after forward (off = SHARD_GRAD_OP: keep them until backward)",
        .applies = kUnits, .applies_text = kUnitsApply,
        .form = {.group = "FSDP units", .label = "reshard after forward"},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) {
          c.reshard_after_forward = parseSwitch(s.flag, v);
        },
        .text = [](const RunConfig& c) { return onOff(c.reshardAfterForward()); },
        .written = [](const RunConfig& c) { return c.reshard_after_forward.has_value(); },
        .given = [](const RunConfig& c) { return c.reshard_after_forward.has_value(); },
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(c.isSharded())) return std::nullopt;
          return c.reshardAfterForward();
        },
    },
    {
        .flag = "--wrap", .json_key = "wrap", .type = SettingType::Choice, .metavar = "POLICY",
        .default_text = "block",
        .help = "zero3/fsdp/hsdp: what one FSDP unit wraps: block (--unit-blocks K blocks) or linear (every Linear "
                "layer its own unit, as ModuleWrapPolicy({nn.Linear}))",
        .choices = wrapNames,
        .applies = kUnits, .applies_text = kUnitsApply,
        .form = {.group = "FSDP units", .label = "wrap"},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.wrap = choose(s, v, parseWrap); },
        .text = [](const RunConfig& c) -> Text { return wrapName(c.wrapPolicy()); },
        .written = [](const RunConfig& c) { return c.wrap.has_value(); },
        .given = [](const RunConfig& c) { return c.wrap.has_value(); },
        .rule = [](const RunConfig& c) {
          if (c.wrapPolicy() == Wrap::Linear && c.unit_blocks && *c.unit_blocks != 1)
            throw ConfigError("--unit-blocks applies to --wrap block (--wrap linear makes every Linear its own unit)");
        },
        // Written only when it differs from block wrapping: a block-wrapped trace keeps its bytes.
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(c.isSharded() && c.wrapPolicy() != Wrap::Block)) return std::nullopt;
          return wrapName(c.wrapPolicy());
        },
    },
    // FSDP MixedPrecision: the dtypes of the reduce-scatters and the all-gathers.
    {
        .flag = "--reduce-dtype", .json_key = "reduce_dtype", .type = SettingType::Choice, .metavar = "DTYPE",
        .default_text = "bf16",
        .help = "zero3/fsdp/hsdp: dtype gradients are reduce-scattered in (MixedPrecision reduce_dtype): bf16 or fp32",
        .choices = commDTypeNames,
        .applies = kUnits, .applies_text = kUnitsApply,
        .form = {.group = "FSDP units", .label = "reduce dtype"},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) {
          c.reduce_dtype = choose(s, v, parseCommDType);
        },
        .text = [](const RunConfig& c) -> Text { return commDTypeName(c.reduceDType()); },
        .written = [](const RunConfig& c) { return c.reduce_dtype.has_value(); },
        .given = [](const RunConfig& c) { return c.reduce_dtype.has_value(); },
        .rule = [](const RunConfig& c) {
          if (c.reduceDType() == CommDType::Fp32 && isGpuBackend(c.backend))
            throw ConfigError("--reduce-dtype fp32 applies to --backend cpu or meta (the CUDA path reduces bf16 only)");
        },
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(c.isSharded() && c.reduceDType() != CommDType::Bf16)) return std::nullopt;
          return commDTypeName(c.reduceDType());
        },
    },
    {
        .flag = "--param-dtype", .json_key = "param_dtype", .type = SettingType::Choice, .metavar = "DTYPE",
        .default_text = "bf16",
        .help = "zero3/fsdp/hsdp: dtype parameters are all-gathered in (MixedPrecision param_dtype): bf16 or fp32",
        .choices = commDTypeNames,
        .applies = kUnits, .applies_text = kUnitsApply,
        .form = {.group = "FSDP units", .label = "param dtype"},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) {
          c.param_dtype = choose(s, v, parseCommDType);
        },
        .text = [](const RunConfig& c) -> Text { return commDTypeName(c.paramDType()); },
        .written = [](const RunConfig& c) { return c.param_dtype.has_value(); },
        .given = [](const RunConfig& c) { return c.param_dtype.has_value(); },
        .rule = [](const RunConfig& c) {
          if (c.paramDType() == CommDType::Fp32 && isGpuBackend(c.backend))
            throw ConfigError("--param-dtype fp32 applies to --backend cpu or meta (the CUDA path gathers bf16 only)");
        },
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(c.isSharded() && c.paramDType() != CommDType::Bf16)) return std::nullopt;
          return commDTypeName(c.paramDType());
        },
    },
    {
        .flag = "--shard-group", .json_key = "shard_group", .metavar = "G",
        .help = "hsdp: ranks per shard group, divides P",
        .applies = {.strategies = kHybrid}, .applies_text = "--strategy hsdp only",
        .not_applies_hint = " (zero3/fsdp shard over all --ranks)",
        .form = {.group = "Strategy", .label = "shard group", .max = 1024},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.shard_group = parseInt32(s.flag, v); },
        .text = [](const RunConfig& c) { return num(c.shard_group.value_or(c.shardGroupSize())); },
        .written = [](const RunConfig& c) { return c.shard_group.has_value(); },
        .given = [](const RunConfig& c) { return c.shard_group.has_value(); },
        .rule = shardGroupRule,
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(c.isSharded())) return std::nullopt;
          return c.shardGroupSize();
        },
    },
};

}  // namespace

std::span<const Setting> fsdpRows() { return kFsdpRows; }

}  // namespace shardscope::rows
