// Settings rows: how the model is parallelized — the strategy, the ranks and
// tensor parallelism (hsdp's shard group sits with the FSDP rows).
#include <algorithm>
#include <sstream>

#include "common/errors.h"
#include "config/settings_rows.h"

namespace shardscope::rows {

namespace {

// --tp T: T divides P, and every split dimension divides by T (heads, the
// MLP's inner width, K/V heads and the vocabulary, which is split too).
void tensorParallelRule(const RunConfig& c) {
  const int t = c.tp;
  if (t <= 1) return;
  auto fail = [t](const std::string& what) {
    throw ConfigError("--tp " + std::to_string(t) + " " + what);
  };
  if (c.ranks % t != 0) {
    std::ostringstream os;
    os << "must divide --ranks " << c.ranks << "; use one of";
    for (int d = 1; d <= c.ranks; ++d)
      if (c.ranks % d == 0) os << ' ' << d;
    fail(os.str());
  }
  const ModelShape& m = c.model;
  const int ffn = m.ffn > 0 ? m.ffn : 4 * m.hidden;
  if (ffn % t != 0)
    fail("must divide the MLP's inner width " + std::to_string(ffn) + " (fc1 is split by output features)");
  if (m.kind != ModelKind::Gpt && m.preset.empty()) return;
  if (m.heads % t != 0)
    fail("must divide --heads " + std::to_string(m.heads) + " (each tensor-parallel rank computes heads/T heads)");
  if (m.kv_heads > 0 && m.kv_heads % t != 0)
    fail("must divide the model's " + std::to_string(m.kv_heads) + " key/value heads");
  // A published shape's vocabulary is padded to a multiple of T (as Megatron-LM pads it).
  if (m.preset.empty() && m.vocab % t != 0)
    fail("must divide --vocab " + std::to_string(m.vocab) +
         " (the embedding and the LM head are split by vocabulary rows)");
}

// --pp S: T·S divides P; every stage (every model chunk of an interleaved
// schedule) holds at least one block; the microbatches divide each
// data-parallel rank's samples (interleaved: a multiple of S, as Megatron-LM asks).
void pipelineRule(const RunConfig& c) {
  const int s = c.pp, t = std::max(1, c.tp);
  auto fail = [](const std::string& what) { throw ConfigError(what); };
  if (s > 1 && c.ranks % (t * s) != 0) {
    std::ostringstream os;
    os << "--pp " << s << " times --tp " << t << " must divide --ranks " << c.ranks << "; with --tp " << t
       << " use --pp one of";
    for (int d = 1; d * t <= c.ranks; ++d)
      if (c.ranks % (d * t) == 0) os << ' ' << d;
    fail(os.str());
  }
  const int v = c.virtualStages();
  if (s * v > c.model.layers)
    fail("--pp " + std::to_string(s) + (v > 1 ? " x --virtual-stages " + std::to_string(v) : std::string()) +
         " model chunks need at least as many blocks; the model has --layers " + std::to_string(c.model.layers));
  if (s > 1 && (!c.break_on.empty() || !c.break_units.empty()))
    fail("--pp " + std::to_string(s) + ": breakpoints stop every rank at the same op, which pipeline stages never "
         "reach together; step a pipeline with the window's pause and next (its stages stop at slots of the schedule)");
}

void microbatchRule(const RunConfig& c) {
  if (!c.pipelined()) return;  // one pass per step: --batch's own rule
  const int m = c.microbatchCount();
  const int dp = c.ranks % (std::max(1, c.tp) * std::max(1, c.pp)) == 0 ? c.dataParallelSize() : c.ranks;
  if (dp > 0 && c.batch % dp != 0) return;  // --batch's rule names that
  if (dp > 0 && c.batch % (dp * m) != 0) {
    const int per_rank = c.batch / std::max(1, dp);
    std::ostringstream os;
    os << "--microbatches " << m << " must divide the " << per_rank << " samples of each data-parallel rank (--batch "
       << c.batch << " over " << dp << (dp == 1 ? " rank" : " ranks") << "); try --batch " << dp * m * std::max(1, (per_rank + m - 1) / m);
    throw ConfigError(os.str());
  }
  if (c.pipelineSchedule() == PipelineSchedule::Interleaved && c.pp > 1 && m % c.pp != 0)
    throw ConfigError("--pp-schedule interleaved needs --microbatches a multiple of --pp " + std::to_string(c.pp) +
                      " (each round of microbatches visits every stage's chunks in turn); got " + std::to_string(m));
}

Range ranksFor(const RunConfig& c, std::string& hint) {
  switch (c.backend) {
    case Backend::Meta: hint = " with --backend meta"; break;
    case Backend::CudaEmulated: hint = " with --backend cuda-emulated (ranks share one GPU)"; break;
    case Backend::Cuda: hint = " with --backend cuda (one rank per visible GPU)"; break;
    case Backend::Cpu: {
      std::ostringstream os;
      os << " (CPU ranks are threads; --backend meta simulates up to " << ranksRange(Backend::Meta).hi << ")";
      hint = os.str();
      break;
    }
  }
  return ranksRange(c.backend);
}

const Setting kParallelRows[] = {
    {
        .flag = "--strategy", .json_key = "strategy", .type = SettingType::Choice, .metavar = "NAME",
        .default_text = "ddp",
        .help = "ddp, zero1, zero2, zero3 (= fsdp), hsdp: how model state is replicated or sharded across ranks",
        .choices = strategyNames, .one_of = true,
        .form = {.group = "Strategy", .label = "strategy"},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.strategy = choose(s, v, parseStrategy); },
        .text = [](const RunConfig& c) -> Text { return strategyName(c.strategy); },
        .json = [](const RunConfig& c) -> std::optional<Json> { return strategyName(c.strategy); },
    },
    {
        .flag = "--ranks", .json_key = "ranks", .metavar = "P", .default_text = "4",
        .help = "data-parallel ranks (CPU threads)",
        .range_for = ranksFor,
        .form = {.group = "Strategy", .label = "ranks", .max = 16384},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.ranks = parseInt32(s.flag, v); },
        .text = [](const RunConfig& c) { return num(c.ranks); },
        .number = [](const RunConfig& c) -> std::optional<double> { return c.ranks; },
        .json = [](const RunConfig& c) -> std::optional<Json> { return c.ranks; },
    },
    // Tensor parallelism: a new axis of the mesh. Written to the config JSON and
    // the flags only when T > 1, so a run without it reads as before.
    {
        .flag = "--tp", .json_key = "tp", .metavar = "T", .default_text = "1",
        .help = "tensor-parallel ranks (Megatron-LM): T consecutive ranks split each block's matrices, T divides P; "
                "the strategy runs along the P/T data-parallel ranks",
        .applies = {.backends = bit(Backend::Cpu) | bit(Backend::Meta)},
        .applies_text = "--backend cpu or meta (the CUDA kernels have no tensor-parallel path yet)",
        .range_for = [](const RunConfig& c, std::string& hint) {
          hint = " (T tensor-parallel ranks of the --ranks " + std::to_string(c.ranks) + ")";
          return Range{1, static_cast<double>(std::max(1, c.ranks))};
        },
        .form = {.group = "Strategy", .label = "tensor parallel", .max = 1024, .min = 1},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.tp = parseInt32(s.flag, v); },
        .text = [](const RunConfig& c) { return num(c.tp); },
        .written = [](const RunConfig& c) { return c.tp != 1; },
        .number = [](const RunConfig& c) -> std::optional<double> { return c.tp; },
        .given = [](const RunConfig& c) { return c.tp != 1; },
        .rule = tensorParallelRule,
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(c.tp != 1)) return std::nullopt;
          return c.tp;
        },
    },
    {
        .flag = "--sp", .json_key = "sp", .type = SettingType::Switch, .metavar = "on|off", .default_text = "off",
        .help = "sequence parallelism with --tp (Korthikanti et al. 2022): TP's all-reduces become reduce-scatter + "
                "all-gather, and the norms' and residual activations are split over the sequence (--tp 1: nothing to split)",
        .applies = {.backends = bit(Backend::Cpu) | bit(Backend::Meta), .gpt_only = true},
        .applies_text = "--backend cpu or meta with a token model (the CUDA backends have no tensor- or "
                        "sequence-parallel path)",
        .form = {.group = "Strategy", .label = "sequence parallel"},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.model.sequence_parallel = parseSwitch(s.flag, v); },
        .text = [](const RunConfig& c) { return onOff(c.model.sequence_parallel); },
        .written = [](const RunConfig& c) { return c.model.sequence_parallel; },
        .given = [](const RunConfig& c) { return c.model.sequence_parallel; },
        .rule = [](const RunConfig& c) {
          if (c.model.sequence_parallel && c.tp > 1 && c.model.seq % c.tp != 0)
            throw ConfigError("--sp on needs --tp " + std::to_string(c.tp) + " to divide the sequence " +
                              std::to_string(c.model.seq));
        },
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(c.model.sequence_parallel)) return std::nullopt;
          return true;
        },
    },
    // Pipeline parallelism: like --tp, written only when used.
    {
        .flag = "--pp", .json_key = "pp", .metavar = "S", .default_text = "1",
        .help = "pipeline stages: the layers split into S stages of contiguous blocks (the embedding on the first, "
                "the head on the last), activations sent stage to stage per microbatch; T·S divides P",
        .applies = {.backends = bit(Backend::Cpu) | bit(Backend::Meta)},
        .applies_text = "--backend cpu or meta (the CUDA backend has no pipeline path yet)",
        .range_for = [](const RunConfig& c, std::string& hint) {
          hint = " (S stages of the --ranks " + std::to_string(c.ranks) + ")";
          return Range{1, static_cast<double>(std::max(1, c.ranks))};
        },
        .form = {.group = "Strategy", .label = "pipeline stages", .max = 1024, .min = 1},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.pp = parseInt32(s.flag, v); },
        .text = [](const RunConfig& c) { return num(c.pp); },
        .written = [](const RunConfig& c) { return c.pp != 1; },
        .number = [](const RunConfig& c) -> std::optional<double> { return c.pp; },
        .given = [](const RunConfig& c) { return c.pp != 1; },
        .rule = pipelineRule,
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(c.pp != 1)) return std::nullopt;
          return c.pp;
        },
    },
    {
        .flag = "--microbatches", .json_key = "microbatches", .metavar = "M",
        .default_text = "1",
        .help = "microbatches per step: each data-parallel rank's samples split M ways, gradients accumulated over "
                "them (with --pp 1: gradient accumulation)",
        .applies = {.backends = bit(Backend::Cpu) | bit(Backend::Meta)},
        .applies_text = "--backend cpu or meta (the CUDA backend has no pipeline path yet)",
        .range = {1, 32767},  // a microbatch's number travels in Event::param (16 bits)
        .form = {.group = "Strategy", .label = "microbatches", .max = 32767, .min = 1},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.microbatches = parseInt32(s.flag, v); },
        .text = [](const RunConfig& c) { return num(c.microbatchCount()); },
        .written = [](const RunConfig& c) { return c.microbatches.has_value(); },
        .number = [](const RunConfig& c) -> std::optional<double> {
          return c.microbatches ? std::optional<double>(*c.microbatches) : std::nullopt;
        },
        .given = [](const RunConfig& c) { return c.microbatches.has_value(); },
        .rule = microbatchRule,
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(c.pipelined())) return std::nullopt;
          return c.microbatchCount();
        },
    },
    {
        .flag = "--pp-schedule", .json_key = "pp_schedule", .type = SettingType::Choice, .metavar = "NAME",
        .default_text = "1f1b",
        .help = "--pp: gpipe (all forwards, then all backwards), 1f1b (stage k: S-k warm-up forwards, then one "
                "forward, one backward), interleaved (1f1b over --virtual-stages chunks per stage); unused without --pp",
        .choices = pipelineScheduleNames,
        .form = {.group = "Strategy", .label = "pipeline schedule"},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) {
          c.pp_schedule = choose(s, v, parsePipelineSchedule);
        },
        .text = [](const RunConfig& c) -> Text { return pipelineScheduleName(c.pipelineSchedule()); },
        .written = [](const RunConfig& c) { return c.pp_schedule.has_value(); },
        .given = [](const RunConfig& c) { return c.pp_schedule.has_value(); },
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(c.pp > 1)) return std::nullopt;
          return pipelineScheduleName(c.pipelineSchedule());
        },
    },
    {
        .flag = "--virtual-stages", .json_key = "virtual_stages", .metavar = "V", .default_text = "2",
        .help = "--pp-schedule interleaved: model chunks per stage (Megatron-LM's virtual pipeline size); chunk c "
                "runs on stage c mod S; unused by the other schedules",
        .range = {2, 1024},
        .form = {.group = "Strategy", .label = "virtual stages", .max = 1024, .min = 2},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.virtual_stages = parseInt32(s.flag, v); },
        .text = [](const RunConfig& c) { return num(c.virtual_stages.value_or(2)); },
        .written = [](const RunConfig& c) { return c.virtual_stages.has_value(); },
        .number = [](const RunConfig& c) -> std::optional<double> {
          return c.virtual_stages ? std::optional<double>(*c.virtual_stages) : std::nullopt;
        },
        .given = [](const RunConfig& c) { return c.virtual_stages.has_value(); },
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(c.pp > 1 && c.pipelineSchedule() == PipelineSchedule::Interleaved)) return std::nullopt;
          return c.virtualStages();
        },
    },
};

}  // namespace

std::span<const Setting> parallelRows() { return kParallelRows; }

}  // namespace shardscope::rows
