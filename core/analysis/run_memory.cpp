#include "analysis/run_memory.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "analysis/formulas.h"
#include "common/checked_math.h"
#include "common/errors.h"
#include "common/units.h"
#include "memory/memory_ledger.h"
#include "model/meta_model.h"
#include "model/model_spec.h"
#include "parallel/bucket_plan.h"
#include "parallel/fsdp_units.h"

namespace shardscope {

namespace {

// "26 GiB", "3.4 GiB", "512 MiB", "under 1 MiB": two figures at most, an estimate's precision.
std::string gib(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b < kMiB) return "under 1 MiB";
  return bytesText(b, b >= kGiB && b < 10 * kGiB ? 1 : 0);
}


// Communication buffers per rank: DDP/ZeRO-1/2 buckets (and ZeRO-1's
// reduce-scattered shards, ZeRO-2's full gradients of a bucket in flight);
// ZeRO-3's gathered units and their full gradients (root + two units with prefetch).
int64_t commBufferBytes(const RunConfig& c, const ModelSpec& spec) {
  const int64_t n = spec.numParams();
  if (!c.isSharded()) {
    const std::vector<Bucket> buckets = planBuckets(c, spec);
    int64_t largest = 0;
    for (const Bucket& b : buckets) largest = std::max(largest, b.elements);
    // --grad-dtype fp32: the fp32 buckets are the gradients (model state);
    // ZeRO-1 reduce-scatters them into an fp32 shard.
    if (c.fp32Grads())
      return c.strategy == Strategy::Zero1 ? 4 * ceilDiv(n, static_cast<int64_t>(c.dataParallelSize())) : 0;
    if (c.strategy == Strategy::Zero1) return 2 * n + 2 * ceilDiv(n, static_cast<int64_t>(c.dataParallelSize()));
    if (c.strategy == Strategy::Zero2) return 2 * n + 2 * largest;
    return 2 * n;
  }
  const FsdpUnits units(spec, c.unitBlocks(), c.shardGroupSize());
  int64_t root = 0, largest = 0;
  for (const FsdpUnit& u : units.units()) {
    if (u.index == 0) root = u.elements;
    else largest = std::max(largest, u.elements);
  }
  const int64_t held = std::min(n, root + 2 * largest);
  return 2 * held + 2 * held;  // gathered + grad_full, bf16
}

// The backward pass's largest transient for the weights: an fp32 copy of a
// segment's weights plus the fp32 gradient of its largest matrix.
int64_t weightWorkspaceBytes(const ModelSpec& spec) {
  int64_t worst = 0;
  for (int s = 0; s < spec.segmentCount(); ++s) {
    int64_t largest_matrix = 0;
    const auto [first, last] = spec.segmentParams(s);
    for (int p = first; p < last; ++p) largest_matrix = std::max(largest_matrix, spec.params()[p].numel());
    worst = std::max(worst, 4 * spec.segmentElements(s) + 4 * largest_matrix);
  }
  return worst;
}

// Saved activations, booked as the meta backend books them (its model over a
// ledger that only counts), plus the MLP inner width's gradients in backward.
// A TP group's ranks share their samples: each takes batch / (data-parallel ranks).
int64_t activationBytes(const RunConfig& c, const ModelSpec& spec) {
  const int local_batch = c.batch / c.dataParallelSize();
  MemoryLedger ledger(0, nullptr, nullptr, /*meta=*/true);
  MetaModel model(spec, ledger, local_batch, c.seed);
  model.loadBatch(0, 0);
  // The batch, then what each segment's forward keeps (summed, not run: a TP
  // slice's forward also issues its group's collectives).
  int64_t booked = ledger.snapshot().total_peak;
  for (int s = 0; s < spec.segmentCount(); ++s) booked += model.savedBytes(s);
  const ModelShape& m = spec.shape();
  // The GPT bookings are bf16 (autocast) where the CPU ranks hold fp32: twice
  // the booked bytes bound what the host holds.
  const int64_t saved = booked * (m.kind == ModelKind::Gpt ? 2 : 1);
  model.releaseBatch();
  const int64_t rows = m.kind == ModelKind::Gpt ? int64_t(local_batch) * m.seq : local_batch;
  const int64_t inner = (m.ffn > 0 ? m.ffn : 4 * int64_t(m.hidden)) / spec.tp();  // column-parallel under TP
  return saved + 8 * rows * inner;
}

std::string joinAnd(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  return out;
}

std::string flag(const char* name, long long value) { return std::string(name) + " " + std::to_string(value); }

// Which flags make the run this big, in the words of its largest part.
std::string drivers(const RunConfig& c, const RunMemoryEstimate& e, int64_t params) {
  const ModelShape& m = c.model;
  std::ostringstream os;
  const bool gpt = m.kind == ModelKind::Gpt;
  if (e.model_bytes_per_rank >= e.activation_bytes_per_rank) {
    std::vector<std::string> shape = {flag("--hidden", m.hidden), flag("--layers", m.layers)};
    if (gpt) shape.push_back(flag("--vocab", m.vocab));
    const double n = static_cast<double>(std::max<int64_t>(params, 1));
    char text[160];
    std::snprintf(text, sizeof text, "%.3g B parameters from ", n / 1e9);
    os << "most of it is the model: " << text << joinAnd(shape);
    // Per parameter of the whole model, as `run` and the capacity page report it ((16/P)/T under TP).
    std::snprintf(text, sizeof text, ", %.1f bytes each of model state on a rank (%.1f with buffers and workspace)",
                  expectedBytesPerParam(c), static_cast<double>(e.model_bytes_per_rank) / n);
    os << text << " under --strategy " << strategyName(c.strategy) << " with --ranks " << c.ranks;
    if (c.tp > 1) os << " and --tp " << c.tp << " (each rank holds its 1/" << c.tp << " slice)";
  } else {
    std::vector<std::string> shape = {flag("--batch", c.batch)};
    if (gpt) {
      shape.push_back(flag("--seq", m.seq));
      shape.push_back(flag("--vocab", m.vocab));
    }
    shape.push_back(flag("--hidden", m.hidden));
    os << "most of it is activations: " << joinAnd(shape) << " (" << c.batch / c.dataParallelSize()
       << " samples per rank of --ranks " << c.ranks;
    if (c.tp > 1) os << ", shared by the --tp " << c.tp << " ranks of a group";
    os << ")";
  }
  return os.str();
}

int64_t readMeminfo(const char* key) {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0) continue;
    long long kib = 0;
    if (std::sscanf(line.c_str() + std::string(key).size(), " %lld", &kib) == 1) return kib * 1024;
  }
  return -1;
}

