// A Run owns P ranks (each a host thread plus its stream threads), their
// communicators and event logs. start() returns at once; the ranks train in
// the background while a UI drains eventLog(r); wait() joins and returns the
// measured result or throws the run's one error (RunError).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "backend/device_runtime.h"
#include "comm/comm_mesh.h"
#include "comm/communicator.h"
#include "comm/process_group.h"
#include "common/run_clock.h"
#include "common/run_control.h"
#include "rank/cost_model.h"
#include "rank/rank_context.h"
#include "config/run_config.h"
#include "model/model_spec.h"
#include "parallel/bucket_plan.h"
#include "parallel/pipeline_timing.h"
#include "trace/run_trace.h"
#include "trace/step_metrics.h"

namespace shardscope {

// A copied rank's entry (RunResult::copies) holds its own rank and its
// source's fixed-size numbers; its lists (fire_order, unit_order,
// tp_forward_bytes, tp_backward_bytes) stay empty: read them from
// RunResult::listsOf(rank). A new list member joins that rule (Run's sharedEntry).
struct RankResult {
  int rank = 0;
  LedgerSnapshot ledger;        // measured by the allocator over the whole run
  CommBytes comm_bytes;         // bytes this rank sent in the last step, measured at the sends
  std::vector<int> fire_order;  // buckets in launch order, last step
  std::vector<std::pair<std::string, int>> unit_order;  // FSDP (op, unit) issue order, last step
  int64_t padding_state_bytes = 0;  // model-state bytes spent on shard padding
  // Tensor parallelism (--tp > 1): bytes this rank sent in its TP group in the
  // last step, and those of the activation all-reduces per model segment.
  CommBytes tp_comm_bytes;
  std::vector<int64_t> tp_forward_bytes, tp_backward_bytes;
  // gpt: the peak over blocks of the activation bytes a block's forward leaves
  // booked (measured on the ledger; 0 for the residual MLP).
  int64_t activation_bytes_per_layer = 0;
  // GPU runs: the device allocator's books (allocated = what the ledger booked,
  // reserved = what it holds from cudaMalloc) and cudaMemGetInfo's view.
  std::optional<RankDevice::MemoryReport> device_memory;
};

// A run stopped from outside (a signal) before its last step.
struct RunInterruption {
  std::string by;    // what stopped it: "SIGINT", "SIGTERM", "SIGHUP"; "error" for a failed run
  int at_step = 0;   // the step that was running (the steps before it completed)
  std::string error;  // a failed run's error (empty: stopped from outside)
};

struct RunResult {
  RunConfig config;
  int64_t params = 0;
  // Tensor parallelism: one TP rank's parameters (its slice and the whole
  // ones; = params without --tp) and those every TP rank holds whole.
  int64_t slice_params = 0;
  int64_t tp_whole_params = 0;
  std::vector<double> losses;   // per step: mean over ranks of the local mean loss
  std::vector<RankResult> ranks;
  std::vector<Bucket> buckets;  // DDP/ZeRO-1/2 bucket plan
  std::vector<UnitInfo> units;  // FSDP units (zero3, fsdp, hsdp)
  int64_t padding_elements = 0; // flat-parameter padding, whole model
  std::vector<float> final_master;  // fp32 master weights after the last step (N)
  double wall_seconds = 0;
  // Timing of the last step per rank, on the run's clock (measured or modeled).
  std::vector<StepMetrics> last_step;
  double flops_per_step_per_rank = 0;  // forward + backward (3x forward) of the local batch (/T under TP)
  // Hardware FLOPs: the model's plus what activation checkpointing recomputes
  // (MFU counts only the model's).
  double hardware_flops_per_step_per_rank = 0;
  double peak_flops = 0;               // the profile's bf16 peak (modeled clock), else 0
  std::string profile;                 // modeled clock's profile name, else ""
  int simulated_ranks = 0;             // ranks run; the others copied them (symmetric replication)
  RankCopies copies;                   // which ranks are copies of which (empty: none)
  // Rank r's entry for its lists (orders, TP bytes per block): its own, or its source's if a copy.
  const RankResult& listsOf(int rank) const { return ranks.at(static_cast<size_t>(copies.sourceOf(rank))); }
  std::string device;                  // GPU runs: what ran where ("cuda-emulated: 4 ranks on GPU 0 (…)")
  // Modeled clock: the share of rank 0's last-step data-parallel collective
  // time that is the links' per-message latency (engine/comm_latency.h).
  std::optional<double> latency_share;
  // Pipelined runs (pp > 1): the last step's schedule as its events show it, per stage.
  PipelineTiming pipeline;
  double mfu() const;                  // model FLOPs utilisation of the last step (modeled)
  double hfu() const;                  // the same with hardware FLOPs (recomputes included)
  std::optional<RunInterruption> interrupted;  // set by the front end that stopped it
};

// --launch processes, a worker's side: this Run hosts one rank of the run and
// meets the others (other processes, maybe other machines) through the store.
struct WorkerPlacement {
  MeshProcess mesh;                                  // mesh.store points into `store`
  std::shared_ptr<gloo::rendezvous::Store> store;
  std::optional<std::chrono::steady_clock::time_point> clock_origin;  // the launcher's (same host)
};

// Final master weights a worker did not write (another rank owns them): a
// quiet NaN whose payload arithmetic never makes.
inline constexpr uint32_t kUnwrittenMaster = 0x7fe5a5a5u;

class RemoteRankFeed;

// Run(config, kRanksElsewhere): a Run whose ranks run in other processes (a
// launcher's, an attached inspector's): no device is opened here.
struct RanksElsewhere {};
inline constexpr RanksElsewhere kRanksElsewhere{};

class Run {
 public:
  explicit Run(RunConfig config);  // validates; throws ConfigError
  Run(RunConfig config, RanksElsewhere);
  ~Run();
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  void start();
  // Before start(): run every engine thread at a lower scheduling priority
  // (nice +10), so an interactive front end stays responsive while the ranks
  // saturate the cores. All ranks are lowered alike; the measured timeline
  // only loses time to other programs, as it would anyway.
  void setBackground(bool background) { m_background = background; }
  // Meta runs of many ranks (kReplicateFrom or more) whose ranks are
  // symmetric — no injected branch, and every group of a kind on the same
  // link level — simulate rank 0 once and copy it to the others: same
  // events, ledger and traffic, at a fraction of the threads. Before start().
  static constexpr int kReplicateFrom = 64;
  void setReplication(bool allowed);
  // Before start(): host only placement.mesh.rank here (a worker process).
  void setWorker(WorkerPlacement placement);
  // Before start(), the launcher's side: the ranks run elsewhere; `host` runs
  // on the run's thread, feeds what they report into this Run and returns
  // when they are all gone. Every query (trace, losses, result) then answers
  // as if the ranks had run here. Failures go to feed.control().fail().
  void setRemoteRanks(std::function<void(RemoteRankFeed& feed)> host);
  RunClock& clock() { return m_clock; }
  bool replicated() const { return m_simulated < m_config.ranks; }
  RunResult wait();  // throws RunError if the run failed, RunAborted if cancelled
  // After a cancel: waits for the ranks, then what the completed steps
  // measured (losses, last completed step's timing, ledgers, traffic so far).
  RunResult resultSoFar();
  RunResult execute() {
    start();
    return wait();
  }
  void cancel() { m_control.cancel(); }
  // Lockstep stepping: call enable() before start() to make the ranks pass a
  // gate before every compute op (see rank/step_gate.h).
  StepGate& gate() { return m_gate; }
  // What a controller steps: the gate, or (an attached run) the remote run's.
  StepControl& stepControl() { return m_remoteStep ? *m_remoteStep : static_cast<StepControl&>(m_gate); }
  const StepControl& stepControl() const {
    return m_remoteStep ? *m_remoteStep : static_cast<const StepControl&>(m_gate);
  }
  void setStepControl(std::shared_ptr<StepControl> control) { m_remoteStep = std::move(control); }
  // A rank's current bytes by category (any thread; for views of a stopped
  // run). A rank of another process: as it last reported (at a gate point).
  LedgerSnapshot ledger(int rank) const;
  bool finished() const { return m_finished.load(); }

