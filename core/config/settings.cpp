#include "config/settings.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/errors.h"
#include "config/model_presets.h"
#include "config/rendezvous_url.h"
#include "config/serve_address.h"

namespace shardscope {

namespace {

using Json = nlohmann::ordered_json;
using Args = std::vector<std::string>;

constexpr unsigned bit(Strategy s) { return 1u << static_cast<unsigned>(s); }
constexpr unsigned kSharded = bit(Strategy::Zero3) | bit(Strategy::Fsdp) | bit(Strategy::Hsdp);
constexpr unsigned kHybrid = bit(Strategy::Hsdp);

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

bool parseSwitch(const std::string& flag, const std::string& v) {
  if (v != "on" && v != "off") throw ConfigError(flag + " must be on or off, got '" + v + "'");
  return v == "on";
}

std::string joinOr(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

std::string joinComma(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

// A Choice flag's parse error, in the row's style.
[[noreturn]] void badChoice(const Setting& s, const std::string& v) {
  const std::vector<std::string> names = s.choices();
  if (s.one_of) throw ConfigError(std::string(s.flag) + " must be one of " + joinComma(names) + "; got '" + v + "'");
  throw ConfigError(std::string(s.flag) + " must be " + joinOr(names) + s.choice_hint + ", got '" + v + "'");
}

template <class E>
E choose(const Setting& s, const std::string& v, std::optional<E> (*parse)(std::string_view)) {
  const std::optional<E> e = parse(v);
  if (!e) badChoice(s, v);
  return *e;
}

// An output file's name: an empty one would silently write nothing.
std::string outputPath(const Setting& s, const std::string& v) {
  if (v.empty()) throw ConfigError(std::string(s.flag) + " needs a file name, got ''");
  return v;
}

Args one(std::string v) { return {std::move(v)}; }
Args intArg(int v) { return one(std::to_string(v)); }
bool published(const RunConfig& c) { return !c.model.preset.empty(); }
bool gpt(const RunConfig& c) { return c.model.kind == ModelKind::Gpt; }

std::vector<std::string> modelChoices() {
  std::vector<std::string> names = {"mlp", "gpt"};
  for (const ModelPreset& p : modelPresets()) names.push_back(p.name);
  return names;
}

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

std::vector<Setting> buildTable() {
  std::vector<Setting> t;
  Setting s;

  s = {};
  s.flag = "--strategy", s.json_key = "strategy", s.json_order = 1, s.args_order = 7;
  s.type = SettingType::Choice, s.metavar = "NAME", s.default_text = "ddp", s.choices = strategyNames;
  s.one_of = true;
  s.help = "ddp, zero1, zero2, zero3 (= fsdp), hsdp: how model state is replicated or sharded across ranks";
  s.form = {"Strategy", "strategy"};
  s.args = [](const RunConfig& c) { return one(strategyName(c.strategy)); };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.strategy = choose(row, v, parseStrategy); };
  s.json = [](const RunConfig& c, Json& j) { j["strategy"] = strategyName(c.strategy); };
  t.push_back(s);

  s = {};
  s.flag = "--ranks", s.json_key = "ranks", s.json_order = 2, s.args_order = 8;
  s.metavar = "P", s.default_text = "4";
  s.range_for = [](const RunConfig& c, std::string& hint) {
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
  };
  s.help = "data-parallel ranks (CPU threads)";
  s.form = {"Strategy", "ranks", 1024};
  s.args = [](const RunConfig& c) { return intArg(c.ranks); };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.ranks = parseInt32(row.flag, v); };
  s.number = [](const RunConfig& c) -> std::optional<double> { return c.ranks; };
  s.json = [](const RunConfig& c, Json& j) { j["ranks"] = c.ranks; };
  t.push_back(s);

  // Tensor parallelism: a new axis of the mesh. Written to the config JSON and
  // the flags only when T > 1, so a run without it reads as before.
  s = {};
  s.flag = "--tp", s.json_key = "tp", s.json_order = 2, s.args_order = 8;
  s.metavar = "T", s.default_text = "1";
  s.form = {"Strategy", "tensor parallel", 1024};
  s.applies.backends = (1u << static_cast<unsigned>(Backend::Cpu)) | (1u << static_cast<unsigned>(Backend::Meta));
  s.applies_text = "--backend cpu or meta (the CUDA kernels have no tensor-parallel path yet)";
  s.range_for = [](const RunConfig& c, std::string& hint) {
    hint = " (T tensor-parallel ranks of the --ranks " + std::to_string(c.ranks) + ")";
    return Range{1, static_cast<double>(std::max(1, c.ranks))};
  };
  s.help = "tensor-parallel ranks (Megatron-LM): T consecutive ranks split each block's matrices, T divides P; "
           "the strategy runs along the P/T data-parallel ranks";
  s.args = [](const RunConfig& c) { return c.tp != 1 ? intArg(c.tp) : Args{}; };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.tp = parseInt32(row.flag, v); };
  s.number = [](const RunConfig& c) -> std::optional<double> { return c.tp; };
  s.given = [](const RunConfig& c) { return c.tp != 1; };
  s.rule = [](const RunConfig& c) { tensorParallelRule(c); };
  s.json = [](const RunConfig& c, Json& j) {
    if (c.tp != 1) j["tp"] = c.tp;
  };
  t.push_back(s);

