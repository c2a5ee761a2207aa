#include "engine/run_config.h"

#include <charconv>
#include <sstream>

#include "common/errors.h"
#include "model/model_presets.h"

namespace shardscope {

namespace {

const char* const kStrategies[] = {"ddp", "zero1", "zero2", "zero3", "fsdp", "hsdp"};
const char* const kAvailable[] = {"ddp", "zero1", "zero2", "zero3", "fsdp", "hsdp"};

bool contains(const auto& list, const std::string& s) {
  for (const char* x : list)
    if (s == x) return true;
  return false;
}

void requireRange(const char* flag, long long v, long long lo, long long hi, const char* hint = "") {
  if (v < lo || v > hi) {
    std::ostringstream os;
    os << flag << " must be in " << lo << ".." << hi << ", got " << v << hint;
    throw ConfigError(os.str());
  }
}

long long parseInt(const std::string& flag, const std::string& text) {
  long long v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size())
    throw ConfigError(flag + " expects an integer, got '" + text + "'");
  if (v < -(1LL << 31) || v > (1LL << 62))
    throw ConfigError(flag + " value " + text + " is out of range (see --help for the allowed range)");
  return v;
}

int parseInt32(const std::string& flag, const std::string& text) {
  const long long v = parseInt(flag, text);
  if (v > (1LL << 31) - 1)
    throw ConfigError(flag + " value " + text + " is out of range (see --help for the allowed range)");
  return static_cast<int>(v);
}

double parseDouble(const std::string& flag, const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw ConfigError(flag + " expects a number, got '" + text + "'");
}

Prefetch parsePrefetch(const std::string& v) {
  if (v == "none") return Prefetch::None;
  if (v == "forward") return Prefetch::Forward;
  if (v == "backward") return Prefetch::Backward;
  if (v == "both") return Prefetch::Both;
  throw ConfigError("--prefetch must be one of none, forward, backward, both; got '" + v + "'");
}

}  // namespace

std::string backendName(Backend b) {
  switch (b) {
    case Backend::Cpu: return "cpu";
    case Backend::Meta: return "meta";
    case Backend::Cuda: return "cuda";
    case Backend::CudaEmulated: return "cuda-emulated";
  }
  return "?";
}

bool isGpuBackend(Backend b) { return b == Backend::Cuda || b == Backend::CudaEmulated; }

std::string prefetchName(Prefetch p) {
  switch (p) {
    case Prefetch::None: return "none";
    case Prefetch::Forward: return "forward";
    case Prefetch::Backward: return "backward";
    case Prefetch::Both: return "both";
  }
  return "?";
}

