#include "cli/calc_stages.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "analysis/capacity.h"
#include "analysis/formulas.h"
#include "common/errors.h"
#include "common/json_tree.h"
#include "config/model_presets.h"
#include "model/model_spec.h"

namespace shardscope {

namespace {

// `run`'s flags a stage plan takes (parsed by the settings table), and calc's own.
const std::vector<std::string> kCsRunFlags = {"--model",  "--ranks",       "--strategy",       "--tp",
                                              "--pp",     "--microbatches", "--pp-schedule",   "--virtual-stages",
                                              "--sp",     "--activation-checkpointing", "--attention", "--layers",
                                              "--hidden", "--heads",       "--seq",            "--vocab",
                                              "--shard-group"};
// Flags only a stage plan has (their presence selects it).
const std::vector<std::string> kCsStageOnly = {"--strategy", "--pp", "--microbatches", "--pp-schedule",
                                               "--virtual-stages", "--sp", "--activation-checkpointing", "--attention",
                                               "--layers", "--hidden", "--heads", "--seq", "--vocab", "--micro-batch",
                                               "--fit", "--compare-schedules"};

bool csContains(const std::vector<std::string>& list, const std::string& s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

struct CsRequest {
  std::vector<std::string> run_flags;  // handed to parseRunArgs
  double capacity_gb = 80;
  int micro_batch = 1;
  bool fit = false, compare = false, ranks_given = false, mesh_given = false, microbatches_given = false;
};

CsRequest csParse(const std::vector<std::string>& args) {
  CsRequest r;
  std::vector<std::string> seen;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag.rfind("--", 0) != 0) throw ConfigError("unexpected argument '" + flag + "' (see calc --help)");
    if (csContains(seen, flag)) throw ConfigError(flag + " is given twice");
    seen.push_back(flag);
    if (flag == "--fit") { r.fit = true; continue; }
    if (flag == "--compare-schedules") { r.compare = true; continue; }
    if (flag == "--params")
      throw ConfigError("--params gives a count, not a shape; a stage plan needs the model's layers, hidden size and "
                        "heads: --model PRESET (" + std::string("see calc --help") + ") or --model gpt --layers L "
                        "--hidden H --heads A --seq S --vocab V");
    if (flag == "--capacity-gb" || flag == "--micro-batch" || csContains(kCsRunFlags, flag)) {
      if (i + 1 >= args.size()) throw ConfigError(flag + " needs a value (see calc --help)");
      const std::string& v = args[++i];
      if (flag == "--capacity-gb") {
        double gb = 0;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), gb);
        if (ec != std::errc() || end != v.data() + v.size() || !std::isfinite(gb) || !(gb > 0) || gb > 1e6)
          throw ConfigError("--capacity-gb expects a number of GB in (0, 1e6] (1 GB = 1e9 bytes), got '" + v + "'");
        r.capacity_gb = gb;
      } else if (flag == "--micro-batch") {
        int b = 0;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), b);
        if (ec != std::errc() || end != v.data() + v.size() || b < 1 || b > 65536)
          throw ConfigError("--micro-batch expects samples per microbatch in 1..65536, got '" + v + "'");
        r.micro_batch = b;
      } else {
        r.run_flags.push_back(flag);
        r.run_flags.push_back(v);
        r.ranks_given = r.ranks_given || flag == "--ranks";
        r.mesh_given = r.mesh_given || flag == "--tp" || flag == "--pp";
        r.microbatches_given = r.microbatches_given || flag == "--microbatches";
      }
      continue;
    }
    throw ConfigError("calc does not take " + flag + " (see calc --help)");
  }
  if (!r.ranks_given)
    throw ConfigError("a stage plan needs --ranks W: every GPU of the job, W = TP × PP × data-parallel ranks");
  if (r.fit && r.mesh_given)
    throw ConfigError("--fit searches --tp and --pp itself (T in 1, 2, 4, 8; S dividing W/T); leave them out");
  return r;
}

std::string csGb(double bytes) {
  std::ostringstream os;
  const double gb = bytes / kBytesPerGb;
  os << std::fixed << std::setprecision(gb > 0 && gb < 0.01 ? 5 : 2) << gb;
  return os.str();
}

std::string csCommas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string csPercent(double share) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << 100.0 * share << " %";
  return os.str();
}