  const RunConfig& config() const { return m_config; }
  const ModelSpec& spec() const { return m_spec; }
  // One tensor-parallel rank's slice of the model (spec() itself when --tp is 1).
  const ModelSpec& sliceSpec() const { return m_sliceSpec; }
  const EventLog& eventLog(int rank) const { return m_contexts[rank]->log; }
  int stepsDone() const;
  std::vector<double> losses() const;  // completed steps so far
  // Every rank's loss of completed step `step` (a copied rank: its representative's).
  std::vector<double> rankLosses(int step) const;
  // The simulated rank whose events rank r's are (itself unless replicated).
  int representativeOf(int rank) const { return m_copies.sourceOf(rank); }
  // Events recorded so far plus the run's metadata (names, buckets).
  // Expanded: every rank's events in events[r], copies derived from their
  // source's. Shared: a copied rank's events[r] stays empty and trace.copies
  // says whose they are (no per-copy time or memory; writers stream them).
  enum class CopiedRanks { Expanded, Shared };
  RunTrace trace(CopiedRanks copied = CopiedRanks::Expanded) const;
  // Other nodes' clock alignment (multi-node measured runs; trace().node_clocks without the trace).
  std::vector<RunTrace::NodeClock> nodeClocks() const {
    std::lock_guard lock(m_mutex);
    return m_nodeClocks;
  }