void validate(const RunConfig& c) {
  if (!contains(kStrategies, c.strategy))
    throw ConfigError("--strategy must be one of ddp, zero1, zero2, zero3, fsdp, hsdp; got '" +
                      c.strategy + "'");
  if (!contains(kAvailable, c.strategy))
    throw ConfigError("--strategy " + c.strategy +
                      " is not yet available in this build; available: ddp");
  if (c.backend == Backend::Meta) {
    requireRange("--ranks", c.ranks, 1, 1024, " with --backend meta");
    if (c.clock != ClockKind::Modeled)
      throw ConfigError("--backend meta runs no math, so it needs --clock modeled");
  } else if (c.backend == Backend::CudaEmulated) {
    requireRange("--ranks", c.ranks, 1, 16, " with --backend cuda-emulated (ranks share one GPU)");
  } else if (c.backend == Backend::Cuda) {
    requireRange("--ranks", c.ranks, 1, 64, " with --backend cuda (one rank per visible GPU)");
  } else {
    requireRange("--ranks", c.ranks, 1, 64, " (CPU ranks are threads; --backend meta simulates up to 256)");
  }
  if (isGpuBackend(c.backend) && c.clock != ClockKind::Measured)
    throw ConfigError("--backend " + backendName(c.backend) +
                      " measures the GPU (CUDA events): use --clock measured, or --backend meta with a --profile "
                      "to model other hardware");
  requireRange("--layers", c.model.layers, 1, 256);
  requireRange("--hidden", c.model.hidden, 8, 8192);
  if (!c.model.preset.empty() && c.backend != Backend::Meta)
    throw ConfigError("--model " + c.model.preset +
                      " is a published shape for --backend meta (the CPU GPT model is GPT-2 style: use --model gpt "
                      "with --layers/--hidden/--heads)");
  if (c.model.kind == ModelKind::Gpt) {
    requireRange("--heads", c.model.heads, 1, 256);
    requireRange("--seq", c.model.seq, 1, 4096);
    requireRange("--vocab", c.model.vocab, 256, 1 << 20, " (byte-level tokens need 256 ids)");
    if (c.model.hidden % c.model.heads != 0) {
      std::ostringstream os;
      os << "--hidden " << c.model.hidden << " must be a multiple of --heads " << c.model.heads
         << " (head dim = hidden / heads)";
      throw ConfigError(os.str());
    }
  }
  requireRange("--steps", c.steps, 1, 100000);
  requireRange("--batch", c.batch, 1, 1 << 20);
  requireRange("--timeout-ms", c.timeout_ms, 100, 600000);
  if (c.batch % c.ranks != 0) {
    std::ostringstream os;
    os << "--batch " << c.batch << " must be a multiple of --ranks " << c.ranks
       << " (each rank takes batch/ranks samples); try --batch " << (c.batch / c.ranks + 1) * c.ranks;
    throw ConfigError(os.str());
  }
  if (!(c.bucket_mb > 0.0 && c.bucket_mb <= 4096.0))
    throw ConfigError("--bucket-mb must be in (0, 4096] MiB, got " + std::to_string(c.bucket_mb));
  if (!(c.first_bucket_mb > 0.0 && c.first_bucket_mb <= 4096.0))
    throw ConfigError("--first-bucket-mb must be in (0, 4096] MiB, got " +
                      std::to_string(c.first_bucket_mb));
  if (!(c.lr > 0.0 && c.lr < 10.0))
    throw ConfigError("--lr must be in (0, 10), got " + std::to_string(c.lr));
  if (c.profile && c.clock != ClockKind::Modeled)
    throw ConfigError("--profile applies to --clock modeled (a measured run takes this machine's time)");
  const bool sharded = c.isSharded();
  for (const auto& [given, flag] : {std::pair{c.unit_blocks.has_value(), "--unit-blocks"},
                                    std::pair{c.prefetch.has_value(), "--prefetch"},
                                    std::pair{c.reshard_after_forward.has_value(), "--reshard-after-forward"}}) {
    if (given && !sharded)
      throw ConfigError(std::string(flag) + " applies to --strategy zero3, fsdp or hsdp (FSDP units), not " +
                        c.strategy);
  }
  if (c.unit_blocks) {
    std::ostringstream hint;
    hint << " (the model has --layers " << c.model.layers << " blocks; K groups K consecutive blocks per unit)";
    requireRange("--unit-blocks", *c.unit_blocks, 1, c.model.layers, hint.str().c_str());
  }
  if (c.shard_group && c.strategy != "hsdp")
    throw ConfigError("--shard-group applies to --strategy hsdp only, not " + c.strategy +
                      " (zero3/fsdp shard over all --ranks)");
  if (c.strategy == "hsdp") {
    if (!c.shard_group)
      throw ConfigError("--strategy hsdp needs --shard-group G (ranks per shard group, G divides --ranks)");
    const int g = *c.shard_group;
    if (g < 1 || g > c.ranks || c.ranks % g != 0) {
      std::ostringstream os;
      os << "--shard-group " << g << " must divide --ranks " << c.ranks << "; use one of";
      for (int d = 1; d <= c.ranks; ++d)
        if (c.ranks % d == 0) os << ' ' << d;
      throw ConfigError(os.str());
    }
  }
  for (int u : c.break_units) requireRange("--break-unit", u, 0, c.model.layers + 1);
  if (c.inject_branch) {
    requireRange("--inject-branch RANK", c.inject_branch->rank, 0, c.ranks - 1);
    requireRange("--inject-branch BLOCK", c.inject_branch->block, 0, c.model.layers - 1);
  }
}

