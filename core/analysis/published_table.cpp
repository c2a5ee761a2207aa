#include "analysis/published_table.h"

#include <algorithm>
#include <filesystem>

#include "common/errors.h"
#include "common/input_file.h"
#include "common/json_tree.h"
#include "model/hardware_profile.h"

namespace shardscope {

// A named namespace, not an anonymous one: unity batches share file scope.
namespace published_reader {

std::string joinNames(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "" : ", ") + n;
  return text;
}

// Reads one object of the table, knowing its path ("rows[2].parallel") for messages.
class Fields {
 public:
  Fields(const std::string& file, const Json& object, std::string path, std::vector<std::string> allowed)
      : m_file(file), m_object(object), m_path(std::move(path)) {
    if (!object.is_object()) fail(m_path, "must be an object, got " + describeJson(object));
    for (const auto& [key, value] : object.items())
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
        fail(at(key), "is not a field of " + m_path + "; allowed: " + joinNames(allowed));
  }

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw ConfigError("table " + m_file + ": " + where + " " + what);
  }
  std::string at(const std::string& key) const { return m_path + "." + key; }
  const Json* find(const std::string& key) const {
    const auto it = m_object.find(key);
    return it == m_object.end() ? nullptr : &*it;
  }
  const Json& require(const std::string& key, const std::string& what) const {
    const Json* v = find(key);
    if (!v) fail(at(key), "is missing (" + what + ")");
    return *v;
  }

  std::string text(const std::string& key, const std::string& what) const {
    const Json& v = require(key, what);
    if (!v.is_string() || v.get_ref<const std::string&>().empty())
      fail(at(key), "must be a non-empty string (" + what + "), got " + describeJson(v));
    return v.get<std::string>();
  }
  std::string choice(const std::string& key, const std::vector<std::string>& allowed,
                     const std::string& fallback = "") const {
    const Json* v = find(key);
    if (!v && !fallback.empty()) return fallback;
    const std::string value = text(key, "one of " + joinNames(allowed));
    if (std::find(allowed.begin(), allowed.end(), value) == allowed.end())
      fail(at(key), "must be one of " + joinNames(allowed) + ", got '" + value + "'");
    return value;
  }
  int count(const std::string& key, int lo, std::optional<int> fallback = std::nullopt) const {
    const Json* v = find(key);
    if (!v && fallback) return *fallback;
    if (!v) fail(at(key), "is missing (a whole number >= " + std::to_string(lo) + ")");
    int64_t n = 0;
    if (!jsonInteger(*v, n) || n < lo || n > (int64_t(1) << 30))
      fail(at(key), "must be a whole number >= " + std::to_string(lo) + ", got " + describeJson(*v));
    return static_cast<int>(n);
  }
  bool flag(const std::string& key, bool fallback) const {
    const Json* v = find(key);
    if (!v) return fallback;
    if (!v->is_boolean()) fail(at(key), "must be true or false, got " + describeJson(*v));
    return v->get<bool>();
  }
  std::optional<double> positive(const std::string& key, const std::string& unit) const {
    const Json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_number() || !(v->get<double>() > 0) || v->get<double>() > 1e9)
      fail(at(key), "must be a positive number (" + unit + "), got " + describeJson(*v));
    return v->get<double>();
  }

 private:
  const std::string& m_file;
  const Json& m_object;
  std::string m_path;
};