int64_t processVirtualBytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    long long kib = 0;
    if (line.rfind("VmSize:", 0) == 0 && std::sscanf(line.c_str() + 7, " %lld", &kib) == 1) return kib * 1024;
  }
  return 0;
}

}  // namespace

RunMemoryEstimate estimateRunMemory(const RunConfig& c) {
  RunMemoryEstimate e;
  // Each rank: a host thread, compute and comm streams (gather and reduce when
  // sharded) and a transport thread per group it is in.
  const bool replicated = c.backend == Backend::Meta && c.replicate && c.ranks >= 64 && !c.inject_branch;
  const int simulated = replicated ? 1 : c.ranks;
  e.threads = simulated * (c.isSharded() ? 9 : 4) + 4;
  if (c.backend != Backend::Cpu) return e;
  e.blas_threads = c.ranks;
  // What one rank holds: under --tp T its slice of the model (1/T of every
  // split matrix, the norms and row-parallel biases whole), so its model state
  // is the capacity page's figure for the slice's parameters, and its buffers,
  // workspace and activations are the slice's.
  const ModelSpec slice(c.model, c.tp);
  e.model_bytes_per_rank = expectedModelStateBytesRoundedUp(c, sliceParams(c)) + commBufferBytes(c, slice) +
                           weightWorkspaceBytes(slice);
  e.activation_bytes_per_rank = activationBytes(c, slice);
  e.run_bytes = 4 * modelParams(c);  // the result gathers the whole model's fp32 weights
  return e;
}

MachineMemory machineMemory() {
  MachineMemory m;
  m.available_bytes = readMeminfo("MemAvailable:");
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    m.address_limit_bytes = static_cast<int64_t>(limit.rlim_cur);
  m.address_used_bytes = processVirtualBytes();
  if (getrlimit(RLIMIT_STACK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    m.thread_stack_bytes = static_cast<int64_t>(limit.rlim_cur);
  m.malloc_arenas = 8 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return m;
}

void checkRunFitsMachine(const RunConfig& c, const MachineMemory& machine, const std::string& force_hint) {
  const RunMemoryEstimate e = estimateRunMemory(c);
  const int64_t total = e.total(c.ranks);
  const std::string needs = "this run needs about " + gib(e.perRank()) + " per rank, " + gib(total) + " in all";
  const std::string what_to_do =
      "; use smaller values, shard the model state (--strategy zero3), fewer --ranks, or --backend meta to "
      "simulate it without the memory" + (force_hint.empty() ? "" : " (" + force_hint + ")");
  // Address space, not memory: thread stacks, BLAS buffers and malloc arenas are reserved whole.
  const int64_t stacks = static_cast<int64_t>(e.threads) * machine.thread_stack_bytes;
  const int64_t reserved = stacks + static_cast<int64_t>(e.blas_threads) * machine.blas_buffer_bytes +
                           std::min(e.threads, machine.malloc_arenas) * machine.malloc_arena_bytes;
  const bool limited = machine.address_limit_bytes >= 0;
  const int64_t room = limited ? machine.address_limit_bytes - machine.address_used_bytes : 0;
  const bool memory_short = machine.available_bytes >= 0 && total > machine.available_bytes;
  const bool address_short = limited && total + reserved > room;
  // The tighter of the two is the one to name.
  if (address_short && (!memory_short || room < machine.available_bytes)) {
    std::string why = drivers(c, e, ModelSpec(c.model).numParams());
    if (total < reserved)
      why = "most of it is reserved per thread: " + std::to_string(e.threads) + " threads for --ranks " +
            std::to_string(c.ranks) + " (" + gib(machine.thread_stack_bytes) + " of stack each)" +
            (e.blas_threads > 0 ? ", a " + gib(machine.blas_buffer_bytes) + " BLAS buffer per rank" : std::string()) +
            " and up to " + std::to_string(machine.malloc_arenas) + " malloc arenas of " + gib(machine.malloc_arena_bytes);
    throw ConfigError(needs + ", and " + gib(reserved) + " of address space for its threads; the process may map " +
                      gib(machine.address_limit_bytes) + " (ulimit -v) and maps " + gib(machine.address_used_bytes) +
                      " already: " + why + what_to_do);
  }
  if (memory_short)
    throw ConfigError(needs + "; the machine has " + gib(machine.available_bytes) +
                      " available (MemAvailable in /proc/meminfo): " + drivers(c, e, ModelSpec(c.model).numParams()) +
                      what_to_do);
}

}  // namespace shardscope