std::string runUsage() {
  return R"(usage: shardscope-cli run [flags]
  --strategy NAME        ddp, zero1, zero2, zero3 (= fsdp), hsdp            [ddp]
  --ranks P              data-parallel ranks, 1..64 (cuda-emulated 1..16)   [4]
  --model KIND           mlp (residual MLP, regression) or gpt (attention +
                         MLP blocks on a byte-level text corpus)            [mlp]
  --layers L             blocks, 1..256                                     [8]
  --hidden D             hidden width (inner 4D), 8..8192                   [512]
  --heads H, --seq T, --vocab V   gpt: heads, tokens per sample, vocab  [4, 64, 256]
  --batch B              global batch (samples), a multiple of P            [32]
  --steps S              training steps, 1..100000                          [3]
  --bucket-mb X          DDP bucket cap in MiB (PyTorch bucket_cap_mb)      [25]
  --first-bucket-mb X    cap of the first bucket in MiB                     [1]
  --lr X                 AdamW learning rate                                [0.0001]
  --unit-blocks K        zero3/fsdp/hsdp: blocks per FSDP unit, 1..L        [1]
  --prefetch MODE        zero3/fsdp/hsdp: none, forward, backward, both     [both]
  --reshard-after-forward on|off  zero3/fsdp/hsdp: free gathered params
                         after forward (off = SHARD_GRAD_OP)               [on]
  --shard-group G        hsdp: ranks per shard group, divides P
  --seed N               data, init and teacher seed                        [1]
  --timeout-ms T         collective fingerprint / readiness timeout         [3000]
                         (scaled up to 10x when rank threads far outnumber cores)
  --inject-branch R:L    rank R skips block L (a rank-dependent branch)
  --clock KIND           measured (this machine's time) or modeled (op costs
                         under a hardware profile; deterministic)           [measured]
  --profile NAME         modeled clock's hardware: h100-sxm, h200, a100-40gb-pcie,
                         rtx4090-pcie, cluster-25gbe, this-cpu, or a .json  [h100-sxm]
  --backend NAME         cpu: real math on CPU ranks; meta: shapes only, no
                         math or memory, modeled clock (big models);
                         cuda: one rank per GPU, NCCL; cuda-emulated: all
                         ranks on GPU 0, collectives as device copies      [cpu]
  --replicate on|off     meta runs of 64+ symmetric ranks: simulate rank 0 once
                         and copy it to the others (same results)          [on]
  --break-on OP          stop all ranks in lockstep before each forward,
                         backward or optimizer_step op; print their state
  --break-unit U         stop before ops of FSDP unit U (block U otherwise)
  --trace FILE           write a Chrome/Perfetto trace (JSON)
  --summary FILE         write the run summary (JSON)
  --help                 this text
exit codes: 0 ok, 2 bad input, 3 the run stopped (mismatch or hang)
)";
}

RunConfig parseRunArgs(const std::vector<std::string>& args, bool* help) {
  RunConfig c;
  if (help) *help = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag == "--help" || flag == "-h") {
      if (help) *help = true;
      return c;
    }
    if (flag.rfind("--", 0) != 0) throw ConfigError("unexpected argument '" + flag + "' (see --help)");
    if (i + 1 >= args.size()) throw ConfigError(flag + " needs a value (see --help)");
    const std::string& v = args[++i];
    if (flag == "--strategy") c.strategy = v;
    else if (flag == "--ranks") c.ranks = parseInt32(flag, v);
    else if (flag == "--layers") c.model.layers = parseInt32(flag, v);
    else if (flag == "--hidden") c.model.hidden = parseInt32(flag, v);
    else if (flag == "--model") {
      if (v == "mlp") c.model.kind = ModelKind::Mlp;
      else if (v == "gpt") c.model.kind = ModelKind::Gpt;
      else {
        try {
          c.model = presetShape(v);
        } catch (const ConfigError&) {
          throw ConfigError("--model must be mlp, gpt or a preset (gpt2-124m, llama2-7b, llama2-70b), got '" + v + "'");
        }
      }
    } else if (flag == "--heads") c.model.heads = parseInt32(flag, v);
    else if (flag == "--seq") c.model.seq = parseInt32(flag, v);
    else if (flag == "--vocab") c.model.vocab = parseInt32(flag, v);
    else if (flag == "--batch") c.batch = parseInt32(flag, v);
    else if (flag == "--steps") c.steps = parseInt32(flag, v);
    else if (flag == "--bucket-mb") c.bucket_mb = parseDouble(flag, v);
    else if (flag == "--first-bucket-mb") c.first_bucket_mb = parseDouble(flag, v);
    else if (flag == "--lr") c.lr = parseDouble(flag, v);
    else if (flag == "--seed") {
      const long long s = parseInt(flag, v);
      requireRange("--seed", s, 0, (1LL << 62));
      c.seed = static_cast<uint64_t>(s);
    } else if (flag == "--timeout-ms") c.timeout_ms = parseInt32(flag, v);
    else if (flag == "--inject-branch") {
      const auto colon = v.find(':');
      if (colon == std::string::npos)
        throw ConfigError("--inject-branch expects RANK:BLOCK (e.g. 1:3), got '" + v + "'");
      c.inject_branch = InjectBranch{parseInt32(flag, v.substr(0, colon)),
                                     parseInt32(flag, v.substr(colon + 1))};
    } else if (flag == "--unit-blocks") c.unit_blocks = parseInt32(flag, v);
    else if (flag == "--shard-group") c.shard_group = parseInt32(flag, v);
    else if (flag == "--prefetch") c.prefetch = parsePrefetch(v);
    else if (flag == "--reshard-after-forward") {
      if (v != "on" && v != "off")
        throw ConfigError("--reshard-after-forward must be on or off, got '" + v + "'");
      c.reshard_after_forward = v == "on";
    } else if (flag == "--clock") {
      if (v == "measured") c.clock = ClockKind::Measured;
      else if (v == "modeled") c.clock = ClockKind::Modeled;
      else throw ConfigError("--clock must be measured or modeled, got '" + v + "'");
    } else if (flag == "--profile") c.profile = v;
    else if (flag == "--backend") {
      if (v == "cpu") c.backend = Backend::Cpu;
      else if (v == "meta") {
        c.backend = Backend::Meta;
        c.clock = ClockKind::Modeled;  // the only clock a shapes-only run has
      } else if (v == "cuda") c.backend = Backend::Cuda;
      else if (v == "cuda-emulated") c.backend = Backend::CudaEmulated;
      else throw ConfigError("--backend must be cpu, meta, cuda or cuda-emulated, got '" + v + "'");
    }
    else if (flag == "--replicate") {
      if (v != "on" && v != "off") throw ConfigError("--replicate must be on or off, got '" + v + "'");
      c.replicate = v == "on";
    } else if (flag == "--break-on") {
      if (v == "forward") c.break_on.push_back(EventKind::Forward);
      else if (v == "backward") c.break_on.push_back(EventKind::Backward);
      else if (v == "optimizer_step") c.break_on.push_back(EventKind::OptimizerStep);
      else throw ConfigError("--break-on must be forward, backward or optimizer_step (compute ops), got '" + v + "'");
    } else if (flag == "--break-unit") c.break_units.push_back(parseInt32(flag, v));
    else if (flag == "--trace") c.trace_path = v;
    else if (flag == "--summary") c.summary_path = v;
    else throw ConfigError("unknown flag " + flag + " (see --help)");
  }
  validate(c);
  return c;
}

