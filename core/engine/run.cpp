#include "engine/run.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <limits>
#include <map>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "common/errors.h"
#include "common/log.h"
#include "common/thread_start.h"
#include "config/settings.h"
#include "engine/comm_latency.h"
#include "memory/ledger_replay.h"
#include "comm/link_arbiter.h"
#include "kernels/cpu_kernels.h"
#include "model/block_work.h"
#include "model/hardware_profile.h"
#include "model/layer_fit.h"
#include "model/model.h"
#include "parallel/fsdp_units.h"
#include "parallel/pipeline_schedule.h"
#include "parallel/pipeline_stages.h"
#include "parallel/strategy.h"
#include "parallel/tensor_parallel.h"

namespace shardscope {

namespace {

// A copied rank's result entry: its source's fixed-size numbers as its own;
// the lists stay with the source (RunResult::listsOf), so a copy costs no
// per-rank memory beyond this entry.
RankResult sharedEntry(const RankResult& source, int rank) {
  RankResult out;
  out.rank = rank;
  out.ledger = source.ledger;
  out.comm_bytes = source.comm_bytes;
  out.padding_state_bytes = source.padding_state_bytes;
  out.tp_comm_bytes = source.tp_comm_bytes;
  out.activation_bytes_per_layer = source.activation_bytes_per_layer;
  out.device_memory = source.device_memory;
  return out;
}

void logSetup(const RunConfig& c, int64_t params, int simulated) {
  spdlog::logger& log = logger(LogComponent::Engine);
  if (!log.should_log(spdlog::level::info)) return;
  const std::string clock = c.clock == ClockKind::Modeled ? "modeled (" + c.profileName() + ")" : "measured";
  SPDLOG_LOGGER_INFO(&log, "run setup: strategy {}, {} ranks ({} simulated), backend {}, clock {}, {} steps, batch {}, {} params",
                     strategyName(c.strategy), c.ranks, simulated, backendName(c.backend), clock, c.steps, c.batch, params);
  SPDLOG_LOGGER_DEBUG(&log, "run flags: {}", runCommandLine(c));
}
}  // namespace

Run::Run(RunConfig config) : Run(std::move(config), kRanksElsewhere) {
  // Fails here, with the flag named, when this build or machine cannot run it.
  if (isGpuBackend(m_config.backend)) m_runtime = makeDeviceRuntime(m_config);
}

Run::Run(RunConfig config, RanksElsewhere)
    : m_config((validate(config), std::move(config))),
      m_spec(m_config.model),
      m_sliceSpec(m_config.model, m_config.tp),
      m_clock(m_config.clock == ClockKind::Modeled),
      m_board(m_config.ranks),
      m_gate(m_config.ranks, m_control) {
  if (m_clock.modeled()) {
    m_cost = std::make_unique<CostModel>(loadProfile(m_config.profileName()));
    requireLayerFitsDevice(m_config, m_cost->profile());  // no P shards one layer
    // A calibrated profile prices compute at the rate this run's blocks reach.
    m_cost->priceComputeBy(blockWork(m_sliceSpec, m_config.batch / m_config.dataParallelSize()));
  }
  if (m_config.isSharded() && !m_config.pipelined()) {  // a pipeline's stages shard each block (stage_state.h)
    const FsdpUnits units(m_sliceSpec, m_config.unitBlocks(), m_config.shardGroupSize());
    for (const FsdpUnit& u : units.units()) m_units.push_back({u.index, u.blocks, u.elements});
  } else if (!m_config.pipelined()) {  // a pipeline reduces each stage's gradients whole, after its flush
    m_buckets = planBuckets(m_config, m_sliceSpec);
  }
  for (int r = 0; r < m_config.ranks; ++r)
    m_contexts.push_back(std::make_unique<RankContext>(r, m_config.ranks, m_clock, m_control, m_board,
                                                       m_config.backend == Backend::Meta));
  for (auto& ctx : m_contexts) {
    ctx->cost = m_cost.get();
    ctx->gate = &m_gate;
  }
  // A pipeline's stages stop at slots of its schedule (step_gate.h).
  if (m_config.pp > 1)
    m_gate.setSlotsPerStep(PipelineScheduleOrder(m_config.pipelineSchedule(), m_config.pp, m_config.microbatchCount(),
                                                 m_config.virtualStages())
                               .slotsPerStep());
  m_rankResults.resize(m_config.ranks);
  for (int r = 0; r < m_config.ranks; ++r) m_lossRanks.push_back(r);
  setReplication(m_config.replicate);
  if (m_config.backend == Backend::Meta && m_simulated > kMetaRanksSimulatedEach)
    throw ConfigError("--ranks " + std::to_string(m_config.ranks) + " on the meta backend must be symmetric to run (each " +
                      (m_config.pp > 1 ? "stage's" : std::string("of the")) +
                      " ranks alike: no --inject-branch, every group of a kind on one link level), or at most " +
                      std::to_string(kMetaRanksSimulatedEach) + " ranks simulated each");
  // A meta run has no weights (and may describe more than fits in memory).
  if (m_config.backend != Backend::Meta) m_finalMaster.assign(static_cast<size_t>(m_spec.numParams()), 0.0f);
}

Run::~Run() {
  if (m_launcher.joinable()) {
    m_control.cancel();
    m_launcher.join();
  }
}

void Run::setReplication(bool allowed) {
  if (m_started) throw RunError("setReplication() must come before start()");
  const int p = m_config.ranks;
  bool symmetric = allowed && m_config.backend == Backend::Meta && p >= kReplicateFrom && !m_config.inject_branch &&
                   m_cost != nullptr;
  // The classes of ranks that behave alike: all ranks, or with pipeline
  // stages each stage's ranks (its TP and data-parallel ranks differ only in
  // their groups); the class's first rank is simulated, the others copy it.
  const int per_class = m_config.pp > 1 ? p / m_config.pp : p;
  const auto classOf = [per_class](int r) { return r / per_class * per_class; };
  if (symmetric) {
    // Every group of one kind must sit on one link level, or ranks differ in
    // what their collectives cost (a shard group straddling two nodes).
    // The layout as data (no mesh, no communicators: nothing per rank is built).
    const std::vector<CommGroup> layout = meshGroups(m_config);
    std::map<std::string, bool> level;  // group kind -> sameNode
    for (const CommGroup& g : layout) {
      std::string kind;  // "shard3.gather" -> "shard.gather"
      for (char c : g.name)
        if (c < '0' || c > '9') kind += c;
      const bool same = m_cost->sameNode(g.ranks);
      const auto [it, fresh] = level.emplace(kind, same);
      symmetric &= fresh || it->second == same;
    }
    // A pipeline's stages must talk over the same link level everywhere too.
    if (m_config.pp > 1)
      for (int r = 0; r + per_class < p && symmetric; ++r)
        symmetric &= m_cost->sameNode({r, r + per_class}) == m_cost->sameNode({classOf(0), classOf(0) + per_class});
    if (symmetric) {
      // Each copy runs its class's ops on its own groups (an HSDP copy is in
      // another shard group): the simulated rank's group ids map to the copy's.
      const std::vector<CommMesh::RankGroups> groups = CommMesh::groupsByRank(layout, p);
      std::vector<RankCopies::GroupMap> maps(static_cast<size_t>(p));
      std::vector<int> sources(static_cast<size_t>(p));
      for (int r = 0; r < p; ++r) {
        sources[static_cast<size_t>(r)] = classOf(r);
        const CommMesh::RankGroups& from = groups[static_cast<size_t>(classOf(r))];
        const CommMesh::RankGroups& to = groups[static_cast<size_t>(r)];
        const auto pair = [](int a, int b) { return std::pair{static_cast<int16_t>(a), static_cast<int16_t>(b)}; };
        maps[static_cast<size_t>(r)] = {pair(from.world, to.world),         pair(from.gather, to.gather),
                                        pair(from.reduce, to.reduce),       pair(from.replicate, to.replicate),
                                        pair(from.tensor, to.tensor),       pair(from.data, to.data),
                                        pair(from.pipeline, to.pipeline)};
      }
      m_copies = RankCopies(std::move(sources), std::move(maps));
    }
  }
  if (!symmetric) m_copies = RankCopies();
  m_simulated = symmetric ? p / per_class : p;
  std::vector<int> representatives(static_cast<size_t>(p));
  for (int r = 0; r < p; ++r) representatives[static_cast<size_t>(r)] = m_copies.sourceOf(r);
  m_gate.setRepresentatives(representatives);
}

void Run::setWorker(WorkerPlacement placement) {
  if (m_started) throw RunError("setWorker() must come before start()");
  const int rank = placement.mesh.rank;
  if (rank < 0 || rank >= m_config.ranks)
    throw ConfigError("worker rank " + std::to_string(rank) + " must be in 0.." + std::to_string(m_config.ranks - 1));
  if (placement.clock_origin) m_clock.setOrigin(*placement.clock_origin);
  m_lossRanks = {rank};
  // What this rank does not own stays marked, so only its part is reported.
  std::fill(m_finalMaster.begin(), m_finalMaster.end(), std::bit_cast<float>(kUnwrittenMaster));
  m_worker = std::move(placement);
  m_worker->mesh.store = m_worker->store.get();
  // A GPU backend opens this process's one device and connects its groups
  // across processes (or refuses, naming the flags).
  if (m_runtime) m_runtime->setProcess(m_worker->mesh);
}

void Run::setRemoteRanks(std::function<void(RemoteRankFeed&)> host) {
  if (m_started) throw RunError("setRemoteRanks() must come before start()");
  m_remoteHost = std::move(host);
  std::lock_guard lock(m_mutex);
  m_remoteLedgers.assign(static_cast<size_t>(m_config.ranks), LedgerSnapshot{});
}

LedgerSnapshot Run::ledger(int rank) const {
  {
    std::lock_guard lock(m_mutex);
    if (!m_remoteLedgers.empty()) return m_remoteLedgers.at(static_cast<size_t>(rank));
  }
  return m_contexts[rank]->ledger.snapshot();
}

void Run::start() {
  if (m_started) throw RunError("a Run can be started once");
  m_launcher = startThread("the run's launcher", [this] { launch(); });  // throws ResourceError
  m_started = true;
}

void Run::launch() {
#if defined(__linux__)
  // Linux nice values are per thread and inherited: every rank, stream and
  // Gloo thread started from here runs at this priority.
  if (m_background) setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
#endif
  const auto t0 = std::chrono::steady_clock::now();
  spdlog::logger& log = logger(LogComponent::Engine);
  logSetup(m_config, m_spec.numParams(), m_simulated);
  try {
    if (m_remoteHost) {
      RemoteRankFeed feed(*this);
      m_remoteHost(feed);
    } else {
      connectRanks();
    }
  } catch (const std::exception& e) {
    m_control.fail(failureText(e));
  }
  m_wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (m_control.hasError()) SPDLOG_LOGGER_ERROR(&log, "run stopped after {:.2f} s: {}", m_wallSeconds, m_control.error());
  else if (m_control.isAborted()) SPDLOG_LOGGER_INFO(&log, "run cancelled after {:.2f} s", m_wallSeconds);
  else SPDLOG_LOGGER_INFO(&log, "run finished: {} steps in {:.2f} s", m_config.steps, m_wallSeconds);
  m_control.setAbortHandler(nullptr);
  m_mesh.reset();  // rank threads are gone; close the connections now, not at ~Run
  // A stopped run's buffers go with its teardown: those frees are no part of
  // what ran (on the modeled clock they would land at t = 0 and empty the ledger).
  if (!m_abandoned.empty())
    for (auto& ctx : m_contexts) ctx->ledger.stopRecording();
  m_abandoned.clear();
  m_abandonedDevices.clear();
  for (auto& ctx : m_contexts) {  // a stopped GPU run's devices are gone now
    ctx->device = nullptr;
    ctx->ledger.setDeviceMemory(nullptr);
  }
  m_finished.store(true);
}

void Run::connectRanks() {
  const auto t0 = std::chrono::steady_clock::now();
  spdlog::logger& log = logger(LogComponent::Engine);
  cpu::initBlasSingleThreaded();
  // The fingerprint check catches ranks that never arrive. With far more
  // rank threads than cores (hundreds of meta ranks on a laptop) a healthy
  // collective's last arrival can trail its first by seconds of scheduling,
  // so the wait scales with the oversubscription (at most 10x).
  const int threads = 4 * m_config.ranks;  // host, compute and up to two comm streams
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int oversubscription = std::clamp(threads / (8 * cores), 1, 10);
  const int wait_timeout_ms = m_config.timeout_ms * oversubscription;
  // Gloo's own timeout only guards a peer dying mid-collective.
  const int gloo_timeout_ms = std::max(30000, 4 * wait_timeout_ms);
  const int shard_group = m_config.isSharded() ? m_config.shardGroupSize() : 0;
  std::vector<bool> simulated(static_cast<size_t>(m_config.ranks));
  if (m_worker) {
    simulated[static_cast<size_t>(m_worker->mesh.rank)] = true;
    m_mesh = std::make_unique<CommMesh>(m_config.ranks, shard_group, m_config.tp, m_config.pp, m_worker->mesh,
                                        wait_timeout_ms,
                                        gloo_timeout_ms, m_runtime.get());
  } else {
    m_mesh = std::make_unique<CommMesh>(m_config.ranks, shard_group, m_board, m_control, wait_timeout_ms,
                                        gloo_timeout_ms, m_config.backend == Backend::Meta, m_runtime.get(),
                                        m_config.tp, m_config.pp);
    for (int r = 0; r < m_config.ranks; ++r)
      simulated[static_cast<size_t>(r)] = !m_copies.isCopy(r);
    m_mesh->setSimulated(simulated);
  }
  SPDLOG_LOGGER_DEBUG(&log, "communicators ready: {} groups in {:.1f} ms (fingerprint timeout {} ms)",
                      m_mesh->groups().size(),
                      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
                      wait_timeout_ms);
  m_control.setAbortHandler([this] { m_mesh->abortAll(); });
  if (m_control.isAborted()) m_mesh->abortAll();  // cancelled while connecting
  JoinedThreads ranks;
  try {
    for (int r = 0; r < m_config.ranks; ++r)
      if (simulated[static_cast<size_t>(r)]) ranks.start("rank " + std::to_string(r), [this, r] { rankMain(r); });
  } catch (const ResourceError& e) {
    m_control.fail(e.what());  // before the join: the started ranks must not wait for the missing one
  }
  ranks.joinAll();
}

void Run::rankMain(int rank) {
  RankContext& ctx = *m_contexts[rank];
  spdlog::logger& log = rankLogger(rank);
  TimelineCursor host_cursor;  // slot 0; streams take 1..4
  host_cursor.op_base = 0;
  setCurrentCursor(&host_cursor);
  // Modeled clock: this rank's two links, each carrying one transfer at a
  // time. Declared before the streams, so they outlive every queued task.
  std::unique_ptr<LinkArbiter> intra_link, inter_link;
  if (m_cost) {
    intra_link = std::make_unique<LinkArbiter>(m_control);
    inter_link = std::make_unique<LinkArbiter>(m_control);
  }
  auto attachLink = [&](ProcessGroup* pg) {
    if (pg && m_cost) pg->setLinkArbiter(m_cost->sameNode(pg->members()) ? intra_link.get() : inter_link.get());
  };
  // GPU runs: the rank's device (memory, queues, kernels), alive until the
  // strategy's buffers are freed.
  std::unique_ptr<RankDevice> device;
  auto queue = [&](const char* name, int priority) -> std::unique_ptr<DeviceQueue> {
    return device ? device->makeQueue(name, priority) : nullptr;
  };
  if (m_runtime) {
    try {
      device = m_runtime->makeRankDevice(rank, ctx.ledger);
    } catch (const std::exception& e) {
      SPDLOG_LOGGER_ERROR(&log, "no device: {}", e.what());
      m_control.fail("rank " + std::to_string(rank) + ": " + e.what());
      setCurrentCursor(nullptr);
      return;
    }
    ctx.device = device.get();
    ctx.ledger.setDeviceMemory(&device->memory());
  }
  // Streams outlive the strategy's use of them but are stopped before its
  // buffers go away: a failed step leaves tasks that reference them. Their
  // threads are started inside the try: a thread the system refuses stops
  // the run with one message.
  const std::string prefix = "rank" + std::to_string(rank);
  std::unique_ptr<CpuStream> compute, comm, gather_stream, reduce_stream;
  std::unique_ptr<ProcessGroup> world, gather, reduce, replicate;
  // Tensor parallelism: the strategy's world is this rank's data-parallel
  // axis; its TP group serves the model slice on the compute stream.
  const int tp = m_config.tp;
  std::unique_ptr<ProcessGroup> data_axis, tensor, pipeline;
  std::unique_ptr<TensorParallelLayout> tp_layout;
  std::unique_ptr<TensorParallelGroup> tp_group;
  std::optional<RankEnv> env;
  std::unique_ptr<ParallelStrategy> strategy;
  bool stopped = false;  // cancelled (not failed): what ran so far is still reported
  try {
    compute = std::make_unique<CpuStream>(prefix + ".compute", m_control, 1, queue("compute", 0));
    comm = std::make_unique<CpuStream>(prefix + ".comm", m_control, 2, queue("comm", -1));
    const CommMesh::RankGroups ids = m_mesh->groupsOf(rank);
    world = m_mesh->makeProcessGroup(ids.world, rank, ctx);
    if (tp > 1 || m_config.pp > 1) data_axis = m_mesh->makeProcessGroup(ids.data, rank, ctx);
    if (tp > 1) {
      tensor = m_mesh->makeProcessGroup(ids.tensor, rank, ctx);
      if (!ctx.meta())  // a meta run has no weights to place
        tp_layout = std::make_unique<TensorParallelLayout>(m_spec, m_sliceSpec, rank % tp);
      tp_group = std::make_unique<TensorParallelGroup>(ctx, *tensor, m_sliceSpec.segmentCount());
    }
    if (ids.pipeline >= 0) pipeline = m_mesh->makeProcessGroup(ids.pipeline, rank, ctx);
    env.emplace(RankEnv{ctx, m_config, m_sliceSpec, data_axis ? *data_axis : *world, *compute, *comm});
    // The mesh's order (config/run_config.h): r = t + T·(d + D·s).
    env->dp_size = m_config.dataParallelSize();
    env->dp_rank = (rank / tp) % env->dp_size;
    env->stage = rank / (tp * env->dp_size);
    env->pipeline = pipeline.get();
    env->tensor = tp_group.get();
    env->tp_layout = tp_layout.get();
    env->buckets = &m_buckets;
    if (m_config.isSharded()) {
      gather_stream = std::make_unique<CpuStream>(prefix + ".gather", m_control, 3, queue("gather", -1));
      reduce_stream = std::make_unique<CpuStream>(prefix + ".reduce", m_control, 4, queue("reduce", -1));
      gather = m_mesh->makeProcessGroup(ids.gather, rank, ctx);
      reduce = m_mesh->makeProcessGroup(ids.reduce, rank, ctx);
      if (ids.replicate >= 0) replicate = m_mesh->makeProcessGroup(ids.replicate, rank, ctx);
      env->gather = gather.get();
      env->reduce = reduce.get();
      env->replicate = replicate.get();
      env->gather_stream = gather_stream.get();
      env->reduce_stream = reduce_stream.get();
    }
    for (ProcessGroup* pg : {world.get(), gather.get(), reduce.get(), replicate.get(), data_axis.get(), tensor.get()})
      attachLink(pg);  // the pipeline's sends are point to point: no ring shares its link
    if (device) device->syncOrigin(m_clock);
    strategy = makeStrategy(*env);
    strategy->setup();
    if (device) ctx.resolveDeviceTimes();
    SPDLOG_LOGGER_DEBUG(&log, "strategy {} set up", strategyName(m_config.strategy));
    for (int s = 0; s < m_config.steps; ++s) {
      ctx.setStep(s);
      ctx.instant(Lane::Host, EventKind::StepBegin);
      if (tp_group) tp_group->beginStep();
      const double loss = strategy->step(s);
      if (device) ctx.resolveDeviceTimes();  // the step's queues are drained
      ctx.instant(Lane::Host, EventKind::StepEnd);
      SPDLOG_LOGGER_DEBUG(&log, "step {} done, loss {:.6f}", s, loss);
      std::lock_guard lock(m_mutex);
      reportLoss(rank, s, loss);
    }
    std::lock_guard lock(m_mutex);
    recordRankResult(rank, *strategy, device.get(), tp_group.get());
    if (!ctx.meta() && !tp_layout) strategy->copyOwnedMaster(m_finalMaster);
    if (!ctx.meta() && tp_layout) {
      // The strategy reports its part of this TP slice; unwritten elements
      // keep a marker no trained weight has, so only its part reaches the model.
      constexpr uint32_t kUnwritten = kUnwrittenMaster;
      std::vector<float> slice(static_cast<size_t>(m_sliceSpec.numParams()), std::bit_cast<float>(kUnwritten));
      strategy->copyOwnedMaster(slice);
      tp_layout->unslice(slice.data(), m_finalMaster.data(), [&slice](int64_t i) {
        return std::bit_cast<uint32_t>(slice[static_cast<size_t>(i)]) != kUnwritten;
      });
    }
  } catch (const RunAborted&) {
    SPDLOG_LOGGER_DEBUG(&log, "stops: the run was stopped");
    stopped = true;
  } catch (const std::exception& e) {
    SPDLOG_LOGGER_DEBUG(&log, "stops: {}", e.what());
    Event err;
    ctx.instant(Lane::Host, EventKind::Error, err);
    m_control.fail(failureText(e));
  }
  compute.reset();
  comm.reset();
  gather_stream.reset();
  reduce_stream.reset();
  if (stopped && strategy) {
    // The streams are stopped: the strategy's counters are at rest.
    std::lock_guard lock(m_mutex);
    recordRankResult(rank, *strategy, device.get(), tp_group.get());
  }
  if (m_control.isAborted()) {
    // A stopped run may leave transfers that Gloo's loop thread is still
    // completing into this rank's buffers: keep them until the connections
    // are closed (launch() closes the mesh first, then frees these).
    std::lock_guard lock(m_mutex);
    m_abandoned.push_back(std::move(strategy));
    if (device) m_abandonedDevices.push_back(std::move(device));
  } else {
    // Free the model state while the host cursor is live, so the modeled
    // clock stamps those frees at the run's end, not at zero.
    strategy.reset();
    if (device) {
      try {
        ctx.resolveDeviceTimes();  // spans still pending (a failed step's)
      } catch (const std::exception& e) {
        m_control.fail(e.what());
      }
      ctx.ledger.setDeviceMemory(nullptr);
      ctx.device = nullptr;
    }
    device.reset();
  }
  setCurrentCursor(nullptr);
}

void Run::reportLoss(int rank, int step, double loss) {
  const size_t p = static_cast<size_t>(m_config.ranks);
  const auto s = static_cast<size_t>(step);
  if (m_lossReports.size() <= s) {
    m_lossReports.resize(s + 1, 0);
    m_rankLosses.resize((s + 1) * p, 0.0);
  }
  for (int q = 0; q < m_config.ranks; ++q) {
    if (m_copies.sourceOf(q) != rank) continue;  // itself and its copies
    m_rankLosses[s * p + static_cast<size_t>(q)] = loss;
    ++m_lossReports[s];
  }
  const int reporters = static_cast<int>(m_lossRanks.size());
  while (static_cast<size_t>(m_stepsDone) < m_lossReports.size() && m_lossReports[m_stepsDone] == reporters)
    ++m_stepsDone;
}

void Run::recordRankResult(int rank, const ParallelStrategy& strategy, RankDevice* device,
                           const TensorParallelGroup* tp_group) {
  RankResult& out = m_rankResults[rank];
  out.rank = rank;
  out.ledger = m_contexts[rank]->ledger.snapshot();
  out.comm_bytes = strategy.stepCommBytes();
  out.fire_order = strategy.lastFireOrder();
  out.unit_order = strategy.lastUnitOrder();
  out.padding_state_bytes = strategy.paddingStateBytes();
  out.activation_bytes_per_layer = strategy.activationBytesPerLayer();
  if (device) out.device_memory = device->memoryReport();
  if (tp_group) {
    out.tp_comm_bytes = tp_group->stepBytes();
    out.tp_forward_bytes = tp_group->forwardBytes();
    out.tp_backward_bytes = tp_group->backwardBytes();
  }
  if (rank == 0) m_paddingElements = strategy.paddingElements();
  // Its copies' entries are made by collectResult (sharedEntry), without the lists.
}

RunResult Run::wait() {
  if (m_launcher.joinable()) m_launcher.join();
  if (m_control.hasError()) throw RunError(m_control.error());
  if (m_control.isAborted()) throw RunAborted();
  return collectResult(m_config.steps);
}

RunResult Run::resultSoFar() {
  if (m_launcher.joinable()) m_launcher.join();
  RunResult result = collectResult(stepsDone());
  for (size_t r = 0; r < result.ranks.size(); ++r) {
    // Ranks stopped before their strategy was set up: their ledger only.
    RankResult& rank = result.ranks[r];
    if (rank.rank != static_cast<int>(r)) {
      rank = RankResult{};
      rank.rank = static_cast<int>(r);
      rank.ledger = m_contexts[r]->ledger.snapshot();
    }
  }
  return result;
}

RunResult Run::collectResult(int steps_done) {
  RunResult result;
  result.config = m_config;
  result.params = m_spec.numParams();
  result.slice_params = m_sliceSpec.numParams();
  if (m_config.tp > 1) result.tp_whole_params = tensorParallelSplit(m_spec, m_sliceSpec).whole_elements;
  result.losses = losses();
  result.ranks = m_rankResults;  // a copy's entry is empty here: filled from its source below
  if (m_clock.modeled()) {
    // Allocation order across threads is real-time order; the modeled ledger
    // is the replay in modeled-time order (deterministic).
    for (int r = 0; r < m_config.ranks; ++r) {
      RankResult& rank = result.ranks[static_cast<size_t>(r)];
      if (m_copies.isCopy(r) || rank.rank != r) continue;  // a copy, or a rank that never recorded
      std::vector<Event> events = m_contexts[static_cast<size_t>(r)]->log.snapshot();
      sortEvents(events);
      rank.ledger = replayLedger(events);
    }
  }
  for (int r = 0; r < m_config.ranks; ++r) {
    const int source = m_copies.sourceOf(r);
    const RankResult& from = result.ranks[static_cast<size_t>(source)];
    if (source != r && from.rank == source) result.ranks[static_cast<size_t>(r)] = sharedEntry(from, r);
  }
  result.buckets = m_buckets;
  result.units = m_units;
  result.padding_elements = m_paddingElements;
  result.final_master = m_finalMaster;
  result.wall_seconds = m_wallSeconds;
  result.simulated_ranks = m_simulated;
  result.copies = m_copies;
  if (m_runtime) result.device = m_runtime->describe();
  {
    // The simulated ranks' timing; a copy's is its source's, as its own rank.
    const RunTrace t = trace(CopiedRanks::Shared);
    std::vector<std::optional<StepMetrics>> last(static_cast<size_t>(m_config.ranks));
    for (const StepMetrics& m : computeStepMetrics(t.events))
      if (m.step == steps_done - 1 && m.rank >= 0 && m.rank < m_config.ranks) last[static_cast<size_t>(m.rank)] = m;
    for (int r = 0; r < m_config.ranks; ++r) {
      const std::optional<StepMetrics>& m = last[static_cast<size_t>(m_copies.sourceOf(r))];
      if (!m) continue;
      result.last_step.push_back(*m);
      result.last_step.back().rank = r;
    }
    if (m_config.pp > 1) {
      result.pipeline = measurePipeline(t, steps_done - 1);
      const PipelineStages stages = pipelineStagesFor(m_config, m_sliceSpec);
      for (StageTiming& st : result.pipeline.stages) {
        for (const PipelineChunk& chunk : stages.chunksOf(st.stage))
          st.chunks += (st.chunks.empty() ? "" : "; ") + stages.describe(chunk.index, m_config.model.layers);
      }
    }
    if (m_cost) {  // rank 0 is always simulated
      const CommLatency latency = dataParallelCommLatency(t, *m_cost, 0, steps_done - 1);
      if (latency.collectives > 0) result.latency_share = latency.share();
    }
  }
  MemoryLedger scratch(0, nullptr, nullptr);
  // Model FLOPs: the full model on a data-parallel rank's batch, shared by the T ranks of its TP group.
  const auto model = makeModel(m_spec, scratch, m_config.batch / m_config.dataParallelSize(), m_config.seed);
  for (int s = 0; s < m_spec.segmentCount(); ++s) result.flops_per_step_per_rank += 3.0 * model->forwardFlops(s);
  result.flops_per_step_per_rank /= m_config.tp * m_config.pp;  // a stage runs 1/pp of the model (balanced)
  double recomputed = 0;
  for (int s = 0; s < m_spec.segmentCount(); ++s) recomputed += model->recomputeFlops(s);
  result.hardware_flops_per_step_per_rank = result.flops_per_step_per_rank + recomputed / (m_config.tp * m_config.pp);
  if (m_cost) {
    result.peak_flops = m_cost->profile().device.bf16_flops;
    result.profile = m_cost->profile().name;
  }
  return result;
}

void RemoteRankFeed::events(int rank, const Event* events, size_t count) {
  m_run.m_contexts.at(static_cast<size_t>(rank))->log.record(events, count);
}

void RemoteRankFeed::loss(int rank, int step, double loss) {
  // A copied rank's loss is its representative's, filed with it.
  if (m_run.representativeOf(rank) != rank) return;
  std::lock_guard lock(m_run.m_mutex);
  m_run.reportLoss(rank, step, loss);
}

void RemoteRankFeed::rankResult(int rank, RankResult result, int64_t padding_elements) {
  std::lock_guard lock(m_run.m_mutex);
  result.rank = rank;
  m_run.m_rankResults.at(static_cast<size_t>(rank)) = std::move(result);
  if (rank == 0) m_run.m_paddingElements = padding_elements;
}

void RemoteRankFeed::master(int64_t offset, const float* values, size_t count) {
  std::lock_guard lock(m_run.m_mutex);
  std::vector<float>& out = m_run.m_finalMaster;
  if (offset < 0 || static_cast<size_t>(offset) > out.size() || count > out.size() - static_cast<size_t>(offset))
    throw RunError("final master weights [" + std::to_string(offset) + ", +" + std::to_string(count) +
                   ") lie outside the model's " + std::to_string(out.size()) + " parameters");
  std::copy(values, values + count, out.begin() + offset);
}

void RemoteRankFeed::ledger(int rank, const LedgerSnapshot& snapshot) {
  std::lock_guard lock(m_run.m_mutex);
  m_run.m_remoteLedgers.at(static_cast<size_t>(rank)) = snapshot;
}

void RemoteRankFeed::nodeClock(const RunTrace::NodeClock& clock) {
  std::lock_guard lock(m_run.m_mutex);
  m_run.m_nodeClocks.push_back(clock);
}

double RunResult::mfu() const {
  if (peak_flops <= 0 || last_step.empty()) return 0.0;
  int64_t step_ns = 0;
  for (const StepMetrics& m : last_step) step_ns = std::max(step_ns, m.wall_ns);
  return step_ns > 0 ? flops_per_step_per_rank / (peak_flops * step_ns * 1e-9) : 0.0;
}

double RunResult::hfu() const {
  return flops_per_step_per_rank > 0 ? mfu() * hardware_flops_per_step_per_rank / flops_per_step_per_rank : 0.0;
}

int Run::stepsDone() const {
  std::lock_guard lock(m_mutex);
  return m_stepsDone;
}

std::vector<double> Run::losses() const {
  std::lock_guard lock(m_mutex);
  const size_t p = static_cast<size_t>(m_config.ranks);
  std::vector<double> out;
  out.reserve(static_cast<size_t>(m_stepsDone));
  // Pipelines: only the last stage's ranks compute a loss.
  const int last_stage_from = m_config.pp > 1 ? m_config.ranks / m_config.pp * (m_config.pp - 1) : 0;
  for (size_t s = 0; s < static_cast<size_t>(m_stepsDone); ++s) {
    double sum = 0;
    int counted = 0;
    for (int q : m_lossRanks) {
      if (q < last_stage_from) continue;
      sum += m_rankLosses[s * p + static_cast<size_t>(q)];
      ++counted;
    }
    out.push_back(counted > 0 ? sum / counted : std::numeric_limits<double>::quiet_NaN());
  }
  return out;
}

std::vector<double> Run::rankLosses(int step) const {
  std::lock_guard lock(m_mutex);
  if (step < 0 || step >= m_stepsDone) throw RunError("step " + std::to_string(step) + " has not completed");
  const size_t p = static_cast<size_t>(m_config.ranks);
  const auto first = m_rankLosses.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(step) * p);
  return {first, first + static_cast<std::ptrdiff_t>(p)};
}