  s = {};
  s.flag = "--backend", s.json_key = "backend", s.json_order = 6, s.args_order = 20;
  s.type = SettingType::Choice, s.metavar = "NAME", s.default_text = "cpu", s.choices = backendNames;
  s.help =
      "cpu: real math on CPU ranks; meta: shapes only, no math or memory, modeled clock (big models); cuda: one "
      "rank per GPU, NCCL; cuda-emulated: all ranks on GPU 0, collectives as device copies";
  s.form = {"Clock and backend", "backend"};
  s.args = [](const RunConfig& c) { return c.backend == Backend::Cpu ? Args{} : one(backendName(c.backend)); };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) {
    c.backend = choose(row, v, parseBackend);
    if (c.backend == Backend::Meta) c.clock = ClockKind::Modeled;  // the only clock a shapes-only run has
  };
  s.rule = [](const RunConfig& c) {
    if (c.backend == Backend::Meta && c.clock != ClockKind::Modeled)
      throw ConfigError("--backend meta runs no math, so it needs --clock modeled");
    if (isGpuBackend(c.backend) && c.clock != ClockKind::Measured)
      throw ConfigError("--backend " + backendName(c.backend) +
                        " measures the GPU (CUDA events): use --clock measured, or --backend meta with a --profile "
                        "to model other hardware");
  };
  s.json = [](const RunConfig& c, Json& j) { j["backend"] = backendName(c.backend); };
  t.push_back(s);