std::string csModelLine(const RunConfig& c) {
  const ModelShape& m = c.model;
  std::ostringstream os;
  os << (m.preset.empty() ? "gpt" : m.preset) << ": " << csCommas(modelParams(c)) << " params (" << m.layers
     << " layers, hidden " << m.hidden << ", ffn " << (m.ffn > 0 ? m.ffn : 4 * m.hidden) << ", " << m.heads << " heads";
  if (m.kv_heads > 0) os << " / " << m.kv_heads << " KV heads";
  os << ", vocab " << m.vocab << ", seq " << m.seq << ")\n";
  return os.str();
}

std::string csMeshLine(const RunConfig& c) {
  std::ostringstream os;
  os << c.ranks << " GPUs = TP " << c.tp << " x PP " << c.pp << " x DP " << c.dataParallelSize() << " ("
     << strategyName(c.strategy) << " on the data-parallel axis); " << c.microbatchCount() << " microbatch"
     << (c.microbatchCount() == 1 ? "" : "es") << " of " << c.microBatchSize() << " sample"
     << (c.microBatchSize() == 1 ? "" : "s") << " per step (global batch " << c.batch << ")";
  if (c.pp > 1) {
    os << ", " << pipelineScheduleName(c.pipelineSchedule());
    if (c.virtualStages() > 1) os << " with " << c.virtualStages() << " chunks per stage";
  }
  os << "; sequence parallel " << (c.model.sequence_parallel && c.tp > 1 ? "on" : "off") << ", recompute "
     << checkpointingName(c.model.checkpointing) << ", attention " << attentionName(c.model.attention) << "\n";
  return os.str();
}

void csPrintPlan(const ParallelPlan& p, std::ostream& out) {
  const RunConfig& c = p.config;
  out << csModelLine(c) << csMeshLine(c);
  out << "activations per microbatch (formula, Korthikanti et al. 2022 adapted): " << csGb(p.per_layer_bytes)
      << " GB per block, the embedding " << csGb(p.embedding_bytes) << " GB on the first stage, the head "
      << csGb(p.head_bytes) << " GB on the last";
  if (p.recompute_bytes > 0) out << "; backward's recompute adds " << csGb(p.recompute_bytes) << " GB for one block";
  RunConfig one_slice = c;  // the strategy's bytes per parameter a GPU holds, without the T and the stages
  one_slice.tp = 1;
  one_slice.pp = 1;
  std::ostringstream bpp;
  bpp << std::setprecision(4) << strategyBytesPerParam(c);
  const std::string formula = modelStateFormulaText(one_slice);
  out << "\nmodel states (formula, ZeRO paper): " << formula << (formula == bpp.str() ? "" : " = " + bpp.str())
      << " bytes per parameter a GPU holds (P = " << c.dataParallelSize() << " data-parallel rank"
      << (c.dataParallelSize() == 1 ? "" : "s") << "), for its stage's parameters of one TP slice\n\n";
  // What a stage holds goes last: interleaved stages hold several chunks.
  out << std::left << std::setw(6) << "stage" << std::right << std::setw(15) << "params/GPU" << std::setw(10)
      << "in flight" << std::setw(10) << "model GB" << std::setw(11) << "activ. GB" << std::setw(12) << "buffers GB"
      << std::setw(9) << "peak GB" << "  fits  holds\n";
  for (const StagePlan& s : p.stages) {
    const bool fits = double(s.peakBytes()) <= p.capacity_bytes;
    out << std::left << std::setw(6) << s.stage << std::right << std::setw(15) << csCommas(s.params) << std::setw(10)
        << s.in_flight << std::setw(10) << csGb(double(s.model_state_bytes)) << std::setw(11)
        << csGb(double(s.activation_bytes)) << std::setw(12) << csGb(double(s.buffer_bytes)) << std::setw(9)
        << csGb(double(s.peakBytes())) << "  " << (fits ? "yes " : "no  ") << "  " << s.holds << "\n";
  }
  const StagePlan& m = p.mostLoaded();
  out << "\nmost loaded: stage " << m.stage << ", " << csGb(double(m.peakBytes())) << " GB of "
      << csGb(p.capacity_bytes) << " GB per GPU: " << (p.fits() ? "fits" : "does not fit") << "\n";
  if (c.pp > 1)
    out << "bubble (formula): (S - 1)/(V·M + S - 1) = " << csPercent(p.bubble) << "\n";
  out << "in flight: microbatch-chunks whose forward has run and backward not yet at the stage's peak (1f1b: S - k "
         "on stage k; gpipe: M); buffers: one segment's bf16 gradients during backward (zero3/fsdp: with its "
         "gathered parameters; one pass without stages: the strategy's buckets or gathered units); the CUDA context and "
         "the allocator's fragmentation are extra\n";
}