RunTrace Run::trace(CopiedRanks copied) const {
  RunTrace t;
  t.strategy = strategyName(m_config.strategy);
  t.ranks = m_config.ranks;
  t.params = m_spec.numParams();
  t.config = m_config;
  // Measured runs are threads or GPUs of this one machine; the modeled clock's profile places ranks on nodes.
  t.groups = meshGroups(m_config);
  for (CommGroup& g : t.groups)
    g.link = !m_cost || m_cost->sameNode(g.ranks) ? LinkLevel::IntraNode : LinkLevel::InterNode;
  for (const ParamInfo& p : m_spec.params()) t.param_names.push_back(p.name);
  for (int s = 0; s < m_spec.segmentCount(); ++s) t.block_names.push_back(m_spec.segmentName(s));
  for (const Bucket& b : m_buckets) {
    BucketInfo info{b.index, b.elements * static_cast<int64_t>(sizeof(bf16)), {}};
    for (const BucketPlanEntry& e : b.entries) info.params.push_back(m_spec.params()[e.param].name);
    t.buckets.push_back(std::move(info));
  }
  t.units = m_units;
  t.node_clocks = nodeClocks();
  // A meta run has no math: its losses are zeros, not losses.
  if (m_config.backend != Backend::Meta) t.losses = losses();
  t.events.resize(m_contexts.size());
  for (const auto& ctx : m_contexts) {
    if (m_copies.isCopy(ctx->rank)) continue;  // its source's events, relabelled (below or by the reader)
    std::vector<Event>& events = t.events[static_cast<size_t>(ctx->rank)];
    events = ctx->log.snapshot();
    if (m_clock.modeled()) {
      sortEvents(events);
      replayLedger(events);
    }
  }
  if (copied == CopiedRanks::Shared) t.copies = m_copies;
  else m_copies.expand(t.events);
  return t;
}

}  // namespace shardscope
