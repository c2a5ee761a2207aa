// EmulatedGroup: a generation-counted rendezvous. A waiter reads the outcome
// (m_error, m_lastRank) of its generation before returning; the next generation
// cannot complete without this rank posting again, so nothing overwrites it first.
#include "cuda/emulated_group.h"

#include <exception>
#include <stdexcept>
#include <utility>

#include "common/errors.h"

namespace shardscope::gpu {
namespace {

const char* dtypeName(DType t) { return t == DType::F32 ? "f32" : "bf16"; }

std::string describe(const CollectivePost& p) {
  std::string s = std::string(collectiveName(p.op)) + "(count " + std::to_string(p.count) + ", " +
                  dtypeName(p.dtype);
  if (p.op == Collective::Broadcast) s += ", root " + std::to_string(p.root);
  return s + ")";
}

}  // namespace

EmulatedGroup::EmulatedGroup(int size, std::unique_ptr<CollectiveExecutor> executor)
    : m_size(size), m_executor(std::move(executor)), m_posts(static_cast<size_t>(size)) {
  if (size < 1) {
    throw ConfigError("cuda-emulated group: size " + std::to_string(size) +
                      " must be at least 1");
  }
}

std::string EmulatedGroup::mismatch() const {
  const CollectivePost& first = m_posts[0];
  for (int r = 1; r < m_size; ++r) {
    const CollectivePost& p = m_posts[static_cast<size_t>(r)];
    if (p.op != first.op || p.count != first.count || p.dtype != first.dtype ||
        p.root != first.root) {
      return "cuda-emulated collective #" + std::to_string(m_generation) + " mismatch: rank 0 " +
             "called " + describe(first) + ", rank " + std::to_string(r) + " called " +
             describe(p) + " (every rank must issue the same collectives in the same order)";
    }
  }
  return "";
}

void EmulatedGroup::run(int rank, const CollectivePost& post) {
  if (rank < 0 || rank >= m_size) {
    throw std::invalid_argument("EmulatedGroup::run: rank " + std::to_string(rank) +
                                " outside [0, " + std::to_string(m_size) + ")");
  }
  {
    std::lock_guard lock(m_mutex);
    if (m_aborted) throw RunAborted();
  }
  m_executor->markReady(rank, post);

  std::unique_lock lock(m_mutex);
  if (m_aborted) throw RunAborted();
  m_posts[static_cast<size_t>(rank)] = post;
  const uint64_t generation = m_generation;
  if (++m_arrived == m_size) {
    std::string error = mismatch();
    if (error.empty()) {
      try {
        m_executor->launch(m_posts, rank);
      } catch (const std::exception& e) {
        error = "cuda-emulated " + std::string(collectiveName(post.op)) + " launch failed: " +
                e.what();
      }
    }
    m_error = std::move(error);
    m_lastRank = rank;
    m_arrived = 0;
    ++m_generation;
    m_cv.notify_all();
  } else {
    m_cv.wait(lock, [&] { return m_generation != generation || m_aborted; });
    if (m_generation == generation) throw RunAborted();  // aborted before the launch
  }
  const std::string error = m_error;
  const int last = m_lastRank;
  lock.unlock();
  if (!error.empty()) throw RunError(error);
  m_executor->join(rank, post, last);
}

void EmulatedGroup::abort() {
  {
    std::lock_guard lock(m_mutex);
    m_aborted = true;
  }
  m_cv.notify_all();
  m_executor->abort();
}

bool EmulatedGroup::aborted() const {
  std::lock_guard lock(m_mutex);
  return m_aborted;
}

EmulatedCommunicator::EmulatedCommunicator(std::shared_ptr<EmulatedGroup> group, int rank,
                                           int device, StreamHandle default_stream, std::string backend)
    : m_group(std::move(group)), m_rank(rank), m_device(device), m_stream(default_stream),
      m_backend(std::move(backend)) {}

void EmulatedCommunicator::run(Collective op, size_t count, DType dtype, int root,
                               const void* input, void* output) {
  CollectivePost post;
  post.op = op;
  post.count = count;
  post.dtype = dtype;
  post.root = root;
  post.input = input;
  post.output = output;
  post.stream = m_stream;
  m_group->run(m_rank, post);
  m_sent += ringBytesSent(op, m_rank, size(), count, dtypeSize(dtype), root < 0 ? 0 : root);
}

void EmulatedCommunicator::allReduce(void* data, size_t count, DType dtype) {
  run(Collective::AllReduce, count, dtype, -1, data, data);
}

void EmulatedCommunicator::reduceScatter(const void* input, void* output, size_t count,
                                         DType dtype) {
  run(Collective::ReduceScatter, count, dtype, -1, input, output);
}

void EmulatedCommunicator::allGather(const void* input, void* output, size_t count, DType dtype) {
  run(Collective::AllGather, count, dtype, -1, input, output);
}

void EmulatedCommunicator::broadcast(void* data, size_t count, DType dtype, int root) {
  if (root < 0 || root >= size()) {
    throw std::invalid_argument("cuda-emulated broadcast: root " + std::to_string(root) +
                                " outside [0, " + std::to_string(size()) + ")");
  }
  run(Collective::Broadcast, count, dtype, root, data, data);
}

void EmulatedCommunicator::barrier() { run(Collective::Barrier, 0, DType::F32, -1, nullptr, nullptr); }

std::vector<std::unique_ptr<GpuCommunicator>> createEmulatedGroup(
    int size, std::unique_ptr<CollectiveExecutor> executor, int device,
    const std::vector<StreamHandle>& default_streams) {
  if (static_cast<int>(default_streams.size()) != size) {
    throw std::invalid_argument("createEmulatedGroup: " + std::to_string(default_streams.size()) +
                                " default streams for " + std::to_string(size) + " ranks");
  }
  auto group = std::make_shared<EmulatedGroup>(size, std::move(executor));
  std::vector<std::unique_ptr<GpuCommunicator>> comms;
  for (int r = 0; r < size; ++r) {
    comms.push_back(std::make_unique<EmulatedCommunicator>(group, r, device,
                                                           default_streams[static_cast<size_t>(r)]));
  }
  return comms;
}

}  // namespace shardscope::gpu