Json csPlanJson(const ParallelPlan& p) {
  const RunConfig& c = p.config;
  Json j;
  j["model"] = c.model.preset.empty() ? "gpt" : c.model.preset;
  j["params"] = modelParams(c);
  j["ranks"] = c.ranks;
  j["tp"] = c.tp;
  j["pp"] = c.pp;
  j["dp"] = c.dataParallelSize();
  j["strategy"] = strategyName(c.strategy);
  j["microbatches"] = c.microbatchCount();
  j["micro_batch"] = c.microBatchSize();
  j["global_batch"] = c.batch;
  j["schedule"] = c.pp > 1 ? Json(pipelineScheduleName(c.pipelineSchedule())) : Json(nullptr);
  j["virtual_stages"] = c.virtualStages();
  j["sp"] = c.model.sequence_parallel && c.tp > 1;
  j["recompute"] = checkpointingName(c.model.checkpointing);
  j["capacity_gb"] = p.capacity_bytes / kBytesPerGb;
  j["bytes_per_gb"] = static_cast<int64_t>(kBytesPerGb);
  j["activation_bytes_per_layer"] = p.per_layer_bytes;
  j["embedding_activation_bytes"] = p.embedding_bytes;
  j["head_activation_bytes"] = p.head_bytes;
  j["recompute_bytes_per_layer"] = p.recompute_bytes;
  j["bubble_formula"] = p.bubble;
  Json& stages = j["stages"] = Json::array();
  for (const StagePlan& s : p.stages) {
    Json st;
    st["stage"] = s.stage;
    st["rank"] = s.rank;
    st["holds"] = s.holds;
    st["blocks"] = s.blocks;
    st["params"] = s.params;
    st["in_flight"] = s.in_flight;
    st["model_state_bytes"] = s.model_state_bytes;
    st["activation_bytes"] = s.activation_bytes;
    st["buffer_bytes"] = s.buffer_bytes;
    st["peak_bytes"] = s.peakBytes();
    st["fits"] = double(s.peakBytes()) <= p.capacity_bytes;
    stages.push_back(std::move(st));
  }
  j["most_loaded_stage"] = p.most_loaded;
  j["fits"] = p.fits();
  return j;
}

const char* const kCsTieRule = "the smallest T x S; among equal products the smaller T (a smaller TP group sends less per layer)";

void csPrintFit(const FitSearch& f, const RunConfig& base, const CsRequest& r, double capacity_bytes, std::ostream& out) {
  out << "smallest TP x PP that fits " << csGb(capacity_bytes) << " GB per GPU on " << base.ranks << " GPUs ("
      << strategyName(base.strategy) << ", micro-batch " << r.micro_batch << ", "
      << (r.microbatches_given ? std::to_string(base.microbatchCount()) + " microbatches" : std::string("M = S microbatches"))
      << ", " << pipelineScheduleName(base.pipelineSchedule()) << ", recompute " << checkpointingName(base.model.checkpointing)
      << ", sequence parallel " << (base.model.sequence_parallel ? "on" : "off") << "); order: " << kCsTieRule << "\n\n";
  out << std::right << std::setw(6) << "T x S" << std::setw(5) << "TP" << std::setw(5) << "PP" << std::setw(7) << "DP"
      << std::setw(6) << "M" << std::setw(13) << "most loaded" << std::setw(10) << "peak GB" << "  fits\n";
  for (size_t i = 0; i < f.tried.size(); ++i) {
    const FitCandidate& t = f.tried[i];
    out << std::setw(6) << t.tp * t.pp << std::setw(5) << t.tp << std::setw(5) << t.pp;
    if (!t.plan) {
      out << "  refused: " << t.refused << "\n";
      continue;
    }
    const ParallelPlan& p = *t.plan;
    out << std::setw(7) << p.config.dataParallelSize() << std::setw(6) << p.config.microbatchCount() << std::setw(13)
        << ("stage " + std::to_string(p.most_loaded)) << std::setw(10) << csGb(double(p.mostLoaded().peakBytes())) << "  "
        << (p.fits() ? "yes" : "no") << (int(i) == f.chosen ? "  <- chosen" : "") << "\n";
  }
  out << "\n";
  if (f.chosen < 0) {
    out << "no TP x PP up to TP 8 fits " << csGb(capacity_bytes)
        << " GB per GPU; more GPUs, full recompute, sequence parallelism or zero3/fsdp shrink the peak\n";
    return;
  }
  const FitCandidate& c = f.tried[static_cast<size_t>(f.chosen)];
  out << "answer: --tp " << c.tp << " --pp " << c.pp << " (T x S = " << c.tp * c.pp << ")\n\n";
}

