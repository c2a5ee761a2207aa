#include "cli/calc_command.h"

#include <charconv>
#include <cmath>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>

#include "analysis/capacity.h"
#include "cli/calc_stages.h"
#include "common/exit_codes.h"
#include "common/errors.h"
#include "config/model_presets.h"
#include "config/model_shape.h"
#include "model/layer_fit.h"
#include "model/model_spec.h"
#include "common/json_tree.h"

namespace shardscope {

namespace {

constexpr int kMaxRanks = 1'000'000;
constexpr double kMaxCapacityGb = 1e6;

const char* const kActivationNote =
    "model states only (bf16 params and grads, fp32 master weights, Adam m and v); activations, "
    "temporary buffers (DDP gradient buckets, zero3's gathered layers) and the CUDA context are extra (with a model "
    "preset, --pp S gives the per-stage plan with activations: see calc --help)";

// The request with its preset resolved, as the printers read it.
struct CalcArgs {
  std::optional<int64_t> params;
  const ModelPreset* model = nullptr;
  std::optional<int> ranks;
  double capacity_gb = 80;
  int shard_group = 0;
  int tp = 1;
};

int parseCount(const std::string& flag, const std::string& text, int lo, int hi) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && end == text.data() + text.size() && (v < lo || v > hi)))
    throw ConfigError(flag + " must be in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + text);
  if (ec != std::errc() || end != text.data() + text.size())
    throw ConfigError(flag + " expects an integer, got '" + text + "'");
  return v;
}

double parseGb(const std::string& flag, const std::string& text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v))
    throw ConfigError(flag + " expects a number of GB (1 GB = 1e9 bytes), got '" + text + "'");
  if (!(v > 0) || v > kMaxCapacityGb)
    throw ConfigError(flag + " must be in (0, 1e6] GB, got " + text);
  return v;
}

std::string shortNumberOf(double x) {  // 80, 79.5, 0.125
  std::ostringstream os;
  os << std::setprecision(6) << x;
  return os.str();
}

CalcRequest parseRequest(const std::vector<std::string>& args) {
  CalcRequest c;
  std::vector<std::string> seen;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag.rfind("--", 0) != 0) throw ConfigError("unexpected argument '" + flag + "' (see calc --help)");
    for (const std::string& s : seen)
      if (s == flag) throw ConfigError(flag + " is given twice");
    seen.push_back(flag);
    if (i + 1 >= args.size()) throw ConfigError(flag + " needs a value (see calc --help)");
    const std::string& v = args[++i];
    if (flag == "--params") c.params = parseParamCount(flag, v);
    else if (flag == "--model") c.model = findModelPreset(v).name;
    else if (flag == "--ranks") c.ranks = parseCount(flag, v, 1, kMaxRanks);
    else if (flag == "--capacity-gb") c.capacity_gb = parseGb(flag, v);
    else if (flag == "--shard-group") c.shard_group = parseCount(flag, v, 1, kMaxRanks);
    else if (flag == "--tp") c.tp = parseCount(flag, v, 1, kMaxRanks);
    else throw ConfigError("unknown flag " + flag + " (see calc --help)");
  }
  return c;
}