PublishedRow readRow(const std::string& file, const Json& json, const std::string& path) {
  const Fields row(file, json, path,
                   {"name", "source", "machine", "dtype", "model", "parallel", "batch", "recompute", "grad_dtype",
                    "published"});
  PublishedRow r;
  r.name = row.text("name", "what the row is");
  r.source = row.text("source", "the paper, table or figure the figures come from");
  r.machine = row.text("machine", "a hardware profile's name, e.g. a100-sxm4-80gb-selene");
  r.dtype = row.choice("dtype", {"bf16", "fp16"});
  r.fp32_grads = row.choice("grad_dtype", {"bf16", "fp32"}, "bf16") == "fp32";
  r.recompute = *parseCheckpointing(row.choice("recompute", checkpointingNames()));

  const Fields model(file, row.require("model", "the transformer's shape"), row.at("model"),
                     {"layers", "hidden", "heads", "kv_heads", "ffn", "ffn_kind", "vocab", "seq", "attention",
                      "dropout", "positions", "tied_embeddings", "biases"});
  ModelPreset& m = r.model;
  m.name = r.name;
  m.description = r.source;
  m.layers = model.count("layers", 1);
  m.hidden = model.count("hidden", 1);
  m.heads = model.count("heads", 1);
  if (m.hidden % m.heads != 0)
    model.fail(model.at("heads"), "must divide hidden (" + std::to_string(m.hidden) + "), got " + std::to_string(m.heads));
  m.kv_heads = model.count("kv_heads", 1, m.heads);
  if (m.heads % m.kv_heads != 0)
    model.fail(model.at("kv_heads"), "must divide heads (" + std::to_string(m.heads) + "), got " + std::to_string(m.kv_heads));
  m.ffn = model.count("ffn", 1, 4 * m.hidden);
  m.gated_mlp = model.choice("ffn_kind", {"gelu", "swiglu"}, "gelu") == "swiglu";
  m.vocab = model.count("vocab", 1);
  m.seq = model.count("seq", 1);
  r.attention = *parseAttention(model.choice("attention", attentionNames(), attentionName(Attention::Flash)));
  r.dropout = model.flag("dropout", false);
  m.learned_positions = model.choice("positions", {"learned", "rope"}, "learned") == "learned";
  m.tied_embeddings = model.flag("tied_embeddings", true);
  m.biases = model.flag("biases", true);

  const Fields par(file, row.require("parallel", "the layout"), row.at("parallel"),
                   {"gpus", "tp", "pp", "dp", "cp", "sp", "schedule", "virtual_stages", "data_parallel"});
  PublishedRow::Parallel& p = r.parallel;
  p.gpus = par.count("gpus", 1);
  p.tp = par.count("tp", 1);
  p.pp = par.count("pp", 1, 1);
  p.dp = par.count("dp", 1);
  p.cp = par.count("cp", 1, 1);
  p.sp = par.flag("sp", false);
  if (int64_t(p.tp) * p.pp * p.dp * p.cp != p.gpus)
    par.fail(par.at("gpus"), "must equal tp x pp x dp x cp (" + std::to_string(p.tp) + " x " + std::to_string(p.pp) +
                                 " x " + std::to_string(p.dp) + " x " + std::to_string(p.cp) + "), got " +
                                 std::to_string(p.gpus));
  p.schedule = par.find("schedule") ? par.choice("schedule", {"gpipe", "1f1b", "interleaved"}) : "";
  p.virtual_stages = par.count("virtual_stages", 1, 1);
  const std::string dp_name = par.choice("data_parallel", strategyNames(), "ddp");
  p.data_parallel = *parseStrategy(dp_name);

  const Fields batch(file, row.require("batch", "global and micro batch"), row.at("batch"), {"global", "micro"});
  r.global_batch = batch.count("global", 1);
  r.micro_batch = batch.count("micro", 1);
  if (r.global_batch % (r.micro_batch * p.dp) != 0)
    batch.fail(batch.at("global"), "must be a multiple of micro x dp (" + std::to_string(r.micro_batch * p.dp) +
                                       "), got " + std::to_string(r.global_batch));

  const Fields pub(file, row.require("published", "the figures the source reports"), row.at("published"),
                   {"iteration_s", "tflops_per_gpu", "flops", "memory_gib"});
  PublishedRow::Published& out = r.published;
  out.iteration_s = pub.positive("iteration_s", "seconds per iteration");
  out.tflops_per_gpu = pub.positive("tflops_per_gpu", "achieved TFLOP/s per GPU");
  if (pub.find("flops") && !out.tflops_per_gpu)
    pub.fail(pub.at("flops"), "applies only with tflops_per_gpu");
  if (out.tflops_per_gpu) {
    const Json* flops = pub.find("flops");
    if (!flops) pub.fail(pub.at("flops"), "is missing (how tflops_per_gpu counts FLOPs: megatron or 6N)");
    out.flops = pub.choice("flops", {"megatron", "6N"}) == "megatron" ? PublishedFlops::Megatron : PublishedFlops::SixN;
  }
  if (const Json* memory = pub.find("memory_gib")) {
    const Fields mem(file, *memory, pub.at("memory_gib"), {"param_opt", "activations", "param_opt_rank"});
    out.param_opt_gib = mem.positive("param_opt", "GiB per GPU: parameters, gradients and optimizer state");
    out.param_opt_interior = mem.choice("param_opt_rank", {"most_loaded", "interior_stage"}, "most_loaded") ==
                             "interior_stage";
    if (out.param_opt_interior && (!out.param_opt_gib || p.pp < 3))
      mem.fail(mem.at("param_opt_rank"), "interior_stage needs param_opt and pp >= 3 (a stage with neither the "
                                         "embedding nor the head), got pp " + std::to_string(p.pp));
    out.activations_gib = mem.positive("activations", "GiB per GPU: the activation peak");
    if (!out.param_opt_gib && !out.activations_gib)
      mem.fail(pub.at("memory_gib"), "must hold param_opt, activations or both");
  }
  if (!out.iteration_s && !out.tflops_per_gpu && !out.param_opt_gib && !out.activations_gib)
    pub.fail(row.at("published"), "must hold iteration_s, tflops_per_gpu or memory_gib");
  return r;
}

}  // namespace published_reader

std::vector<PublishedRow> parsePublishedTable(const std::string& json_text, const std::string& file) {
  Json root;
  try {
    root = parseJsonTree(json_text, [&file](const std::string& path) {
      throw ConfigError("table " + file + ": " + path + " appears twice");
    });
  } catch (const JsonSyntaxError& e) {
    throw ConfigError("table " + file + ":" + std::to_string(e.line()) + ":" + std::to_string(e.column()) + ": " +
                      e.what());
  }
  if (!root.is_object() || !root.contains("rows"))
    throw ConfigError("table " + file + ": the document must be an object {\"rows\": [...]}, got " + describeJson(root));
  for (const auto& [key, value] : root.items())
    if (key != "rows" && key != "description")
      throw ConfigError("table " + file + ": '" + key + "' is not a field of the table; allowed: rows, description");
  const Json& rows = root["rows"];
  if (!rows.is_array() || rows.empty())
    throw ConfigError("table " + file + ": rows must be a non-empty array of rows, got " + describeJson(rows));
  std::vector<PublishedRow> out;
  for (size_t i = 0; i < rows.size(); ++i)
    out.push_back(published_reader::readRow(file, rows[i], "rows[" + std::to_string(i) + "]"));
  return out;
}

std::vector<PublishedRow> loadPublishedTable(const std::string& path) {
  std::string text;
  try {
    text = readInputFile(path, presetFileRule());
  } catch (const InputFileError& e) {
    throw ConfigError("table " + path + ": " + e.reason());
  }
  return parsePublishedTable(text, path);
}

std::string defaultPublishedTablePath() {
  return (std::filesystem::path(profilesDir()).parent_path() / "validation" / "published.json").string();
}

}  // namespace shardscope