void csPrintSchedules(const ScheduleComparison& s, std::ostream& out) {
  out << "\nschedules compared (meta backend, modeled clock, " << s.config.profileName() << ", one step each):\n";
  out << std::left << std::setw(16) << "schedule" << std::right << std::setw(11) << "step ms" << std::setw(12)
      << "bubble" << std::setw(12) << "formula" << std::setw(13) << "most loaded" << std::setw(12) << "peak GB" << "\n";
  for (const ScheduleRow& r : s.rows) {
    std::string name = pipelineScheduleName(r.schedule);
    if (r.schedule == PipelineSchedule::Interleaved) name += " V=" + std::to_string(r.virtual_stages);
    out << std::left << std::setw(16) << name << std::right;
    if (!r.refused.empty()) {
      out << "  refused: " << r.refused << "\n";
      continue;
    }
    std::ostringstream ms;
    ms << std::fixed << std::setprecision(1) << r.step_ms;
    out << std::setw(11) << ms.str() << std::setw(12) << csPercent(r.bubble_measured) << std::setw(12)
        << csPercent(r.bubble_formula) << std::setw(13) << ("stage " + std::to_string(r.most_loaded)) << std::setw(12)
        << csGb(double(r.stages.at(size_t(r.most_loaded)).peak_measured)) << "\n";
  }
  out << "\npeak memory per stage, GB (measured by the run's ledger / planned):\n" << std::left << std::setw(14) << "stage";
  for (const ScheduleRow& r : s.rows)
    if (r.refused.empty()) out << std::right << std::setw(24) << pipelineScheduleName(r.schedule);
  out << "\n";
  for (int st = 0; st < s.config.pp; ++st) {
    out << std::left << std::setw(14) << st << std::right;
    for (const ScheduleRow& r : s.rows) {
      if (!r.refused.empty()) continue;
      const ScheduleStageRow& x = r.stages.at(size_t(st));
      out << std::setw(24) << (csGb(double(x.peak_measured)) + " / " + csGb(double(x.peak_planned)));
    }
    out << "\n";
  }
}

Json csSchedulesJson(const ScheduleComparison& s) {
  Json rows = Json::array();
  for (const ScheduleRow& r : s.rows) {
    Json j;
    j["schedule"] = pipelineScheduleName(r.schedule);
    j["virtual_stages"] = r.virtual_stages;
    j["refused"] = r.refused.empty() ? Json(nullptr) : Json(r.refused);
    if (r.refused.empty()) {
      j["step_ms"] = r.step_ms;
      j["bubble_measured"] = r.bubble_measured;
      j["bubble_formula"] = r.bubble_formula;
      j["most_loaded_stage"] = r.most_loaded;
      Json& stages = j["stages"] = Json::array();
      for (const ScheduleStageRow& x : r.stages) {
        Json st;
        st["stage"] = x.stage;
        st["rank"] = x.rank;
        st["in_flight"] = x.in_flight;
        st["activation_planned_bytes"] = x.activation_planned;
        st["activation_measured_bytes"] = x.activation_measured;
        st["peak_planned_bytes"] = x.peak_planned;
        st["peak_measured_bytes"] = x.peak_measured;
        stages.push_back(std::move(st));
      }
    }
    rows.push_back(std::move(j));
  }
  return rows;
}

}  // namespace

bool calcWantsStagePlan(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (csContains(kCsStageOnly, args[i])) return true;
    if (args[i] == "--model" && i + 1 < args.size() && args[i + 1] == "gpt") return true;
  }
  return false;
}