  s = {};
  s.flag = "--clock", s.json_key = "clock", s.json_order = 18, s.args_order = 21;
  s.type = SettingType::Choice, s.metavar = "KIND", s.default_text = "measured", s.choices = clockNames;
  s.help = "measured (this machine's time) or modeled (op costs under a hardware profile; deterministic)";
  s.form = {"Clock and backend", "clock"};
  s.args = [](const RunConfig& c) { return one(clockName(c.clock)); };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.clock = choose(row, v, parseClock); };
  s.json = [](const RunConfig& c, Json& j) { j["clock"] = clockName(c.clock); };
  t.push_back(s);

  s = {};
  s.flag = "--model", s.json_key = "model", s.json_order = 5, s.args_order = 1;
  s.type = SettingType::Choice, s.metavar = "KIND", s.default_text = "mlp", s.choices = modelChoices;
  s.help =
      "mlp (residual MLP, regression), gpt (attention + MLP blocks on a byte-level text corpus), or a published "
      "shape for --backend meta";
  s.form = {"Model", "model"};
  s.args = [](const RunConfig& c) { return one(published(c) ? c.model.preset : modelKindName(c.model.kind)); };
  s.set = [](RunConfig& c, const Setting&, const std::string& v) {
    if (const std::optional<ModelKind> kind = parseModelKind(v)) {
      c.model.kind = *kind;
      return;
    }
    try {
      // A published shape keeps the activation settings given before it.
      const Attention attention = c.model.attention;
      const Checkpointing checkpointing = c.model.checkpointing;
      c.model = presetShape(v);
      c.model.attention = attention, c.model.checkpointing = checkpointing;
    } catch (const ConfigError&) {
      std::vector<std::string> names;
      for (const ModelPreset& p : modelPresets()) names.push_back(p.name);
      throw ConfigError("--model must be mlp, gpt or a preset (" + joinComma(names) + "), got '" + v + "'");
    }
  };
  s.rule = [](const RunConfig& c) {
    if (published(c) && c.backend != Backend::Meta)
      throw ConfigError("--model " + c.model.preset +
                        " is a published shape for --backend meta (the CPU GPT model is GPT-2 style: use --model gpt "
                        "with --layers/--hidden/--heads)");
  };
  s.json = [](const RunConfig& c, Json& j) {
    j["model"] = modelKindName(c.model.kind);
    if (published(c)) j["model_preset"] = c.model.preset;
  };
  t.push_back(s);

  // The shape knobs a published --model fixes itself.
  const auto shape = [&t](const char* flag, const char* key, int json_order, int args_order, const char* metavar,
                          const char* def, Range range, const char* help, FormRow form, bool gpt_only) {
    Setting s;
    s.flag = flag, s.json_key = key, s.json_order = json_order, s.args_order = args_order;
    s.metavar = metavar, s.default_text = def, s.range = range, s.help = help, s.form = form;
    s.applies.custom_shape = true;
    s.applies.gpt_only = gpt_only;
    s.set = [](RunConfig&, const Setting&, const std::string&) {};
    t.push_back(s);
  };
  shape("--layers", "layers", 3, 2, "L", "8", {1, 256}, "blocks", {"Model", "layers", 4096}, false);
  shape("--hidden", "hidden", 4, 3, "D", "512", {8, 8192}, "hidden width (inner 4D)", {"Model", "hidden", 65536}, false);
  shape("--heads", "heads", 7, 4, "H", "4", {1, 256}, "gpt: attention heads; must divide --hidden",
        {"Model", "heads", 4096}, true);
  shape("--seq", "seq", 8, 5, "T", "64", {1, 4096}, "gpt: tokens per sample", {"Model", "seq", 65536}, true);
  shape("--vocab", "vocab", 9, 6, "V", "256", {256, 1 << 20}, "gpt: vocabulary (byte-level tokens need 256 ids)",
        {"Model", "vocab", 1 << 22}, true);
  // Each row's accessors name its own field (captureless lambdas are plain function pointers).
  Setting& layers = t[t.size() - 5];
  layers.args = [](const RunConfig& c) { return published(c) ? Args{} : intArg(c.model.layers); };
  layers.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.model.layers = parseInt32(row.flag, v); };
  layers.number = [](const RunConfig& c) -> std::optional<double> { return c.model.layers; };
  layers.json = [](const RunConfig& c, Json& j) { j["layers"] = c.model.layers; };
  Setting& hidden = t[t.size() - 4];
  hidden.args = [](const RunConfig& c) { return published(c) ? Args{} : intArg(c.model.hidden); };
  hidden.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.model.hidden = parseInt32(row.flag, v); };
  hidden.number = [](const RunConfig& c) -> std::optional<double> { return c.model.hidden; };
  hidden.json = [](const RunConfig& c, Json& j) { j["hidden"] = c.model.hidden; };
  Setting& heads = t[t.size() - 3];
  heads.args = [](const RunConfig& c) { return !published(c) && gpt(c) ? intArg(c.model.heads) : Args{}; };
  heads.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.model.heads = parseInt32(row.flag, v); };
  heads.number = [](const RunConfig& c) -> std::optional<double> { return c.model.heads; };
  heads.json = [](const RunConfig& c, Json& j) {
    if (gpt(c)) j["heads"] = c.model.heads;
  };
  Setting& seq = t[t.size() - 2];
  seq.args = [](const RunConfig& c) { return !published(c) && gpt(c) ? intArg(c.model.seq) : Args{}; };
  seq.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.model.seq = parseInt32(row.flag, v); };
  seq.number = [](const RunConfig& c) -> std::optional<double> { return c.model.seq; };
  seq.json = [](const RunConfig& c, Json& j) {
    if (gpt(c)) j["seq"] = c.model.seq;
  };
  Setting& vocab = t[t.size() - 1];
  vocab.range_hint = " (byte-level tokens need 256 ids)";
  vocab.args = [](const RunConfig& c) { return !published(c) && gpt(c) ? intArg(c.model.vocab) : Args{}; };
  vocab.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.model.vocab = parseInt32(row.flag, v); };
  vocab.number = [](const RunConfig& c) -> std::optional<double> { return c.model.vocab; };
  vocab.rule = [](const RunConfig& c) {
    if (gpt(c) && c.model.hidden % c.model.heads != 0) {
      std::ostringstream os;
      os << "--hidden " << c.model.hidden << " must be a multiple of --heads " << c.model.heads
         << " (head dim = hidden / heads)";
      throw ConfigError(os.str());
    }
  };
  vocab.json = [](const RunConfig& c, Json& j) {
    if (gpt(c)) j["vocab"] = c.model.vocab;
  };

  s = {};
  s.json_key = "io_dim", s.json_order = 10;  // mlp's input/target width: no flag (fixed by the model)
  s.in_presets = false;
  s.json = [](const RunConfig& c, Json& j) {
    if (!gpt(c)) j["io_dim"] = c.model.io_dim;
  };
  t.push_back(s);

  // What a GPT block keeps for backward (the residual MLP has neither knob).
  // Written to the flags only when not the default, so a run without them reads as before.
  s = {};
  s.flag = "--attention", s.json_key = "attention", s.json_order = 10, s.args_order = 27;
  s.type = SettingType::Choice, s.metavar = "KIND", s.default_text = "flash", s.choices = attentionNames;
  s.applies.gpt_only = true, s.applies_text = "--model gpt or a published shape (the residual MLP has no attention)";
  s.given = [](const RunConfig& c) { return c.model.attention != Attention::Flash; };
  s.help = "gpt: naive keeps the (B, H, S, S) softmax for backward; flash keeps only its row statistics and "
           "recomputes the scores in backward (FlashAttention)";
  s.form = {"Model", "attention"};
  s.args = [](const RunConfig& c) {
    return gpt(c) && c.model.attention != Attention::Flash ? one(attentionName(c.model.attention)) : Args{};
  };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) {
    c.model.attention = choose(row, v, parseAttention);
  };
  s.json = [](const RunConfig& c, Json& j) {
    if (gpt(c)) j["attention"] = attentionName(c.model.attention);
  };
  t.push_back(s);

  s = {};
  s.flag = "--activation-checkpointing", s.json_key = "activation_checkpointing", s.json_order = 10;
  s.args_order = 28;
  s.type = SettingType::Choice, s.metavar = "MODE", s.default_text = "none", s.choices = checkpointingNames;
  s.applies.gpt_only = true, s.applies_text = "--model gpt or a published shape (the residual MLP has no blocks "
                                              "to checkpoint)";
  s.given = [](const RunConfig& c) { return c.model.checkpointing != Checkpointing::None; };
  s.help = "gpt, per block: none; selective recomputes the attention core in backward; full keeps only each "
           "block's input and recomputes the block in backward";
  s.form = {"Model", "activation checkpointing"};
  s.args = [](const RunConfig& c) {
    return gpt(c) && c.model.checkpointing != Checkpointing::None ? one(checkpointingName(c.model.checkpointing))
                                                                   : Args{};
  };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) {
    c.model.checkpointing = choose(row, v, parseCheckpointing);
  };
  s.rule = [](const RunConfig& c) {
    if (gpt(c) && c.model.checkpointing != Checkpointing::None && isGpuBackend(c.backend))
      throw ConfigError("--activation-checkpointing " + checkpointingName(c.model.checkpointing) +
                        " applies to --backend cpu or meta (the CUDA GPT model has no recompute path); use none");
  };
  s.json = [](const RunConfig& c, Json& j) {
    if (gpt(c)) j["activation_checkpointing"] = checkpointingName(c.model.checkpointing);
  };
  t.push_back(s);

  s = {};
  s.flag = "--steps", s.json_key = "steps", s.json_order = 12, s.args_order = 11;
  s.metavar = "S", s.default_text = "3", s.range = {1, 100000}, s.help = "training steps";
  s.form = {"Training", "steps", 1'000'000};
  s.args = [](const RunConfig& c) { return intArg(c.steps); };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.steps = parseInt32(row.flag, v); };
  s.number = [](const RunConfig& c) -> std::optional<double> { return c.steps; };
  s.json = [](const RunConfig& c, Json& j) { j["steps"] = c.steps; };
  t.push_back(s);

  s = {};
  s.flag = "--batch", s.json_key = "batch", s.json_order = 11, s.args_order = 10;
  s.metavar = "B", s.default_text = "32", s.range = {1, 1 << 20};
  s.help = "global batch (samples), a multiple of P; by default 32, or the smallest multiple of P above it";
  s.form = {"Training", "global batch", 1 << 22};
  s.args = [](const RunConfig& c) { return intArg(c.batch); };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.batch = parseInt32(row.flag, v); };
  s.number = [](const RunConfig& c) -> std::optional<double> { return c.batch; };
  s.json = [](const RunConfig& c, Json& j) { j["batch"] = c.batch; };
  t.push_back(s);

  s = {};
  s.flag = "--timeout-ms", s.json_key = "timeout_ms", s.json_order = 17, s.args_order = 16;
  s.metavar = "T", s.default_text = "3000", s.range = {100, 600000};
  s.help = "collective fingerprint / readiness timeout (scaled up to 10x when rank threads far outnumber cores)";
  s.form = {"Communication", "timeout", 10'000'000, 0, 1, " ms"};
  s.args = [](const RunConfig& c) { return intArg(c.timeout_ms); };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.timeout_ms = parseInt32(row.flag, v); };
  s.number = [](const RunConfig& c) -> std::optional<double> { return c.timeout_ms; };
  s.rule = [](const RunConfig& c) {
    if (c.tp > 1 && c.ranks % c.tp == 0) {  // each data-parallel rank takes batch / (P/T)
      const int dp = c.dataParallelSize();
      if (c.batch % dp != 0) {
        std::ostringstream os;
        os << "--batch " << c.batch << " must be a multiple of the data-parallel ranks --ranks/--tp = " << dp
           << " (the T ranks of a tensor-parallel group share their samples); try --batch " << (c.batch / dp + 1) * dp;
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
  };
  s.json = [](const RunConfig& c, Json& j) { j["timeout_ms"] = c.timeout_ms; };
  t.push_back(s);

  s = {};
  s.flag = "--bucket-mb", s.json_key = "bucket_mb", s.json_order = 13, s.args_order = 14;
  s.type = SettingType::Real, s.metavar = "X", s.default_text = "25", s.range = {0, 4096, true, false, " MiB"};
  s.applies.strategies = ~kSharded;  // the form hides it; the CLI accepts and ignores it
  s.help = "DDP bucket cap in MiB (PyTorch bucket_cap_mb)";
  s.form = {"Communication", "bucket cap", 100000, 2, 1, " MiB"};
  s.args = [](const RunConfig& c) { return one(exactText(c.bucket_mb)); };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.bucket_mb = parseDouble(row.flag, v); };
  s.number = [](const RunConfig& c) -> std::optional<double> { return c.bucket_mb; };
  s.json = [](const RunConfig& c, Json& j) { j["bucket_mb"] = c.bucket_mb; };
  t.push_back(s);

  s = {};
  s.flag = "--first-bucket-mb", s.json_key = "first_bucket_mb", s.json_order = 14, s.args_order = 15;
  s.type = SettingType::Real, s.metavar = "X", s.default_text = "1", s.range = {0, 4096, true, false, " MiB"};
  s.applies.strategies = ~kSharded;
  s.help = "cap of the first bucket in MiB";
  s.form = {"Communication", "first bucket", 100000, 2, 0.5, " MiB"};
  s.args = [](const RunConfig& c) { return one(exactText(c.first_bucket_mb)); };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.first_bucket_mb = parseDouble(row.flag, v); };
  s.number = [](const RunConfig& c) -> std::optional<double> { return c.first_bucket_mb; };
  s.json = [](const RunConfig& c, Json& j) { j["first_bucket_mb"] = c.first_bucket_mb; };
  t.push_back(s);

  s = {};
  s.flag = "--lr", s.json_key = "lr", s.json_order = 15, s.args_order = 12;
  s.type = SettingType::Real, s.metavar = "X", s.default_text = "0.0001", s.range = {0, 10, true, true};
  s.help = "AdamW learning rate";
  s.form = {"Training", "learning rate", 100, 6, 1e-4};
  s.args = [](const RunConfig& c) { return one(exactText(c.lr)); };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.lr = parseDouble(row.flag, v); };
  s.number = [](const RunConfig& c) -> std::optional<double> { return c.lr; };
  s.json = [](const RunConfig& c, Json& j) { j["lr"] = c.lr; };
  t.push_back(s);

  s = {};
  s.flag = "--seed", s.json_key = "seed", s.json_order = 16, s.args_order = 13;
  s.type = SettingType::RngState, s.metavar = "N", s.default_text = "1";
  s.help = "random seed of the data, the initial weights and the teacher, 0..2^62";
  s.form = {"Training", "seed", 2147483647};
  s.args = [](const RunConfig& c) { return one(std::to_string(c.seed)); };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) {
    const long long seed = parseInt(row.flag, v);
    requireRange(row.flag, seed, 0, (1LL << 62));
    c.seed = static_cast<uint64_t>(seed);
  };
  s.json = [](const RunConfig& c, Json& j) { j["seed"] = c.seed; };
  t.push_back(s);

  s = {};
  s.flag = "--profile", s.json_key = "profile", s.json_order = 19, s.args_order = 22;
  s.type = SettingType::Text, s.metavar = "NAME", s.default_text = "h100-sxm";
  s.applies.modeled_clock = true;
  s.applies_text = "--clock modeled (a measured run takes this machine's time)";
  s.help =
      "modeled clock's hardware: h100-sxm, h200, a100-40gb-pcie, rtx4090-pcie, cluster-25gbe, this-cpu, or a .json";
  s.form = {"Clock and backend", "profile"};
  s.args = [](const RunConfig& c) { return c.profile ? one(*c.profile) : Args{}; };
  s.set = [](RunConfig& c, const Setting&, const std::string& v) { c.profile = v; };
  s.given = [](const RunConfig& c) { return c.profile.has_value(); };
  s.json = [](const RunConfig& c, Json& j) {
    if (c.clock == ClockKind::Modeled) j["profile"] = c.profileName();
  };
  t.push_back(s);

  // FSDP units: zero3, fsdp and hsdp only.
  const char* const kUnitsApply = "--strategy zero3, fsdp or hsdp (FSDP units)";
  s = {};
  s.flag = "--unit-blocks", s.json_key = "unit_blocks", s.json_order = 20, s.args_order = 17;
  s.metavar = "K", s.default_text = "1", s.applies.strategies = kSharded, s.applies_text = kUnitsApply;
  s.range_for = [](const RunConfig& c, std::string& hint) {
    std::ostringstream os;
    os << " (the model has --layers " << c.model.layers << " blocks; K groups K consecutive blocks per unit)";
    hint = os.str();
    return Range{1, static_cast<double>(c.model.layers)};
  };
  s.help = "zero3/fsdp/hsdp: blocks per FSDP unit, 1..L";
  s.form = {"FSDP units", "blocks/unit", 4096};
  s.args = [](const RunConfig& c) { return c.unit_blocks ? intArg(*c.unit_blocks) : Args{}; };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.unit_blocks = parseInt32(row.flag, v); };
  s.number = [](const RunConfig& c) -> std::optional<double> {
    return c.unit_blocks ? std::optional<double>(*c.unit_blocks) : std::nullopt;
  };
  s.given = [](const RunConfig& c) { return c.unit_blocks.has_value(); };
  s.json = [](const RunConfig& c, Json& j) {
    if (c.isSharded()) j["unit_blocks"] = c.unitBlocks();
  };
  t.push_back(s);

  s = {};
  s.flag = "--prefetch", s.json_key = "prefetch", s.json_order = 21, s.args_order = 18;
  s.type = SettingType::Choice, s.metavar = "MODE", s.default_text = "both", s.choices = prefetchNames;
  s.one_of = true, s.applies.strategies = kSharded, s.applies_text = kUnitsApply;
  s.help = "zero3/fsdp/hsdp: gather the next unit while this one computes: none, forward, backward, both";
  s.form = {"FSDP units", "prefetch"};
  s.args = [](const RunConfig& c) { return c.prefetch ? one(prefetchName(*c.prefetch)) : Args{}; };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.prefetch = choose(row, v, parsePrefetch); };
  s.given = [](const RunConfig& c) { return c.prefetch.has_value(); };
  s.json = [](const RunConfig& c, Json& j) {
    if (c.isSharded()) j["prefetch"] = prefetchName(c.prefetchMode());
  };
  t.push_back(s);

  s = {};
  s.flag = "--reshard-after-forward", s.json_key = "reshard_after_forward", s.json_order = 22, s.args_order = 19;
  s.type = SettingType::Switch, s.metavar = "on|off", s.default_text = "on";
  s.applies.strategies = kSharded, s.applies_text = kUnitsApply;
  s.help = "zero3/fsdp/hsdp: free gathered params after forward (off = SHARD_GRAD_OP: keep them until backward)";
  s.form = {"FSDP units", "reshard after forward"};
  s.args = [](const RunConfig& c) {
    return c.reshard_after_forward ? one(*c.reshard_after_forward ? "on" : "off") : Args{};
  };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) {
    c.reshard_after_forward = parseSwitch(row.flag, v);
  };
  s.given = [](const RunConfig& c) { return c.reshard_after_forward.has_value(); };
  s.json = [](const RunConfig& c, Json& j) {
    if (c.isSharded()) j["reshard_after_forward"] = c.reshardAfterForward();
  };
  t.push_back(s);

  s = {};
  s.flag = "--wrap", s.json_key = "wrap", s.json_order = 22, s.args_order = 29;
  s.type = SettingType::Choice, s.metavar = "POLICY", s.default_text = "block", s.choices = wrapNames;
  s.applies.strategies = kSharded, s.applies_text = kUnitsApply;
  s.help = "zero3/fsdp/hsdp: what one FSDP unit wraps: block (--unit-blocks K blocks) or linear (every Linear "
           "layer its own unit, as ModuleWrapPolicy({nn.Linear}))";
  s.form = {"FSDP units", "wrap"};
  s.args = [](const RunConfig& c) { return c.wrap ? one(wrapName(*c.wrap)) : Args{}; };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.wrap = choose(row, v, parseWrap); };
  s.given = [](const RunConfig& c) { return c.wrap.has_value(); };
  s.rule = [](const RunConfig& c) {
    if (c.wrapPolicy() == Wrap::Linear && c.unit_blocks && *c.unit_blocks != 1)
      throw ConfigError("--unit-blocks applies to --wrap block (--wrap linear makes every Linear its own unit)");
  };
  // Written only when it differs from block wrapping: a block-wrapped trace keeps its bytes.
  s.json = [](const RunConfig& c, Json& j) {
    if (c.isSharded() && c.wrapPolicy() != Wrap::Block) j["wrap"] = wrapName(c.wrapPolicy());
  };
  t.push_back(s);

  // FSDP MixedPrecision: the dtypes of the reduce-scatters and the all-gathers.
  s = {};
  s.flag = "--reduce-dtype", s.json_key = "reduce_dtype", s.json_order = 22, s.args_order = 30;
  s.type = SettingType::Choice, s.metavar = "DTYPE", s.default_text = "bf16", s.choices = commDTypeNames;
  s.applies.strategies = kSharded, s.applies_text = kUnitsApply;
  s.help = "zero3/fsdp/hsdp: dtype gradients are reduce-scattered in (MixedPrecision reduce_dtype): bf16 or fp32";
  s.form = {"FSDP units", "reduce dtype"};
  s.args = [](const RunConfig& c) { return c.reduce_dtype ? one(commDTypeName(*c.reduce_dtype)) : Args{}; };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) {
    c.reduce_dtype = choose(row, v, parseCommDType);
  };
  s.given = [](const RunConfig& c) { return c.reduce_dtype.has_value(); };
  s.rule = [](const RunConfig& c) {
    if (c.reduceDType() == CommDType::Fp32 && isGpuBackend(c.backend))
      throw ConfigError("--reduce-dtype fp32 applies to --backend cpu or meta (the CUDA path reduces bf16 only)");
  };
  s.json = [](const RunConfig& c, Json& j) {
    if (c.isSharded() && c.reduceDType() != CommDType::Bf16) j["reduce_dtype"] = commDTypeName(c.reduceDType());
  };
  t.push_back(s);

  s = {};
  s.flag = "--param-dtype", s.json_key = "param_dtype", s.json_order = 22, s.args_order = 31;
  s.type = SettingType::Choice, s.metavar = "DTYPE", s.default_text = "bf16", s.choices = commDTypeNames;
  s.applies.strategies = kSharded, s.applies_text = kUnitsApply;
  s.help = "zero3/fsdp/hsdp: dtype parameters are all-gathered in (MixedPrecision param_dtype): bf16 or fp32";
  s.form = {"FSDP units", "param dtype"};
  s.args = [](const RunConfig& c) { return c.param_dtype ? one(commDTypeName(*c.param_dtype)) : Args{}; };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) {
    c.param_dtype = choose(row, v, parseCommDType);
  };
  s.given = [](const RunConfig& c) { return c.param_dtype.has_value(); };
  s.rule = [](const RunConfig& c) {
    if (c.paramDType() == CommDType::Fp32 && isGpuBackend(c.backend))
      throw ConfigError("--param-dtype fp32 applies to --backend cpu or meta (the CUDA path gathers bf16 only)");
  };
  s.json = [](const RunConfig& c, Json& j) {
    if (c.isSharded() && c.paramDType() != CommDType::Bf16) j["param_dtype"] = commDTypeName(c.paramDType());
  };
  t.push_back(s);

  s = {};
  s.flag = "--shard-group", s.json_key = "shard_group", s.json_order = 23, s.args_order = 9;
  s.metavar = "G", s.applies.strategies = kHybrid, s.applies_text = "--strategy hsdp only";
  s.not_applies_hint = " (zero3/fsdp shard over all --ranks)";
  s.help = "hsdp: ranks per shard group, divides P";
  s.form = {"Strategy", "shard group", 1024};
  s.args = [](const RunConfig& c) { return c.shard_group ? intArg(*c.shard_group) : Args{}; };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.shard_group = parseInt32(row.flag, v); };
  s.given = [](const RunConfig& c) { return c.shard_group.has_value(); };
  s.rule = [](const RunConfig& c) {
    if (!isHybrid(c.strategy)) return;
    if (!c.shard_group)
      throw ConfigError("--strategy hsdp needs --shard-group G (ranks per shard group, G divides --ranks)");
    const int g = *c.shard_group;
    if (c.tp > 1) {  // the shard group lies along the data-parallel axis
      const int dp = c.dataParallelSize();
      if (g < 1 || g > dp || dp % g != 0) {
        std::ostringstream os;
        os << "--shard-group " << g << " must divide the data-parallel ranks --ranks/--tp = " << dp << "; use one of";
        for (int d = 1; d <= dp; ++d)
          if (dp % d == 0) os << ' ' << d;
        throw ConfigError(os.str());
      }
      return;
    }
    if (g < 1 || g > c.ranks || c.ranks % g != 0) {
      std::ostringstream os;
      os << "--shard-group " << g << " must divide --ranks " << c.ranks << "; use one of";
      for (int d = 1; d <= c.ranks; ++d)
        if (c.ranks % d == 0) os << ' ' << d;
      throw ConfigError(os.str());
    }
  };
  s.json = [](const RunConfig& c, Json& j) {
    if (c.isSharded()) j["shard_group"] = c.shardGroupSize();
  };
  t.push_back(s);

  s = {};
  s.flag = "--replicate", s.args_order = 24;
  s.type = SettingType::Switch, s.metavar = "on|off", s.default_text = "on";
  s.applies.backends = 1u << static_cast<unsigned>(Backend::Meta);
  s.help = "meta runs of 64+ symmetric ranks: simulate rank 0 once and copy it to the others (same results)";
  s.form = {"Clock and backend", "simulate symmetric ranks once"};
  s.args = [](const RunConfig& c) { return c.replicate ? Args{} : one("off"); };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.replicate = parseSwitch(row.flag, v); };
  t.push_back(s);

  s = {};
  s.flag = "--break-on", s.args_order = 25;
  s.type = SettingType::Choice, s.metavar = "OP", s.choices = breakOpNames, s.repeatable = true;
  s.in_presets = false, s.choice_hint = " (compute ops, frees, launches)";
  s.help = "stop all ranks in lockstep before each forward, backward or optimizer_step op, each free of gathered "
           "parameters or each all_gather / reduce_scatter launch; print their state";
  s.args = [](const RunConfig& c) {
    Args a;
    for (BreakOp op : c.break_on) a.push_back(breakOpName(op));
    return a;
  };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) {
    c.break_on.push_back(choose(row, v, parseBreakOp));
  };
  t.push_back(s);

  s = {};
  s.flag = "--break-unit", s.args_order = 26;
  s.metavar = "U", s.repeatable = true, s.in_presets = false;
  s.help = "stop before ops of FSDP unit U (block U otherwise), 0..L+1";
  s.args = [](const RunConfig& c) {
    Args a;
    for (int u : c.break_units) a.push_back(std::to_string(u));
    return a;
  };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) {
    c.break_units.push_back(parseInt32(row.flag, v));
  };
  s.rule = [](const RunConfig& c) {
    for (int u : c.break_units) requireRange("--break-unit", u, 0, c.model.layers + 1);
  };
  t.push_back(s);

  s = {};
  s.flag = "--inject-branch", s.json_key = "inject_branch", s.json_order = 24, s.args_order = 23;
  s.type = SettingType::RankBlock, s.metavar = "R:L";
  s.help = "rank R skips block L (a rank-dependent branch)";
  s.form = {"Fault injection", "rank skips a block"};
  s.form.settings_key = "inject";
  s.args = [](const RunConfig& c) {
    return c.inject_branch
               ? one(std::to_string(c.inject_branch->rank) + ":" + std::to_string(c.inject_branch->block))
               : Args{};
  };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) {
    const auto colon = v.find(':');
    if (colon == std::string::npos)
      throw ConfigError("--inject-branch expects RANK:BLOCK (e.g. 1:3), got '" + v + "'");
    c.inject_branch =
        InjectBranch{parseInt32(row.flag, v.substr(0, colon)), parseInt32(row.flag, v.substr(colon + 1))};
  };
  s.rule = [](const RunConfig& c) {
    if (!c.inject_branch) return;
    requireRange("--inject-branch RANK", c.inject_branch->rank, 0, c.ranks - 1);
    requireRange("--inject-branch BLOCK", c.inject_branch->block, 0, c.model.layers - 1);
  };
  s.json = [](const RunConfig& c, Json& j) {
    if (c.inject_branch) j["inject_branch"] = {{"rank", c.inject_branch->rank}, {"block", c.inject_branch->block}};
  };
  t.push_back(s);

  s = {};
  s.flag = "--launch", s.type = SettingType::Choice, s.metavar = "HOW", s.default_text = "threads";
  s.choices = launchNames, s.in_presets = false;
  // cuda-emulated passes the mask so its rule below can say why it cannot.
  s.applies.backends = (1u << static_cast<unsigned>(Backend::Cpu)) | (1u << static_cast<unsigned>(Backend::Cuda)) |
                       (1u << static_cast<unsigned>(Backend::CudaEmulated));
  s.applies_text = "--backend cpu (Gloo between processes) or cuda (NCCL, one GPU per rank process); meta runs "
                   "its ranks as threads";
  s.help = "threads (every rank a thread of this process) or processes (one worker process per rank, as torchrun "
           "starts them, streaming their events here; same results)";
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.launch = choose(row, v, parseLaunch); };
  s.given = [](const RunConfig& c) { return c.launch != Launch::Threads; };
  s.rule = [](const RunConfig& c) {
    if (c.launch == Launch::Processes && c.backend == Backend::CudaEmulated)
      throw ConfigError("--launch processes does not apply to --backend cuda-emulated: it emulates all its ranks on "
                        "GPU 0 inside one process, so they cannot be processes; use --launch threads, or --backend "
                        "cuda --launch processes (one GPU per rank process)");
  };
  t.push_back(s);

  // The launch rows below describe where ranks run, not what runs: no JSON
  // key, no runArgs (the workers get the run's flags without them).
  s = {};
  s.flag = "--nnodes", s.metavar = "N", s.default_text = "1", s.in_presets = false, s.range = {1, 4096};
  s.help = "machines the run spans (--launch processes), each starting --nproc-per-node of the ranks";
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.nnodes = parseInt32(row.flag, v); };
  s.number = [](const RunConfig& c) -> std::optional<double> { return c.nnodes; };
  s.rule = [](const RunConfig& c) {
    if (c.nnodes == 1 && !c.nproc_per_node && c.node_rank == 0) return;
    if (c.launch != Launch::Processes)
      throw ConfigError("--nnodes, --node-rank and --nproc-per-node place rank processes: they need --launch processes");
    if (c.nnodes * c.procsPerNode() != c.ranks)
      throw ConfigError("--nnodes " + std::to_string(c.nnodes) + " x --nproc-per-node " +
                        std::to_string(c.procsPerNode()) + " must equal --ranks " + std::to_string(c.ranks));
    if (c.nnodes > 1 && c.rdzv.empty())
      throw ConfigError("--nnodes " + std::to_string(c.nnodes) +
                        " needs --rdzv file://DIR (a shared file system) or redis://HOST:PORT, where the nodes meet");
  };
  t.push_back(s);

  s = {};
  s.flag = "--node-rank", s.metavar = "R", s.default_text = "0", s.in_presets = false;
  s.help = "this machine's place among the --nnodes (0 writes the trace and summary)";
  s.range_for = [](const RunConfig& c, std::string& hint) {
    hint = " (the --nnodes " + std::to_string(c.nnodes) + " machines)";
    return Range{0, static_cast<double>(std::max(0, c.nnodes - 1))};
  };
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.node_rank = parseInt32(row.flag, v); };
  s.number = [](const RunConfig& c) -> std::optional<double> { return c.node_rank; };
  t.push_back(s);

  s = {};
  s.flag = "--nproc-per-node", s.metavar = "K", s.default_text = "ranks/nnodes", s.in_presets = false;
  s.range = {1, 4096};
  s.help = "rank processes this machine starts: ranks node_rank*K .. node_rank*K+K-1";
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.nproc_per_node = parseInt32(row.flag, v); };
  s.number = [](const RunConfig& c) -> std::optional<double> { return c.nproc_per_node; };
  t.push_back(s);

  s = {};
  s.flag = "--rdzv", s.type = SettingType::Text, s.metavar = "URL", s.in_presets = false;
  s.help = "where the rank processes meet: file://DIR (Gloo's FileStore: one host or a shared file system) or "
           "redis://HOST:PORT (Gloo's RedisStore) [a fresh directory on this host]";
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) {
    parseRendezvousUrl(v, row.flag);
    c.rdzv = v;
  };
  s.rule = [](const RunConfig& c) {
    if (!c.rdzv.empty() && c.launch != Launch::Processes)
      throw ConfigError("--rdzv is where rank processes meet: it needs --launch processes");
  };
  t.push_back(s);

  s = {};
  s.flag = "--rdzv-id", s.type = SettingType::Text, s.metavar = "ID", s.default_text = "shardscope";
  s.in_presets = false;
  s.help = "the run's name in the --rdzv store: the same on every node, new for every run (a job id)";
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) {
    if (v.empty() || v.size() > 128 || v.find_first_of("/ \t\n") != std::string::npos)
      throw ConfigError(std::string(row.flag) + " must be 1..128 characters without '/' or spaces, got '" + v + "'");
    c.rdzv_id = v;
  };
  t.push_back(s);

  s = {};
  s.flag = "--node-addr", s.type = SettingType::Text, s.metavar = "ADDR", s.default_text = "127.0.0.1";
  s.in_presets = false;
  s.help = "this machine's address as the other nodes reach it (its ranks listen there; node 0's collector too)";
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) {
    if (v.empty() || v.find_first_of(" /:") != std::string::npos)
      throw ConfigError(std::string(row.flag) + " must be a host name or IPv4 address, got '" + v + "'");
    c.node_addr = v;
  };
  t.push_back(s);

  s = {};
  s.flag = "--serve", s.type = SettingType::Text, s.metavar = "ADDR", s.in_presets = false;
  s.help = "let inspectors attach to the live run (shardscope --attach ADDR, shardscope-cli attach ADDR): PORT, "
           "HOST:PORT (port 0: any free one); 127.0.0.1 is served without keys, any other address with CURVE keys "
           "(shardscope-cli keys)";
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) {
    (void)parseServeAddress(v, row.flag, true);
    c.serve = v;
  };
  s.given = [](const RunConfig& c) { return !c.serve.empty(); };
  s.rule = [](const RunConfig& c) {
    if (!c.serve.empty() && c.node_rank > 0)
      throw ConfigError("--serve belongs on node 0 (--node-rank 0): it collects every node's ranks");
  };
  t.push_back(s);

  s = {};
  s.flag = "--serve-wait", s.metavar = "S", s.default_text = "0", s.in_presets = false, s.range = {0, 86400};
  s.help = "with --serve: hold the ranks until the first inspector attaches, at most S seconds (0: start at once; "
           "inspectors catch up from the start either way)";
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.serve_wait_s = parseInt32(row.flag, v); };
  s.number = [](const RunConfig& c) -> std::optional<double> { return c.serve_wait_s; };
  s.given = [](const RunConfig& c) { return c.serve_wait_s != 0; };
  s.rule = [](const RunConfig& c) {
    if (c.serve_wait_s != 0 && c.serve.empty()) throw ConfigError("--serve-wait needs --serve ADDR (where inspectors attach)");
  };
  t.push_back(s);

  s = {};
  s.flag = "--trace", s.type = SettingType::Text, s.metavar = "FILE", s.in_presets = false;
  s.help = "write a Chrome/Perfetto trace (JSON)";
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.trace_path = outputPath(row, v); };
  t.push_back(s);

  s = {};
  s.flag = "--summary", s.type = SettingType::Text, s.metavar = "FILE", s.in_presets = false;
  s.help = "write the run summary (JSON)";
  s.set = [](RunConfig& c, const Setting& row, const std::string& v) { c.summary_path = outputPath(row, v); };
  t.push_back(s);
  return t;
}

}  // namespace

