#include "analysis/run_summary.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "analysis/formulas.h"
#include "parallel/pipeline_timing.h"
#include "common/errors.h"
#include "common/json_tree.h"
#include "common/output_file.h"
#include "common/units.h"
#include "config/config_json.h"

namespace shardscope {

namespace {

constexpr Category kReportedCategories[] = {
    Category::Param,    Category::Grad,     Category::Master, Category::AdamM,
    Category::AdamV,    Category::Gathered, Category::GradFull, Category::Bucket,
    Category::Activation, Category::Workspace};

Json commBytesJson(const CommBytes& b) {
  Json j;
  j["all_reduce"] = b.all_reduce;
  j["reduce_scatter"] = b.reduce_scatter;
  j["all_gather"] = b.all_gather;
  if (b.send > 0) j["send"] = b.send;  // pipeline stages only: the key is absent elsewhere
  return j;
}


std::string dumpJson(const Json& j, int indent) { return j.dump(indent, ' ', false, Json::error_handler_t::replace); }

// A MiB table cell: the number alone (the column's heading names the unit).
std::string mib(int64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(2) << toMiB(bytes);
  return os.str();
}

int64_t total(const CommBytes& b) { return b.all_reduce + b.reduce_scatter + b.all_gather; }

// A per-rank table's rows for copied ranks (symmetric replication): one line
// per source, "ranks 1–511: same as rank 0", instead of a row each.
class CopiedRows {
 public:
  explicit CopiedRows(const RankCopies& copies) : m_copies(copies) {}
  bool skip(int rank) const { return m_copies.isCopy(rank); }
  // After the rows: the copies of each source that has any.
  void print(std::ostream& out, int ranks) const {
    if (m_copies.empty()) return;
    std::vector<std::vector<int>> of(static_cast<size_t>(ranks));
    for (int r = 0; r < ranks; ++r)
      if (m_copies.isCopy(r)) {
        const int source = m_copies.sourceOf(r);
        if (source >= 0 && source < ranks) of[static_cast<size_t>(source)].push_back(r);
      }
    for (int s = 0; s < ranks; ++s)
      if (!of[static_cast<size_t>(s)].empty())
        out << "  ranks " << rankRangesText(of[static_cast<size_t>(s)]) << ": same as rank " << s << "\n";
  }

