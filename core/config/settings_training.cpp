// Settings rows: training — batch, steps, DDP's buckets, the optimizer, the
// random seed and the collective timeout.
#include <sstream>

#include "common/errors.h"
#include "config/settings_rows.h"

namespace shardscope::rows {

namespace {

// The global batch splits evenly over the data-parallel ranks (P, or P/T with --tp).
void batchDividesRule(const RunConfig& c) {
  if ((c.tp > 1 || c.pp > 1) && c.ranks % (c.tp * c.pp) == 0) {  // each data-parallel rank takes batch / (P/(T·S))
    const int dp = c.dataParallelSize();
    if (c.batch % dp != 0) {
      std::ostringstream os;
      os << "--batch " << c.batch << " must be a multiple of the data-parallel ranks --ranks/(--tp x --pp) = " << dp
         << " (the ranks of a tensor-parallel group and of a pipeline share their samples); try --batch "
         << (c.batch / dp + 1) * dp;
      throw ConfigError(os.str());
    }
    return;
  }
  if (c.batch % c.ranks != 0) {
    std::ostringstream os;
    os << "--batch " << c.batch << " must be a multiple of --ranks " << c.ranks
       << " (each rank takes batch/ranks samples); try --batch " << (c.batch / c.ranks + 1) * c.ranks;
    throw ConfigError(os.str());
  }
}

constexpr Applicability kNotSharded = {.strategies = ~kSharded};  // the form hides it; the CLI accepts and ignores it
constexpr Applicability kMainGrad = {.strategies = bit(Strategy::Ddp) | bit(Strategy::Zero1)};

const Setting kTrainingRows[] = {
    {
        .flag = "--batch", .json_key = "batch", .metavar = "B", .default_text = "32",
        .help = "global batch (samples), a multiple of P; by default 32, or the smallest multiple of P above it",
        .range = {1, 1 << 20},
        .form = {.group = "Training", .label = "global batch", .max = 1 << 22},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.batch = parseInt32(s.flag, v); },
        .text = [](const RunConfig& c) { return num(c.batch); },
        .number = [](const RunConfig& c) -> std::optional<double> { return c.batch; },
        .json = [](const RunConfig& c) -> std::optional<Json> { return c.batch; },
    },
    {
        .flag = "--steps", .json_key = "steps", .metavar = "S", .default_text = "3", .help = "training steps",
        .range = {1, 100000},
        .form = {.group = "Training", .label = "steps", .max = 1'000'000},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.steps = parseInt32(s.flag, v); },
        .text = [](const RunConfig& c) { return num(c.steps); },
        .number = [](const RunConfig& c) -> std::optional<double> { return c.steps; },
        .json = [](const RunConfig& c) -> std::optional<Json> { return c.steps; },
    },
    {
        .flag = "--bucket-mb", .json_key = "bucket_mb", .type = SettingType::Real, .metavar = "X",
        .default_text = "25", .help = "DDP bucket cap in MiB (PyTorch bucket_cap_mb)",
        .applies = kNotSharded, .range = {0, 4096, true, false, " MiB"},
        .form = {.group = "Communication", .label = "bucket cap", .max = 100000, .decimals = 2, .step = 1,
                 .suffix = " MiB"},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.bucket_mb = parseDouble(s.flag, v); },
        .text = [](const RunConfig& c) -> Text { return exactText(c.bucket_mb); },
        .number = [](const RunConfig& c) -> std::optional<double> { return c.bucket_mb; },
        .json = [](const RunConfig& c) -> std::optional<Json> { return c.bucket_mb; },
    },
    {
        .flag = "--first-bucket-mb", .json_key = "first_bucket_mb", .type = SettingType::Real, .metavar = "X",
        .default_text = "1", .help = "cap of the first bucket in MiB",
        .applies = kNotSharded, .range = {0, 4096, true, false, " MiB"},
        .form = {.group = "Communication", .label = "first bucket", .max = 100000, .decimals = 2, .step = 0.5,
                 .suffix = " MiB"},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) {
          c.first_bucket_mb = parseDouble(s.flag, v);
        },
        .text = [](const RunConfig& c) -> Text { return exactText(c.first_bucket_mb); },
        .number = [](const RunConfig& c) -> std::optional<double> { return c.first_bucket_mb; },
        .json = [](const RunConfig& c) -> std::optional<Json> { return c.first_bucket_mb; },
    },
    // Megatron-LM's main_grad: gradients accumulate, are reduced and reach the
    // optimizer in fp32 (18 bytes per parameter under DDP, not 16).
    {
        .flag = "--grad-dtype", .json_key = "grad_dtype", .type = SettingType::Choice, .metavar = "DTYPE",
        .default_text = "bf16",
        .help = "ddp/zero1: dtype of the gradient buffers, their all-reduce or reduce-scatter and the optimizer's "
                "input: bf16, or fp32 as Megatron-LM's main_grad (zero3/fsdp/hsdp: --reduce-dtype)",
        .choices = commDTypeNames,
        .applies = kMainGrad, .applies_text = "--strategy ddp or zero1",
        .not_applies_hint = " (zero3/fsdp/hsdp reduce in fp32 with --reduce-dtype fp32)",
        .form = {.group = "Communication", .label = "grad dtype"},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) {
          c.grad_dtype = choose(s, v, parseCommDType);
        },
        .text = [](const RunConfig& c) -> Text { return commDTypeName(c.grad_dtype.value_or(CommDType::Bf16)); },
        .written = [](const RunConfig& c) { return c.grad_dtype.has_value(); },
        .given = [](const RunConfig& c) { return c.grad_dtype.has_value(); },
        .rule = [](const RunConfig& c) {
          if (c.grad_dtype == CommDType::Fp32 && isGpuBackend(c.backend))
            throw ConfigError("--grad-dtype fp32 applies to --backend cpu or meta (the CUDA path keeps bf16 gradients)");
        },
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(c.fp32Grads())) return std::nullopt;
          return commDTypeName(CommDType::Fp32);
        },
    },
    {
        .flag = "--lr", .json_key = "lr", .type = SettingType::Real, .metavar = "X", .default_text = "0.0001",
        .help = "AdamW learning rate", .range = {0, 10, true, true},
        .form = {.group = "Training", .label = "learning rate", .max = 100, .decimals = 6, .step = 1e-4},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.lr = parseDouble(s.flag, v); },
        .text = [](const RunConfig& c) -> Text { return exactText(c.lr); },
        .number = [](const RunConfig& c) -> std::optional<double> { return c.lr; },
        .json = [](const RunConfig& c) -> std::optional<Json> { return c.lr; },
    },
    {
        .flag = "--seed", .json_key = "seed", .type = SettingType::RngState, .metavar = "N", .default_text = "1",
        .help = "random seed of the data, the initial weights and the teacher, 0..2^62",
        .form = {.group = "Training", .label = "seed", .max = 2147483647},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) {
          const long long seed = parseInt(s.flag, v);
          requireRange(s.flag, seed, 0, (1LL << 62));
          c.seed = static_cast<uint64_t>(seed);
        },
        .text = [](const RunConfig& c) -> Text { return std::to_string(c.seed); },
        .json = [](const RunConfig& c) -> std::optional<Json> { return c.seed; },
    },
    {
        .flag = "--timeout-ms", .json_key = "timeout_ms", .metavar = "T", .default_text = "3000",
        .help = "collective fingerprint / readiness timeout (scaled up to 10x when rank threads far outnumber cores)",
        .range = {100, 600000},
        .form = {.group = "Communication", .label = "timeout", .max = 10'000'000, .suffix = " ms"},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.timeout_ms = parseInt32(s.flag, v); },
        .text = [](const RunConfig& c) { return num(c.timeout_ms); },
        .number = [](const RunConfig& c) -> std::optional<double> { return c.timeout_ms; },
        .rule = batchDividesRule,
        .json = [](const RunConfig& c) -> std::optional<Json> { return c.timeout_ms; },
    },
};

}  // namespace

std::span<const Setting> trainingRows() { return kTrainingRows; }

}  // namespace shardscope::rows