bool Applicability::appliesTo(const RunConfig& c) const {
  if (!(strategies & bit(c.strategy))) return false;
  if (!(backends & (1u << static_cast<unsigned>(c.backend)))) return false;
  if (gpt_only && c.model.kind != ModelKind::Gpt) return false;
  if (custom_shape && !c.model.preset.empty()) return false;
  if (modeled_clock && c.clock != ClockKind::Modeled) return false;
  return true;
}

std::string Range::text() const {
  std::ostringstream os;
  if (!lo_open && !hi_open) {
    os << static_cast<long long>(lo) << ".." << static_cast<long long>(hi);
  } else {
    os << (lo_open ? '(' : '[') << lo << ", " << hi << (hi_open ? ')' : ']');
  }
  os << unit;
  return os.str();
}

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = buildTable();
  return table;
}

const Setting* findSetting(const std::string& name) {
  for (const Setting& s : settings())
    if (s.flag && (name == s.flag || name == s.presetKey())) return &s;
  return nullptr;
}

void requireRange(const char* flag, long long v, long long lo, long long hi, const std::string& hint) {
  if (v < lo || v > hi) {
    std::ostringstream os;
    os << flag << " must be in " << lo << ".." << hi << ", got " << v << hint;
    throw ConfigError(os.str());
  }
}

std::string exactText(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

Range ranksRange(Backend b) {
  switch (b) {
    case Backend::Meta: return {1, 1024};
    case Backend::CudaEmulated: return {1, 16};
    case Backend::Cuda:
    case Backend::Cpu: return {1, 64};
  }
  return {1, 64};
}

}  // namespace shardscope