// The checks across flags, and the ones a request built in code skips.
CalcArgs validate(const CalcRequest& r) {
  CalcArgs c;
  c.params = r.params;
  c.model = r.model.empty() ? nullptr : &findModelPreset(r.model);
  c.ranks = r.ranks;
  c.capacity_gb = r.capacity_gb;
  c.shard_group = r.shard_group;
  c.tp = r.tp;
  if (c.params && (*c.params < 1)) throw ConfigError("--params must be at least 1");
  if (c.ranks && (*c.ranks < 1 || *c.ranks > kMaxRanks))
    throw ConfigError("--ranks must be in 1.." + std::to_string(kMaxRanks) + ", got " + std::to_string(*c.ranks));
  if (!(c.capacity_gb > 0) || c.capacity_gb > kMaxCapacityGb || !std::isfinite(c.capacity_gb))
    throw ConfigError("--capacity-gb must be in (0, 1e6] GB, got " + shortNumberOf(c.capacity_gb));
  if (c.shard_group < 0) throw ConfigError("--shard-group must be at least 1");
  if (c.tp < 1) throw ConfigError("--tp must be at least 1");
  if (c.params && c.model) throw ConfigError("give either --params or --model, not both");
  if (!c.params && !c.model) throw ConfigError("calc needs --params N (e.g. 7B) or --model PRESET (see calc --help)");
  if (!c.ranks && c.shard_group > 0)
    throw ConfigError("--shard-group needs --ranks P (the hsdp row shards within groups of G out of P ranks)");
  if (!c.ranks && c.tp > 1)
    throw ConfigError("--tp needs --ranks P (the stages shard one TP slice over P/T data-parallel ranks)");
  if (c.ranks && *c.ranks % c.tp != 0) {
    std::ostringstream os;
    os << "--tp " << c.tp << " must divide --ranks " << *c.ranks << "; use one of";
    for (int d = 1; d <= *c.ranks && d <= 1024; ++d)
      if (*c.ranks % d == 0) os << ' ' << d;
    throw ConfigError(os.str());
  }
  if (c.tp > 1 && c.model) {
    const ModelPreset& m = *c.model;
    if (m.heads % c.tp != 0 || m.kv_heads % c.tp != 0)
      throw ConfigError("--tp " + std::to_string(c.tp) + " must divide the " + m.name + "'s " + std::to_string(m.heads) +
                        " heads and " + std::to_string(m.kv_heads) + " key/value heads");
  }
  if (c.ranks && c.shard_group > *c.ranks)
    throw ConfigError("--shard-group " + std::to_string(c.shard_group) + " must be at most --ranks " +
                      std::to_string(*c.ranks) + " and divide it");
  return c;
}

// A layer that does not fit (model/layer_fit.h): only for a published shape.
LayerFit layerFit(const CalcArgs& a, double capacity_bytes) {
  if (!a.model) return {};
  return singleLayerFit(presetShape(a.model->name), a.tp, capacity_bytes);
}

std::string withCommas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string gb(double bytes, int decimals = 2) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(decimals) << bytes / kBytesPerGb;
  return os.str();
}

std::string shortNumber(double x) { return shortNumberOf(x); }