 private:
  const RankCopies& m_copies;
};

}  // namespace

double modelStateBytesPerParam(const RankResult& rank, int64_t params) {
  return params > 0 ? static_cast<double>(rank.ledger.model_state_peak) / static_cast<double>(params)
                    : 0.0;
}

int64_t largestTotalPeak(const RunResult& r) {
  int64_t peak = 0;
  for (const RankResult& rank : r.ranks) peak = std::max(peak, rank.ledger.total_peak);
  return peak;
}

std::optional<ActivationFigures> activationFigures(const RunResult& r) {
  const RunConfig& c = r.config;
  if (!hasTokenBlocks(c) || r.ranks.empty()) return std::nullopt;
  ActivationFigures a;
  a.booked_per_layer = r.ranks.front().activation_bytes_per_layer;
  a.formula_per_layer = expectedActivationBytesPerLayer(c);
  a.layers = c.model.layers;
  a.attention = attentionName(c.model.attention);
  a.checkpointing = checkpointingName(c.model.checkpointing);
  if (r.peak_flops > 0 && !r.last_step.empty()) {
    a.mfu = r.mfu();
    a.hfu = r.hardware_flops_per_step_per_rank > r.flops_per_step_per_rank ? r.hfu() : a.mfu;
  }
  return a;
}

std::string activationFiguresText(const ActivationFigures& a) {
  return "activations per layer (rank 0, " + a.attention + " attention, checkpointing " + a.checkpointing +
         "): " + bytesText(double(a.booked_per_layer), 2, ByteUnit::MiB) + " booked, Korthikanti et al. " +
         bytesText(double(static_cast<int64_t>(a.formula_per_layer)), 2, ByteUnit::MiB);
}

std::string configJson(const RunConfig& config) { return dumpJson(configToJson(config), -1); }

void writeSummaryJson(const RunResult& r, std::ostream& out) {
  const RunConfig& c = r.config;
  Json w;
  w["strategy"] = strategyName(c.strategy);
  w["ranks"] = c.ranks;
  w["params"] = r.params;
  if (!r.device.empty()) w["device"] = r.device;
  w["config"] = configToJson(c);
  w["wall_seconds"] = r.wall_seconds;
  w["clock"] = clockName(c.clock);
  if (!r.profile.empty()) w["profile"] = r.profile;
  {
    Json& last = w["last_step"] = Json::object();
    int64_t step = 0, exposed = 0, comm = 0;
    for (const StepMetrics& m : r.last_step) {
      step = std::max(step, m.wall_ns);
      exposed += m.exposed_comm_ns;
      comm += m.comm_ns;
    }
    const double n = r.last_step.empty() ? 1.0 : double(r.last_step.size());
    last["step_ns"] = step;
    last["exposed_comm_ns"] = static_cast<int64_t>(exposed / n);
    last["comm_ns"] = static_cast<int64_t>(comm / n);
    last["overlap_percent"] = hiddenSharePercent(r.last_step);
    last["flops_per_rank"] = r.flops_per_step_per_rank;
    if (r.peak_flops > 0) last["mfu"] = r.mfu();
    if (r.latency_share) last["latency_share"] = *r.latency_share;
    if (r.hardware_flops_per_step_per_rank > r.flops_per_step_per_rank) {
      // Activation checkpointing's recompute: hardware FLOPs, not model FLOPs.
      last["hardware_flops_per_rank"] = r.hardware_flops_per_step_per_rank;
      if (r.peak_flops > 0) last["hfu"] = r.hfu();
    }
  }
  Json& steps = w["steps"] = Json::array();
  for (size_t s = 0; s < r.losses.size(); ++s) {
    Json step;
    step["step"] = static_cast<int64_t>(s);
    // Shapes only: the meta backend computes no loss, so none is reported.
    step["loss"] = c.backend == Backend::Meta ? Json(nullptr) : Json(r.losses[s]);
    steps.push_back(std::move(step));
  }
  const double expected_bpp = expectedBytesPerParam(c);
  const double expected_activation = hasTokenBlocks(c) ? expectedActivationBytesPerLayer(c) : 0.0;
  const bool tp = c.tp > 1;
  const ExpectedTraffic traffic = expectedTraffic(c);
  const CommBytes& expected_comm = traffic.data_parallel;
  const GatheredPeak gathered = expectedGatheredPeak(c);
  if (tp) {
    // Megatron-LM's split: what each TP rank holds, and the formulas' inputs.
    Json& t = w["tensor_parallel"];
    t["tp"] = c.tp;
    t["data_parallel_ranks"] = c.dataParallelSize();
    t["slice_params"] = r.slice_params;
    t["whole_params"] = r.tp_whole_params;
    const bool sequence = hasTokenBlocks(c);
    t["embedding_and_head"] = sequence ? "vocab-parallel" : "replicated";
    t["all_reduces_per_layer"] = sequence ? 2 : 1;
  }
  if (!r.pipeline.stages.empty()) {
    // Pipeline parallelism: the schedule and what its events measured per stage.
    Json& p = w["pipeline"];
    p["stages"] = c.pp;
    p["schedule"] = pipelineScheduleName(c.pipelineSchedule());
    p["microbatches"] = c.microbatchCount();
    p["microbatch_samples"] = c.microBatchSize();
    p["virtual_stages"] = c.virtualStages();
    p["rank_order"] = "r = t + T*(d + D*s)";
    p["bubble_measured"] = r.pipeline.bubble;
    p["bubble_formula"] = r.pipeline.formula_bubble;
    Json& stages = p["per_stage"] = Json::array();
    for (const StageTiming& st : r.pipeline.stages) {
      Json j;
      j["stage"] = st.stage;
      j["rank"] = st.rank;
      j["holds"] = st.chunks;
      j["busy_ns"] = st.busy_ns;
      j["window_ns"] = st.window_ns;
      j["bubble"] = st.bubble;
      j["recv_wait_ns"] = st.wait_ns;
      j["microbatches_in_flight_formula"] = expectedMicrobatchesInFlight(c, st.stage);
      j["activation_peak_bytes"] = r.ranks[static_cast<size_t>(st.rank)].ledger.peak[static_cast<size_t>(Category::Activation)];
      stages.push_back(j);
    }
  }
  w["padding_elements"] = r.padding_elements;
  w["padding_bytes"] = r.padding_elements * static_cast<int64_t>(sizeof(uint16_t));
  Json& per_rank = w["per_rank"] = Json::array();
  for (const RankResult& rank : r.ranks) {
    Json j;
    j["rank"] = rank.rank;
    Json& peak = j["peak_bytes"] = Json::object();
    for (Category cat : kReportedCategories) peak[std::string(categoryName(cat))] = rank.ledger.peak[static_cast<size_t>(cat)];
    j["model_state_peak_bytes"] = rank.ledger.model_state_peak;
    j["total_peak_bytes"] = rank.ledger.total_peak;
    j["model_state_bytes_per_param"] = modelStateBytesPerParam(rank, r.params);
    j["expected_model_state_bytes_per_param"] =
        c.pp > 1 ? strategyBytesPerParam(c) * double(stageParams(c, c.stageOf(rank.rank))) / double(r.params)
                 : expected_bpp;
    j["padding_bytes"] = rank.padding_state_bytes;
    if (gathered.bytes > 0) j["expected_gathered_peak_bytes"] = gathered.bytes;
    if (hasTokenBlocks(c)) {
      j["activation_bytes_per_layer"] = rank.activation_bytes_per_layer;
      j["expected_activation_bytes_per_layer"] = static_cast<int64_t>(expected_activation);
    }
    if (rank.device_memory) {
      // The ledger books what was asked (allocated); the caching allocator
      // holds more from cudaMalloc (reserved), and the device shows more still.
      const RankDevice::MemoryReport& d = *rank.device_memory;
      Json& dm = j["device_memory"];
      dm["allocated_peak_bytes"] = d.allocated_peak;
      dm["reserved_peak_bytes"] = d.reserved_peak;
      dm["reserved_bytes_at_end"] = d.reserved_bytes;
      dm["device_used_bytes"] = d.device_used_bytes;
      dm["device_total_bytes"] = d.device_total_bytes;
    }
    for (const StepMetrics& m : r.last_step) {
      if (m.rank != rank.rank) continue;
      j["step_ns"] = m.wall_ns;
      j["exposed_comm_ns"] = m.exposed_comm_ns;
      j["overlap_percent"] = m.overlapPercent();
    }
    j["comm_bytes"] = commBytesJson(rank.comm_bytes);
    j["expected_comm_bytes"] = commBytesJson(expected_comm);
    if (tp) {
      // The slice's exact share: the strategy's bytes/param on its P/T ranks
      // over the parameters a TP rank holds (the whole ones included).
      j["expected_model_state_bytes_per_param_slice"] = expectedModelStateBytes(c) / double(r.params);
      j["tp_comm_bytes"] = commBytesJson(rank.tp_comm_bytes);
      // The peak over blocks (every block sends the same).
      int64_t fwd = 0, bwd = 0;
      const RankResult& lists = r.listsOf(rank.rank);
      for (int b = 1; b <= c.model.layers && b < int(lists.tp_forward_bytes.size()); ++b) {
        fwd = std::max(fwd, lists.tp_forward_bytes[size_t(b)]);
        bwd = std::max(bwd, lists.tp_backward_bytes[size_t(b)]);
      }
      j["tp_activation_all_reduce_bytes_per_layer"] = {{"forward", fwd}, {"backward", bwd}};
      j["expected_tp_activation_all_reduce_bytes_per_layer"] = {{"forward", traffic.tp_forward_per_layer},
                                                                {"backward", traffic.tp_backward_per_layer}};
    }
    per_rank.push_back(std::move(j));
  }
  const ModelSpec spec(c.model);
  Json& buckets = w["buckets"] = Json::array();
  for (const Bucket& b : r.buckets) {
    Json j;
    j["index"] = b.index;
    j["bytes"] = b.elements * static_cast<int64_t>(sizeof(uint16_t));
    Json& params = j["params"] = Json::array();
    for (const BucketPlanEntry& e : b.entries) params.push_back(spec.params()[e.param].name);
    buckets.push_back(std::move(j));
  }
  Json& units = w["units"] = Json::array();
  for (const UnitInfo& u : r.units) {
    Json j;
    j["index"] = u.index;
    j["blocks"] = u.blocks;
    j["params"] = u.params;
    units.push_back(std::move(j));
  }
  Json& unit_order = w["unit_order"] = Json::array();
  for (const RankResult& rank : r.ranks) {
    Json order = Json::array();
    for (const auto& [op, unit] : r.listsOf(rank.rank).unit_order) order.push_back(Json::array({op, unit}));
    unit_order.push_back(std::move(order));
  }
  Json& fire_order = w["bucket_fire_order"] = Json::array();
  for (const RankResult& rank : r.ranks) fire_order.push_back(r.listsOf(rank.rank).fire_order);
  if (r.interrupted) {
    // Only a run stopped from outside has it: what stopped it, and where.
    Json& stop = w["interrupted"] = Json::object();
    stop["by"] = r.interrupted->by;
    stop["at_step"] = r.interrupted->at_step;
    stop["steps_done"] = static_cast<int64_t>(r.losses.size());
    stop["steps_asked"] = c.steps;
    if (!r.interrupted->error.empty()) {  // a failed run: what completed, and why it stopped
      stop["error"] = r.interrupted->error;
      w["failed"] = true;
    }
  }
  out << dumpJson(w, 2) << '\n';
}

void writeSummaryFile(const RunResult& result, const std::string& path) {
  writeOutputFile(path, [&](std::ostream& out) { writeSummaryJson(result, out); });  // whole or not at all
}

void printSummaryText(const RunResult& r, std::ostream& out) {
  const RunConfig& c = r.config;
  char line[256];
  if (r.interrupted)
    out << "interrupted by " << r.interrupted->by << " during step " << r.interrupted->at_step << ": "
        << r.losses.size() << " of " << c.steps << " steps ran; what follows is what they measured\n";
  out << "strategy " << strategyName(c.strategy) << ", " << c.ranks << " ranks, " << r.params << " params ("
      << c.model.layers << " blocks, hidden " << c.model.hidden << "), global batch " << c.batch
      << "\n";
  if (!r.device.empty()) out << r.device << "\n";
  if (r.simulated_ranks > 1 && r.simulated_ranks < c.ranks)
    out << "symmetric ranks: " << r.simulated_ranks << " ranks simulated, one per pipeline stage (ranks 0, "
        << c.ranks / c.pp << ", .., " << c.ranks / c.pp * (c.pp - 1) << "); the other " << c.ranks - r.simulated_ranks
        << " are copies of their stage's (same events, ledger and traffic)\n";
  else if (r.simulated_ranks > 0 && r.simulated_ranks < c.ranks)
    out << "symmetric ranks: rank 0 simulated once, ranks 1.." << c.ranks - 1
        << " are its copies (same events, ledger and traffic)\n";
  out << "\n";
  if (c.backend == Backend::Meta)
    out << "loss per step: none (the meta backend runs shapes only, no math; " << r.losses.size() << " steps ran)\n";
  else
    out << "loss per step\n";
  for (size_t s = 0; s < r.losses.size() && c.backend != Backend::Meta; ++s) {
    std::snprintf(line, sizeof line, "  step %3zu  loss %.6f\n", s, r.losses[s]);
    out << line;
  }
  out << "\npeak memory per rank by category (MiB), measured by the allocator\n";
  out << "  rank";
  for (Category cat : kReportedCategories) {
    std::snprintf(line, sizeof line, " %10s", std::string(categoryName(cat)).c_str());
    out << line;
  }
  out << "        all\n";
  const CopiedRows copied(r.copies);
  for (const RankResult& rank : r.ranks) {
    if (copied.skip(rank.rank)) continue;
    std::snprintf(line, sizeof line, "  %4d", rank.rank);
    out << line;
    for (Category cat : kReportedCategories) {
      std::snprintf(line, sizeof line, " %10s", mib(rank.ledger.peak[static_cast<size_t>(cat)]).c_str());
      out << line;
    }
    std::snprintf(line, sizeof line, " %10s", mib(rank.ledger.total_peak).c_str());
    out << line << "\n";
  }
  copied.print(out, c.ranks);
  out << "  all = the peak of every category summed (the summary's total_peak_bytes; the largest over ranks is\n"
         "  the window's \"" << kTotalPeakName << "\"), not the sum of the categories' peaks\n";
  if (!r.ranks.empty() && r.ranks.front().device_memory) {
    out << "\nGPU memory per rank (MiB): allocated = what the ledger books, reserved = what the caching\n"
           "allocator holds from cudaMalloc (rounding + cache), device used = cudaMemGetInfo (all ranks on\n"
           "the GPU, the CUDA context, cuBLAS workspaces)\n";
    out << "  rank  allocated peak  reserved peak  device used / total\n";
    for (const RankResult& rank : r.ranks) {
      if (!rank.device_memory) continue;
      const RankDevice::MemoryReport& d = *rank.device_memory;
      std::snprintf(line, sizeof line, "  %4d  %14s  %13s  %11s / %s\n", rank.rank, mib(d.allocated_peak).c_str(),
                    mib(d.reserved_peak).c_str(), mib(d.device_used_bytes).c_str(), mib(d.device_total_bytes).c_str());
      out << line;
    }
  }
  const double expected_bpp_all = expectedBytesPerParam(c);
  const ExpectedTraffic traffic = expectedTraffic(c);
  const int64_t expected_total_all = traffic.dataParallelTotal();
  out << "\nmodel state (param+grad+master+adam_m+adam_v) and bytes sent per rank per step, measured vs the formula\n";
  out << "  model state: " << modelStateFormulaText(c) << " bytes/param (" << formulaSource(c) << "); traffic: "
      << traffic.valueText() << "\n";
  out << "  rank  strategy  bytes/param  expected  padding(B)   bytes sent/step    expected  in N(P-1)/P\n";
  for (const RankResult& rank : r.ranks) {
    if (copied.skip(rank.rank)) continue;
    // Pipeline stages: each rank's formulas over its stage's parameters.
    double expected_bpp = expected_bpp_all;
    int64_t expected_total = expected_total_all;
    if (c.pp > 1) {
      const int64_t held = stageParams(c, c.stageOf(rank.rank));
      expected_bpp = strategyBytesPerParam(c) * double(held) / double(r.params);
      expected_total = expectedTraffic(c, held).dataParallelTotal();
    }
    const int64_t sent = total(rank.comm_bytes);
    char ratio[32] = "-";
    const ExpectedTraffic held_traffic = c.pp > 1 ? expectedTraffic(c, stageParams(c, c.stageOf(rank.rank))) : traffic;
    if (held_traffic.n_bytes > 0 && held_traffic.ring_ranks > 1)  // N: what this rank's stage holds
      std::snprintf(ratio, sizeof ratio, "%.3fN", held_traffic.inUnitsOfN(static_cast<double>(sent)));
    std::snprintf(line, sizeof line, "  %4d  %8s  %11.3f  %8.3f  %10lld   %15lld  %10lld  %9s\n", rank.rank,
                  strategyName(c.strategy).c_str(), modelStateBytesPerParam(rank, r.params), expected_bpp,
                  static_cast<long long>(rank.padding_state_bytes), static_cast<long long>(sent),
                  static_cast<long long>(expected_total), ratio);
    out << line;
  }
  copied.print(out, c.ranks);
  if (const std::optional<ActivationFigures> a = activationFigures(r)) out << "\n" << activationFiguresText(*a) << "\n";
  if (c.tp > 1 && !r.ranks.empty()) {
    const RankResult& r0 = r.ranks.front();
    int64_t fwd = 0, bwd = 0;
    for (int b = 1; b <= c.model.layers && b < int(r0.tp_forward_bytes.size()); ++b) {
      fwd = std::max(fwd, r0.tp_forward_bytes[size_t(b)]);
      bwd = std::max(bwd, r0.tp_backward_bytes[size_t(b)]);
    }
    const bool sequence = hasTokenBlocks(c);
    out << "\ntensor parallel: " << c.tp << " ranks per TP group (consecutive ranks) x " << c.dataParallelSize()
        << " data-parallel ranks; each TP rank holds " << r.slice_params << " params ("
        << r.tp_whole_params << " whole: norms, row-parallel biases"
        << (sequence ? ", position embeddings if any" : ", input and head projections")
        << "; embedding and head " << (sequence ? "vocab-parallel" : "replicated") << ")\n";
    std::snprintf(line, sizeof line,
                  "  activation collective bytes per layer (rank 0): forward %lld, backward %lld; formula "
                  "(Megatron-LM) %s = %lld forward, %lld backward\n",
                  static_cast<long long>(fwd), static_cast<long long>(bwd), traffic.tp_notation.c_str(),
                  static_cast<long long>(traffic.tp_per_layer), static_cast<long long>(traffic.tp_backward_per_layer));
    out << line;
    if (traffic.tp_forward_per_layer != traffic.tp_per_layer) {
      std::snprintf(line, sizeof line,
                    "  full activation checkpointing: backward's recompute repeats the forward all-reduces, so "
                    "forward ops send %lld per layer\n",
                    static_cast<long long>(traffic.tp_forward_per_layer));
      out << line;
    }
    std::snprintf(line, sizeof line,
                  "  TP group bytes sent per step (rank 0): all-reduce %lld, reduce-scatter %lld, all-gather %lld\n",
                  static_cast<long long>(r0.tp_comm_bytes.all_reduce),
                  static_cast<long long>(r0.tp_comm_bytes.reduce_scatter),
                  static_cast<long long>(r0.tp_comm_bytes.all_gather));
    out << line;
    if (traffic.tensorParallelTotal() > 0) {
      std::snprintf(line, sizeof line, "  formula (Megatron-LM) per step: %s = %lld (all-reduce %lld, reduce-scatter %lld, all-gather %lld)\n",
                    traffic.tp_step_notation.c_str(), static_cast<long long>(traffic.tensorParallelTotal()),
                    static_cast<long long>(traffic.tensor_parallel.all_reduce),
                    static_cast<long long>(traffic.tensor_parallel.reduce_scatter),
                    static_cast<long long>(traffic.tensor_parallel.all_gather));
      out << line;
    }
  }
  if (!r.pipeline.stages.empty()) {
    out << "\npipeline: " << c.pp << " stages x " << c.dataParallelSize() << " data-parallel x " << c.tp
        << " tensor-parallel ranks (rank r = t + T*(d + D*s)), schedule " << pipelineScheduleName(c.pipelineSchedule())
        << (c.virtualStages() > 1 ? " with " + std::to_string(c.virtualStages()) + " chunks per stage" : std::string())
        << ", " << c.microbatchCount() << " microbatches of " << c.microBatchSize()
        << (c.microBatchSize() == 1 ? " sample" : " samples") << "\n";
    out << "  stage  rank  busy(ms)  bubble  in flight  activations peak(MiB)  holds\n";
    for (const StageTiming& st : r.pipeline.stages) {
      std::snprintf(line, sizeof line, "  %5d  %4d  %8.3f  %5.1f%%  %9d  %21.2f  %s\n", st.stage, st.rank,
                    double(st.busy_ns) * 1e-6, 100.0 * st.bubble, expectedMicrobatchesInFlight(c, st.stage),
                    toMiB(r.ranks[static_cast<size_t>(st.rank)].ledger.peak[static_cast<size_t>(Category::Activation)]),
                    st.chunks.c_str());
      out << line;
    }
    // The most loaded stage: the one whose memory peaks highest (1F1B's first stage holds the most microbatches).
    const StageTiming* loaded = &r.pipeline.stages.front();
    for (const StageTiming& st : r.pipeline.stages)
      if (r.ranks[size_t(st.rank)].ledger.total_peak > r.ranks[size_t(loaded->rank)].ledger.total_peak) loaded = &st;
    std::snprintf(line, sizeof line, "  most loaded: stage %d (rank %d), %s at its peak, %d microbatches in flight\n",
                  loaded->stage, loaded->rank,
                  bytesText(double(r.ranks[size_t(loaded->rank)].ledger.total_peak), 2, ByteUnit::GiB).c_str(),
                  expectedMicrobatchesInFlight(c, loaded->stage));
    out << line;
    std::snprintf(line, sizeof line,
                  "  bubble (last step, %s clock): measured %.1f%% of the pipeline window, mean over stages; formula "
                  "(S-1)/(V*M+S-1) = %.1f%%\n",
                  !r.profile.empty() ? "modeled" : "measured", 100.0 * r.pipeline.bubble, 100.0 * r.pipeline.formula_bubble);
    out << line;
  }
  if (!r.units.empty()) {
    out << "\nFSDP units (unit-blocks " << c.unitBlocks() << ", prefetch " << prefetchName(c.prefetchMode())
        << ", reshard after forward " << (c.reshardAfterForward() ? "on" : "off") << ", shard group "
        << c.shardGroupSize() << ")\n";
    const ModelSpec spec(c.model);
    const std::string root = " (root: " + spec.segmentName(0) + ", " + spec.segmentName(c.model.layers + 1) + ")";
    for (const UnitInfo& u : r.units) {
      out << "  unit " << u.index << (u.index == 0 ? root : "") << "  " << u.params
          << " params";
      if (!u.blocks.empty()) {
        out << "  blocks";
        for (int b : u.blocks) out << ' ' << b;
      }
      out << "\n";
    }
    const GatheredPeak gathered = expectedGatheredPeak(c);
    if (!r.ranks.empty() && gathered.bytes > 0)
      out << "gathered parameters at their peak (rank 0): "
          << bytesText(double(r.ranks[0].ledger.peak[static_cast<size_t>(Category::Gathered)]), 2, ByteUnit::MiB)
          << " measured; formula: " << gathered.text << "\n";
    if (!r.ranks.empty()) {
      out << "issue order on rank 0 (last step):";
      for (const auto& [op, unit] : r.ranks[0].unit_order) out << ' ' << op << '(' << unit << ')';
      out << "\n";
    }
  }
  if (!r.buckets.empty()) {
    out << "\nbuckets (reverse parameter order; cap " << c.bucket_mb << " MiB, first " << c.first_bucket_mb
        << " MiB)\n";
    const ModelSpec spec(c.model);
    for (const Bucket& b : r.buckets) {
      const auto& first = spec.params()[b.entries.front().param].name;
      const auto& last = spec.params()[b.entries.back().param].name;
      std::snprintf(line, sizeof line, "  bucket %2d  %8s MiB  %3zu params  %s .. %s\n", b.index,
                    mib(b.elements * 2).c_str(), b.entries.size(), first.c_str(), last.c_str());
      out << line;
    }
    out << "firing order (last step):\n";
    for (const RankResult& rank : r.ranks) {
      if (copied.skip(rank.rank)) continue;
      out << "  rank " << rank.rank << ":";
      for (int b : rank.fire_order) out << ' ' << b;
      out << "\n";
    }
    copied.print(out, c.ranks);
  }
  if (!r.last_step.empty()) {
    const bool modeled = c.clock == ClockKind::Modeled;
    out << "\nlast step on the " << (modeled ? "modeled clock (" + r.profile + ")" : std::string("measured clock (this machine)"))
        << "\n  rank   step(ms)  compute(ms)  comm(ms)  exposed comm(ms)  overlap\n";
    for (const StepMetrics& m : r.last_step) {
      if (copied.skip(m.rank)) continue;
      std::snprintf(line, sizeof line, "  %4d %10.3f %12.3f %9.3f %17.3f  %6.1f%%\n", m.rank, m.wall_ns / 1e6,
                    m.compute_ns / 1e6, m.comm_ns / 1e6, m.exposed_comm_ns / 1e6, m.overlapPercent());
      out << line;
    }
    copied.print(out, c.ranks);
    if (r.peak_flops > 0) {
      std::snprintf(line, sizeof line, "  MFU %.1f%% of %s's bf16 peak\n", 100.0 * r.mfu(), r.profile.c_str());
      out << line;
      if (r.hardware_flops_per_step_per_rank > r.flops_per_step_per_rank) {
        std::snprintf(line, sizeof line, "  HFU %.1f%%: the same with the recomputed FLOPs counted\n", 100.0 * r.hfu());
        out << line;
      }
    }
    if (r.latency_share) {
      std::snprintf(line, sizeof line,
                    "  latency share %.1f%%: of rank 0's data-parallel collective time, the links' per-message latency\n",
                    100.0 * *r.latency_share);
      out << line;
    }
  }
  std::snprintf(line, sizeof line, "\nwall time %.2f s\n", r.wall_seconds);
  out << line;
}

}  // namespace shardscope
