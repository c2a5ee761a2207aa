// Settings rows: the model — its shape (a published --model fixes it), the
// backend that runs it (beside the model in the config JSON: a published shape
// is a meta model), and what a GPT block keeps for backward.
#include <sstream>

#include "common/errors.h"
#include "config/model_presets.h"
#include "config/settings_rows.h"

namespace shardscope::rows {

namespace {

std::vector<std::string> modelChoices() {
  std::vector<std::string> names = {"mlp", "gpt"};
  for (const ModelPreset& p : modelPresets()) names.push_back(p.name);
  return names;
}

void setModel(RunConfig& c, const Setting&, const std::string& v) {
  if (const std::optional<ModelKind> kind = parseModelKind(v)) {
    c.model.kind = *kind;
    return;
  }
  try {
    // A published shape keeps the activation settings given before it.
    const Attention attention = c.model.attention;
    const Checkpointing checkpointing = c.model.checkpointing;
    const bool sequence_parallel = c.model.sequence_parallel;
    c.model = presetShape(v);
    c.model.attention = attention, c.model.checkpointing = checkpointing;
    c.model.sequence_parallel = sequence_parallel;
  } catch (const ConfigError&) {
    std::vector<std::string> names;
    for (const ModelPreset& p : modelPresets()) names.push_back(p.name);
    throw ConfigError("--model must be mlp, gpt or a preset (" + joinComma(names) + "), got '" + v + "'");
  }
}

void setBackend(RunConfig& c, const Setting& s, const std::string& v) {
  c.backend = choose(s, v, parseBackend);
  if (c.backend == Backend::Meta) c.clock = ClockKind::Modeled;  // the only clock a shapes-only run has
}

void backendRule(const RunConfig& c) {
  if (c.backend == Backend::Meta && c.clock != ClockKind::Modeled)
    throw ConfigError("--backend meta runs no math, so it needs --clock modeled");
  if (isGpuBackend(c.backend) && c.clock != ClockKind::Measured)
    throw ConfigError("--backend " + backendName(c.backend) +
                      " measures the GPU (CUDA events): use --clock measured, or --backend meta with a --profile "
                      "to model other hardware");
}

void headsDivideHidden(const RunConfig& c) {
  if (gpt(c) && c.model.hidden % c.model.heads != 0) {
    std::ostringstream os;
    os << "--hidden " << c.model.hidden << " must be a multiple of --heads " << c.model.heads
       << " (head dim = hidden / heads)";
    throw ConfigError(os.str());
  }
}

bool customShape(const RunConfig& c) { return !published(c); }
bool customGpt(const RunConfig& c) { return !published(c) && gpt(c); }

// The shape knobs a published --model fixes itself (applies.custom_shape).
constexpr Applicability kShape = {.custom_shape = true};
constexpr Applicability kGptShape = {.gpt_only = true, .custom_shape = true};

const Setting kModelRows[] = {
    {
        .flag = "--layers", .json_key = "layers", .metavar = "L", .default_text = "8", .help = "blocks",
        .applies = kShape, .range = {1, 256},
        .form = {.group = "Model", .label = "layers", .max = 4096},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.model.layers = parseInt32(s.flag, v); },
        .text = [](const RunConfig& c) { return num(c.model.layers); },
        .written = customShape,
        .number = [](const RunConfig& c) -> std::optional<double> { return c.model.layers; },
        .json = [](const RunConfig& c) -> std::optional<Json> { return c.model.layers; },
    },
    {
        .flag = "--hidden", .json_key = "hidden", .metavar = "D", .default_text = "512",
        .help = "hidden width (inner 4D)", .applies = kShape, .range = {8, 8192},
        .form = {.group = "Model", .label = "hidden", .max = 65536},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.model.hidden = parseInt32(s.flag, v); },
        .text = [](const RunConfig& c) { return num(c.model.hidden); },
        .written = customShape,
        .number = [](const RunConfig& c) -> std::optional<double> { return c.model.hidden; },
        .json = [](const RunConfig& c) -> std::optional<Json> { return c.model.hidden; },
    },
    {
        .flag = "--model", .json_key = "model", .type = SettingType::Choice, .metavar = "KIND", .default_text = "mlp",
        .help = "mlp (residual MLP, regression), gpt (attention + MLP blocks on a byte-level text corpus), or a "
                "published shape for --backend meta",
        .choices = modelChoices,
        .form = {.group = "Model", .label = "model"},
        .parse = setModel,
        .text = [](const RunConfig& c) -> Text { return published(c) ? c.model.preset : modelKindName(c.model.kind); },
        .rule = [](const RunConfig& c) {
          if (published(c) && c.backend != Backend::Meta)
            throw ConfigError("--model " + c.model.preset +
                              " is a published shape for --backend meta (the CPU GPT model is GPT-2 style: use "
                              "--model gpt with --layers/--hidden/--heads)");
        },
        // A published shape's name goes beside it as "model_preset" (config_json.cpp).
        .json = [](const RunConfig& c) -> std::optional<Json> { return modelKindName(c.model.kind); },
    },
    {
        .flag = "--backend", .json_key = "backend", .type = SettingType::Choice, .metavar = "NAME",
        .default_text = "cpu",
        .help = "cpu: real math on CPU ranks; meta: shapes only, no math or memory, modeled clock (big models); cuda: "
                "one rank per GPU, NCCL; cuda-emulated: all ranks on GPU 0, collectives as device copies",
        .choices = backendNames,
        .form = {.group = "Clock and backend", .label = "backend"},
        .parse = setBackend,
        .text = [](const RunConfig& c) -> Text { return backendName(c.backend); },
        .written = [](const RunConfig& c) { return c.backend != Backend::Cpu; },
        .rule = backendRule,
        .json = [](const RunConfig& c) -> std::optional<Json> { return backendName(c.backend); },
    },
    {
        .flag = "--heads", .json_key = "heads", .metavar = "H", .default_text = "4",
        .help = "gpt: attention heads; must divide --hidden", .applies = kGptShape, .range = {1, 256},
        .form = {.group = "Model", .label = "heads", .max = 4096},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.model.heads = parseInt32(s.flag, v); },
        .text = [](const RunConfig& c) { return num(c.model.heads); },
        .written = customGpt,
        .number = [](const RunConfig& c) -> std::optional<double> { return c.model.heads; },
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(gpt(c))) return std::nullopt;
          return c.model.heads;
        },
    },
    {
        .flag = "--seq", .json_key = "seq", .metavar = "T", .default_text = "64", .help = "gpt: tokens per sample",
        .applies = kGptShape, .range = {1, 4096},
        .form = {.group = "Model", .label = "seq", .max = 65536},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.model.seq = parseInt32(s.flag, v); },
        .text = [](const RunConfig& c) { return num(c.model.seq); },
        .written = customGpt,
        .number = [](const RunConfig& c) -> std::optional<double> { return c.model.seq; },
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(gpt(c))) return std::nullopt;
          return c.model.seq;
        },
    },
    {
        .flag = "--vocab", .json_key = "vocab", .metavar = "V", .default_text = "256",
        .help = "gpt: vocabulary (byte-level tokens need 256 ids)", .applies = kGptShape, .range = {256, 1 << 20},
        .range_hint = " (byte-level tokens need 256 ids)",
        .form = {.group = "Model", .label = "vocab", .max = 1 << 22},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) { c.model.vocab = parseInt32(s.flag, v); },
        .text = [](const RunConfig& c) { return num(c.model.vocab); },
        .written = customGpt,
        .number = [](const RunConfig& c) -> std::optional<double> { return c.model.vocab; },
        .rule = headsDivideHidden,
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(gpt(c))) return std::nullopt;
          return c.model.vocab;
        },
    },
    {
        .json_key = "io_dim",  // mlp's input/target width: no flag (fixed by the model)
        .in_presets = false,
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(!gpt(c))) return std::nullopt;
          return c.model.io_dim;
        },
    },
    // What a GPT block keeps for backward (the residual MLP has neither knob).
    // Written to the flags only when not the default, so a run without them reads as before.
    {
        .flag = "--attention", .json_key = "attention", .type = SettingType::Choice, .metavar = "KIND",
        .default_text = "flash",
        .help = "gpt: naive keeps the (B, H, S, S) softmax for backward; flash keeps only its row statistics and "
                "recomputes the scores in backward (FlashAttention)",
        .choices = attentionNames,
        .applies = {.gpt_only = true},
        .applies_text = "--model gpt or a published shape (the residual MLP has no attention)",
        .form = {.group = "Model", .label = "attention"},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) {
          c.model.attention = choose(s, v, parseAttention);
        },
        .text = [](const RunConfig& c) -> Text { return attentionName(c.model.attention); },
        .written = [](const RunConfig& c) { return gpt(c) && c.model.attention != Attention::Flash; },
        .given = [](const RunConfig& c) { return c.model.attention != Attention::Flash; },
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(gpt(c))) return std::nullopt;
          return attentionName(c.model.attention);
        },
    },
    {
        .flag = "--activation-checkpointing", .json_key = "activation_checkpointing", .type = SettingType::Choice,
        .metavar = "MODE", .default_text = "none",
        .help = "gpt, per block: none; selective recomputes the attention core in backward; full keeps only each "
                "block's input and recomputes the block in backward",
        .choices = checkpointingNames,
        .applies = {.gpt_only = true},
        .applies_text = "--model gpt or a published shape (the residual MLP has no blocks to checkpoint)",
        .form = {.group = "Model", .label = "activation checkpointing"},
        .parse = [](RunConfig& c, const Setting& s, const std::string& v) {
          c.model.checkpointing = choose(s, v, parseCheckpointing);
        },
        .text = [](const RunConfig& c) -> Text { return checkpointingName(c.model.checkpointing); },
        .written = [](const RunConfig& c) { return gpt(c) && c.model.checkpointing != Checkpointing::None; },
        .given = [](const RunConfig& c) { return c.model.checkpointing != Checkpointing::None; },
        .rule = [](const RunConfig& c) {
          if (gpt(c) && c.model.checkpointing != Checkpointing::None && isGpuBackend(c.backend))
            throw ConfigError("--activation-checkpointing " + checkpointingName(c.model.checkpointing) +
                              " applies to --backend cpu or meta (the CUDA GPT model has no recompute path); use "
                              "none");
        },
        .json = [](const RunConfig& c) -> std::optional<Json> {
          if (!(gpt(c))) return std::nullopt;
          return checkpointingName(c.model.checkpointing);
        },
    },
};

}  // namespace

std::span<const Setting> modelRows() { return kModelRows; }

}  // namespace shardscope::rows