void printText(const CalcArgs& a, const CapacityReport& r, std::ostream& out) {
  const CapacityInput& in = r.input;
  const std::string cap = shortNumber(a.capacity_gb) + " GB";
  if (a.model) {
    const ModelPreset& m = *a.model;
    out << m.name << ": " << withCommas(m.params()) << " params (" << m.layers << " layers, hidden " << m.hidden
        << ", ffn " << m.ffn << ", " << m.heads << " heads / " << m.kv_heads << " KV heads, vocab " << m.vocab
        << ", seq " << m.seq << ")\n";
  } else {
    out << "model: " << withCommas(a.params ? *a.params : in.params) << " params\n";
  }
  out << "model states: bf16 param 2 + bf16 grad 2 + fp32 master 4 + Adam m 4 + Adam v 4 = 16 bytes/param unsharded\n";
  if (a.tp > 1) {
    out << "tensor parallel: " << a.tp << " ranks split each block (Megatron-LM); each holds " << withCommas(in.params)
        << " params"
        << (a.model ? " (its slice; norms and row-parallel biases whole, embedding and head vocab-parallel)"
                    : " (N/T: every parameter counted as split)")
        << ", and the stages below shard that slice over the " << in.ranks << " data-parallel ranks of "
        << in.ranks * a.tp << "\n";
    out << "data-parallel ";
  }
  out << in.ranks << " ranks";
  if (in.shard_group > 0) out << " (hsdp: shard groups of " << in.shard_group << ", " << in.ranks / in.shard_group << " replicas)";
  out << ", capacity " << cap << " per rank (1 GB = 1e9 bytes)\n\n";

  // Under TP two per-param figures differ by T: per parameter of the slice
  // the stages shard, and per parameter of the model (what `run` reports).
  const bool tp = in.tp > 1;
  out << std::left << std::setw(8) << "stage" << std::right << std::setw(tp ? 14 : 12)
      << (tp ? "B/slice param" : "bytes/param");
  if (tp) out << std::setw(14) << "B/model param";
  out << std::setw(12) << "GB/rank" << "   fits " << cap << "\n";
  for (const StageCapacity& s : r.stages) {
    out << std::left << std::setw(8) << strategyName(s.stage) << std::right << std::setw(tp ? 14 : 12) << std::fixed
        << std::setprecision(3) << s.bytes_per_param;
    if (tp) out << std::setw(14) << s.bytes_per_model_param;
    out << std::setw(12) << gb(static_cast<double>(s.bytes_per_rank)) << "   " << (s.fits ? "yes" : "no") << "\n";
  }
  if (tp)
    out << "B/model param: per parameter of the whole model, the figure `run` reports for the same layout "
           "(the slice's figure / T)\n";
  out.unsetf(std::ios::floatfield);
  out << "\n";
  if (r.smallest_fitting_stage)
    out << "smallest stage that fits " << cap << " per rank: " << strategyName(*r.smallest_fitting_stage) << "\n";
  else
    out << "no stage fits " << cap << " per rank on " << in.ranks << " ranks\n";
  if (r.zero3_min_ranks > 0) {
    const double total = 16.0 * static_cast<double>(in.params);
    std::ostringstream ratio;
    ratio << std::fixed << std::setprecision(2) << total / in.capacity_bytes;
    out << "zero3 fits " << cap << " from " << r.zero3_min_ranks << " ranks up (" << gb(total) << " GB of model states / "
        << cap << " = " << ratio.str() << ", rounded up)\n";
  } else {
    out << "zero3 never fits " << cap << ": one param's 16 bytes exceed it\n";
  }
  if (const LayerFit f = layerFit(a, in.capacity_bytes); !f.fits) {
    out << "a single layer does not fit " << cap << ": one block's gathered bf16 params and unsharded bf16 grads are "
        << gb(static_cast<double>(f.bytes)) << " GB on whichever rank computes it, at any P; data parallelism cannot "
        << "split a layer, tensor parallelism does: ";
    if (f.smallest_tp > 0) out << "--tp " << f.smallest_tp << " is the smallest that fits\n";
    else out << "no --tp up to the " << f.max_tp << " key/value heads makes one fit (pipeline parallelism is the other way)\n";
  }
  out << "note: " << kActivationNote << ".\n";
}

void printJson(const CalcArgs& a, const CapacityReport& r, std::ostream& out) {
  const CapacityInput& in = r.input;
  Json j;
  j["params"] = a.tp > 1 ? (a.model ? a.model->params() : *a.params) : in.params;
  j["model"] = a.model ? Json(a.model->name) : Json(nullptr);
  j["ranks"] = in.ranks;
  j["shard_group"] = in.shard_group > 0 ? Json(in.shard_group) : Json(nullptr);
  if (a.tp > 1) {
    // The stages are one TP slice's, sharded along the data-parallel axis.
    j["tp"] = a.tp;
    j["slice_params"] = in.params;
    j["data_parallel_ranks"] = in.ranks;
  }
  j["capacity_gb"] = a.capacity_gb;
  j["bytes_per_gb"] = static_cast<int64_t>(kBytesPerGb);
  Json& stages = j["stages"] = Json::array();
  for (const StageCapacity& s : r.stages) {
    Json stage;
    stage["stage"] = strategyName(s.stage);
    stage["bytes_per_param"] = s.bytes_per_param;
    stage["bytes_per_model_param"] = s.bytes_per_model_param;
    stage["bytes_per_rank"] = s.bytes_per_rank;
    stage["gb_per_rank"] = static_cast<double>(s.bytes_per_rank) / kBytesPerGb;
    stage["fits"] = s.fits;
    stages.push_back(std::move(stage));
  }
  j["smallest_fitting_stage"] = r.smallest_fitting_stage ? Json(strategyName(*r.smallest_fitting_stage)) : Json(nullptr);
  j["zero3_min_ranks"] = r.zero3_min_ranks > 0 ? Json(r.zero3_min_ranks) : Json(nullptr);
  if (a.model) {
    const LayerFit f = layerFit(a, in.capacity_bytes);
    j["layer_bytes"] = f.bytes;  // one block gathered (bf16 params) with its unsharded bf16 grads
    j["layer_fits"] = f.fits;
    j["smallest_tp_for_layer"] = f.fits ? Json(a.tp) : f.smallest_tp > 0 ? Json(f.smallest_tp) : Json(nullptr);
  }
  j["activations_included"] = false;
  j["note"] = kActivationNote;
  out << j.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
}

}  // namespace