namespace {

// Shortest text that parses back to the same double.
std::string exactText(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace

std::vector<std::string> runArgs(const RunConfig& c) {
  std::vector<std::string> a;
  const auto add = [&a](const char* flag, std::string value) {
    a.emplace_back(flag);
    a.push_back(std::move(value));
  };
  // --model first: a published shape resets the shape flags given before it.
  if (!c.model.preset.empty()) {
    add("--model", c.model.preset);
  } else {
    add("--model", c.model.kind == ModelKind::Gpt ? "gpt" : "mlp");
    add("--layers", std::to_string(c.model.layers));
    add("--hidden", std::to_string(c.model.hidden));
    if (c.model.kind == ModelKind::Gpt) {
      add("--heads", std::to_string(c.model.heads));
      add("--seq", std::to_string(c.model.seq));
      add("--vocab", std::to_string(c.model.vocab));
    }
  }
  add("--strategy", c.strategy);
  add("--ranks", std::to_string(c.ranks));
  if (c.shard_group) add("--shard-group", std::to_string(*c.shard_group));
  add("--batch", std::to_string(c.batch));
  add("--steps", std::to_string(c.steps));
  add("--lr", exactText(c.lr));
  add("--seed", std::to_string(c.seed));
  add("--bucket-mb", exactText(c.bucket_mb));
  add("--first-bucket-mb", exactText(c.first_bucket_mb));
  add("--timeout-ms", std::to_string(c.timeout_ms));
  if (c.unit_blocks) add("--unit-blocks", std::to_string(*c.unit_blocks));
  if (c.prefetch) add("--prefetch", prefetchName(*c.prefetch));
  if (c.reshard_after_forward) add("--reshard-after-forward", *c.reshard_after_forward ? "on" : "off");
  if (c.backend != Backend::Cpu) add("--backend", backendName(c.backend));
  add("--clock", c.clock == ClockKind::Modeled ? "modeled" : "measured");
  if (c.profile) add("--profile", *c.profile);
  if (c.inject_branch)
    add("--inject-branch", std::to_string(c.inject_branch->rank) + ":" + std::to_string(c.inject_branch->block));
  if (!c.replicate) add("--replicate", "off");
  for (EventKind k : c.break_on)
    add("--break-on", k == EventKind::Forward ? "forward" : k == EventKind::Backward ? "backward" : "optimizer_step");
  for (int u : c.break_units) add("--break-unit", std::to_string(u));
  return a;
}

std::string runCommandLine(const RunConfig& c) {
  std::string line = "shardscope-cli run";
  for (const std::string& arg : runArgs(c)) {
    const bool plain = arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/+=") ==
                       std::string::npos;
    line += ' ';
    line += plain && !arg.empty() ? arg : "'" + arg + "'";  // profiles may be paths
  }
  return line;
}

}  // namespace shardscope