CalcStagesAnswer answerCalcStages(const std::vector<std::string>& args) {
  const CsRequest r = csParse(args);
  std::vector<std::string> flags = r.run_flags;
  flags.insert(flags.end(), {"--backend", "meta", "--clock", "modeled", "--steps", "1"});
  const RunConfig base = parseRunArgs(flags);
  if (!hasTokenBlocks(base))
    throw ConfigError("a stage plan needs a transformer: --model PRESET or --model gpt with --layers/--hidden/--heads "
                      "(the residual MLP has no per-layer activation formula)");
  const double capacity = r.capacity_gb * kBytesPerGb;
  CalcStagesAnswer a;
  std::ostringstream text;
  Json j;
  if (r.fit) {
    a.fit = searchSmallestTpPp(base, capacity, r.micro_batch,
                               r.microbatches_given ? std::optional<int>(base.microbatchCount()) : std::nullopt);
    csPrintFit(*a.fit, base, r, capacity, text);
    Json tried = Json::array();
    for (const FitCandidate& t : a.fit->tried) {
      Json x;
      x["tp"] = t.tp;
      x["pp"] = t.pp;
      x["refused"] = t.refused.empty() ? Json(nullptr) : Json(t.refused);
      x["most_loaded_stage"] = t.plan ? Json(t.plan->most_loaded) : Json(nullptr);
      x["peak_bytes"] = t.plan ? Json(t.plan->mostLoaded().peakBytes()) : Json(nullptr);
      Json stage_peaks = Json::array();
      if (t.plan)
        for (const StagePlan& st : t.plan->stages) stage_peaks.push_back(st.peakBytes());
      x["stage_peak_bytes"] = std::move(stage_peaks);
      x["fits"] = t.fits();
      tried.push_back(std::move(x));
    }
    j["fit"]["tried"] = std::move(tried);
    j["fit"]["order"] = kCsTieRule;
    if (a.fit->chosen >= 0) {
      const FitCandidate& c = a.fit->tried[static_cast<size_t>(a.fit->chosen)];
      j["fit"]["chosen"] = Json{{"tp", c.tp}, {"pp", c.pp}};
      a.plan = c.plan;
    } else {
      j["fit"]["chosen"] = nullptr;
    }
  } else {
    a.plan = planParallelCapacity(parallelCandidate(base, base.tp, base.pp, base.microbatchCount(), r.micro_batch),
                                  capacity);
  }
  if (a.plan) {
    csPrintPlan(*a.plan, text);
    j["plan"] = csPlanJson(*a.plan);
  } else {
    j["plan"] = nullptr;
  }
  if (r.compare) {
    if (!a.plan) throw ConfigError("--compare-schedules needs a mesh that fits; --fit found none");
    a.schedules = compareSchedules(a.plan->config, capacity);
    csPrintSchedules(*a.schedules, text);
    j["schedules"] = csSchedulesJson(*a.schedules);
  }
  a.text = text.str();
  a.json = j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
  return a;
}

std::string calcStagesUsage() {
  return R"(
Stage plan: per pipeline stage, model states and the activations its
schedule keeps in flight, for a model's shape on W GPUs (TP x PP x DP).
usage: shardscope-cli calc --model PRESET --ranks W [mesh flags] [--fit]
                           [--compare-schedules] [--json]
  --model PRESET|gpt  a published shape, or gpt with --layers --hidden
                      --heads --seq --vocab
  --ranks W           every GPU of the job (W = T x S x D)
  --strategy NAME     the data-parallel axis: ddp, zero1, zero3, fsdp   [ddp]
  --tp T, --pp S      tensor- and pipeline-parallel sizes                 [1]
  --microbatches M    microbatches per step (--fit: M = S unless given)   [1]
  --micro-batch B     samples per microbatch; global batch B x D x M      [1]
  --pp-schedule NAME  gpipe, 1f1b, interleaved                         [1f1b]
  --virtual-stages V  interleaved: model chunks per stage                 [2]
  --sp on|off         sequence parallelism (norms, residual split over T)
  --activation-checkpointing none|selective|full                       [none]
  --attention KIND    flash, naive: what attention keeps for backward [flash]
  --capacity-gb C     memory per GPU in GB (1 GB = 1e9 bytes)            [80]
  --fit               the smallest T x S that fits: T in 1, 2, 4, 8, S
                      dividing W/T; among equal products the smaller T
  --compare-schedules run gpipe, 1f1b and interleaved on the meta backend:
                      step time, bubble, peak memory per stage vs the plan
)";
}

}  // namespace shardscope