 private:
  void launch();
  void rankMain(int rank);
  // Under m_mutex: rank's ledger, traffic and orders, copied to its replicas.
  void recordRankResult(int rank, const class ParallelStrategy& strategy, RankDevice* device,
                        const class TensorParallelGroup* tp_group);
  RunResult collectResult(int steps_done);
  void connectRanks();  // the mesh, then the rank threads this process hosts
  // Under m_mutex: rank's loss of step s (for itself and its copies).
  void reportLoss(int rank, int step, double loss);
  friend class RemoteRankFeed;

  RunConfig m_config;
  ModelSpec m_spec;
  ModelSpec m_sliceSpec;  // what each rank's strategy shards: a TP slice, or the model
  std::vector<Bucket> m_buckets;
  std::vector<UnitInfo> m_units;
  int64_t m_paddingElements = 0;
  RunClock m_clock;
  std::unique_ptr<CostModel> m_cost;  // modeled clock only
  RunControl m_control;
  RankStatusBoard m_board;
  StepGate m_gate;
  std::shared_ptr<StepControl> m_remoteStep;
  std::vector<std::unique_ptr<RankContext>> m_contexts;
  std::unique_ptr<CommMesh> m_mesh;
  std::unique_ptr<DeviceRuntime> m_runtime;  // GPU backends only
  std::vector<std::unique_ptr<class ParallelStrategy>> m_abandoned;  // of a stopped run, freed after m_mesh
  std::vector<std::unique_ptr<RankDevice>> m_abandonedDevices;  // their memory, freed after them

  mutable std::mutex m_mutex;
  std::vector<double> m_rankLosses;  // [step * ranks + rank]: one flat array, nothing allocated per step
  std::vector<int> m_lossReports;    // [step] ranks that reported
  std::vector<int> m_lossRanks;      // ranks whose losses this Run holds: all, or a worker's one
  std::optional<WorkerPlacement> m_worker;
  std::function<void(RemoteRankFeed&)> m_remoteHost;
  std::vector<RunTrace::NodeClock> m_nodeClocks;  // under m_mutex
  std::vector<LedgerSnapshot> m_remoteLedgers;    // under m_mutex: ranks elsewhere, as last reported
  int m_stepsDone = 0;               // leading steps every rank reported
  std::vector<RankResult> m_rankResults;
  std::vector<float> m_finalMaster;
  std::thread m_launcher;
  std::atomic<bool> m_finished{false};
  bool m_started = false;
  bool m_background = false;
  int m_simulated = 0;                // ranks that run
  RankCopies m_copies;  // which rank copies which (empty: every rank simulated), with each copy's group ids
  double m_wallSeconds = 0;
};

// What the launcher of a processes run hands its collector: each call files
// one thing a remote rank reported, as that rank's own thread would have
// (thread-safe; ranks are checked by the caller against config().ranks).
class RemoteRankFeed {
 public:
  explicit RemoteRankFeed(Run& run) : m_run(run) {}
  const RunConfig& config() const { return m_run.m_config; }
  RunControl& control() { return m_run.m_control; }
  const RunClock& clock() const { return m_run.m_clock; }
  void events(int rank, const Event* events, size_t count);
  void loss(int rank, int step, double loss);
  void rankResult(int rank, RankResult result, int64_t padding_elements);
  // Final master weights [offset, offset + count) (one rank's owned part).
  void master(int64_t offset, const float* values, size_t count);
  // Another node's clock alignment (multi-node measured runs), for the trace.
  void nodeClock(const RunTrace::NodeClock& clock);
  // The run's gate: the remote ranks pass it through the launcher (launch/gate_relay.h).
  StepGate& gate() { return m_run.m_gate; }
  // A remote rank's ledger now (reported at its gate points), for ledger().
  void ledger(int rank, const LedgerSnapshot& snapshot);

 private:
  Run& m_run;
};

}  // namespace shardscope