std::string calcUsage() {
  std::string presets;
  for (const ModelPreset& p : modelPresets()) presets += (presets.empty() ? "" : ", ") + p.name;
  return R"(usage: shardscope-cli calc (--params N | --model PRESET) [--ranks P] [flags]
Model-state memory per rank (bf16 params + grads, fp32 master, Adam m, v:
16 bytes/param unsharded) for ddp, zero1, zero2, zero3 and hsdp; activations extra.
  --params N         parameter count: 124M, 7B, 7e9, 70B, 1.5T or a plain number
  --model PRESET     )" + presets + R"(
  --ranks P          data-parallel ranks, 1..1000000; without it: the smallest P
                     for zero3, and the table at that P
  --capacity-gb C    memory per rank in GB (1 GB = 1e9 bytes)                 [80]
  --shard-group G    add an hsdp row: shard within groups of G (G divides P)
  --tp T             tensor-parallel ranks (T divides P): one TP rank's slice,
                     sharded over the P/T data-parallel ranks
  --json             print one JSON object instead of the table
  --help             this text
exit codes: 0 ok, 2 bad input
)";
}

CalcRequest parseCalcRequest(const std::vector<std::string>& args) { return parseRequest(args); }

CalcAnswer answerCalc(const CalcRequest& request) {
  const CalcArgs a = validate(request);
  CalcAnswer answer;
  answer.model = a.model;
  answer.ranks_given = a.ranks.has_value();
  CapacityInput in;
  in.params = a.model ? a.model->params() : *a.params;
  in.ranks = a.ranks.value_or(1);
  if (a.tp > 1) {
    // One TP rank's parameters: the preset's slice as a run builds it, or N/T.
    in.params = a.model ? ModelSpec(presetShape(a.model->name), a.tp).numParams() : (in.params + a.tp - 1) / a.tp;
    in.ranks = *a.ranks / a.tp;
    in.tp = a.tp;
  }
  in.shard_group = a.shard_group;
  in.capacity_bytes = a.capacity_gb * kBytesPerGb;
  answer.report = computeCapacity(in);
  answer.layer = layerFit(a, in.capacity_bytes);
  std::ostringstream text, json;
  if (!a.ranks) {
    // No --ranks: the question is how many ranks zero3 needs. Answer it,
    // then show every stage at that P.
    const int64_t p = answer.report.zero3_min_ranks;
    if (p > kMaxRanks || p < 1) {
      answer.zero3_never = true;
      printJson(a, answer.report, json);
      text << "zero3 never fits " << shortNumber(a.capacity_gb) << " GB per rank"
           << (p < 1 ? ": one param's 16 bytes exceed it" : " on up to " + std::to_string(kMaxRanks) + " ranks") << "\n";
      answer.text = text.str();
      answer.json = json.str();
      return answer;
    }
    in.ranks = static_cast<int>(p);
    answer.report = computeCapacity(in);
    text << "smallest P for zero3: " << p << " ranks (no --ranks given: the table is at P = " << p << ")\n\n";
  }
  printJson(a, answer.report, json);
  printText(a, answer.report, text);
  answer.text = text.str();
  answer.json = json.str();
  return answer;
}

int commandCalc(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    bool json = false;
    std::vector<std::string> flags;
    for (const std::string& arg : args) {
      if (arg == "--help" || arg == "-h") {
        out << calcUsage() << calcStagesUsage();
        return kExitOk;
      }
      if (arg == "--json") json = true;
      else flags.push_back(arg);
    }
    if (calcWantsStagePlan(flags)) {
      const CalcStagesAnswer answer = answerCalcStages(flags);
      out << (json ? answer.json : answer.text);
      return kExitOk;
    }
    const CalcAnswer answer = answerCalc(parseCalcRequest(flags));
    out << (json ? answer.json : answer.text);
    return kExitOk;
  } catch (const ConfigError& e) {
    err << "error: " << e.what() << "\n";
    return kExitBadInput;
  }
}

}  // namespace shardscope
