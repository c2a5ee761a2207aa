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
        .json = [](const RunConfig& c, Json& j) { j["strategy"] = strategyName(c.strategy); },
    },
    {
        .flag = "--ranks", .json_key = "ranks", .metavar = "P", .default_text = "4",
        .help = "data-parallel ranks (CPU threads)",
        .range_for = ranksFor,
        .form = {.group = "Strategy", .label = "ranks", .max = 1024},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.ranks = parseInt32(s.flag, v); },
        .text = [](const RunConfig& c) { return num(c.ranks); },
        .number = [](const RunConfig& c) -> std::optional<double> { return c.ranks; },
        .json = [](const RunConfig& c, Json& j) { j["ranks"] = c.ranks; },
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
        .json = [](const RunConfig& c, Json& j) {
          if (c.tp != 1) j["tp"] = c.tp;
        },
    },
};

}  // namespace

std::span<const Setting> parallelRows() { return kParallelRows; }

}  // namespace shardscope::rows
