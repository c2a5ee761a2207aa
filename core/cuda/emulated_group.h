// The device-free half of the "cuda-emulated" backend: P ranks (threads) meet at a
// rendezvous for each collective; the last to arrive checks that all P posted the
// same call and has the executor launch it over every rank's buffers; the others
// wait for that, then order their streams after it. The CUDA executor
// (emulated_communicator.h) enqueues copies and a reduction kernel on one GPU;
// the host tests plug in one that works on host memory.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/gpu_communicator.h"

namespace shardscope::gpu {

struct CollectivePost {
  Collective op = Collective::Barrier;
  size_t count = 0;    // elements, as the Communicator call's count
  DType dtype = DType::F32;
  int root = -1;       // broadcast only
  const void* input = nullptr;
  void* output = nullptr;
  StreamHandle stream = nullptr;
};

class CollectiveExecutor {
 public:
  virtual ~CollectiveExecutor() = default;
  // Rank's thread, before it arrives: mark its buffers ready at the end of post.stream.
  virtual void markReady(int rank, const CollectivePost& post) = 0;
  // Last arrival's thread, while the others wait: enqueue the collective after
  // every rank's ready mark (posts[r] is rank r's; posts[last] is the caller's).
  virtual void launch(const std::vector<CollectivePost>& posts, int last) = 0;
  // Each rank's thread after launch returned: order its stream after the collective.
  virtual void join(int rank, const CollectivePost& post, int last) = 0;
  // Any thread, from EmulatedGroup::abort: stop device work in flight (NCCL's abort).
  virtual void abort() {}
};

class EmulatedGroup {
 public:
  EmulatedGroup(int size, std::unique_ptr<CollectiveExecutor> executor);
  // Blocks until every rank has posted this collective. Throws RunError on every
  // rank when the posts disagree or the launch fails, RunAborted once aborted.
  void run(int rank, const CollectivePost& post);
  // Any thread: wakes every waiting rank; this and every later run() throws RunAborted.
  void abort();
  bool aborted() const;
  int size() const { return m_size; }

 private:
  std::string mismatch() const;  // "" when every post matches rank 0's

  const int m_size;
  std::unique_ptr<CollectiveExecutor> m_executor;
  mutable std::mutex m_mutex;
  std::condition_variable m_cv;
  std::vector<CollectivePost> m_posts;
  int m_arrived = 0;
  uint64_t m_generation = 0;  // collectives completed (launched or failed)
  int m_lastRank = -1;        // of the latest generation
  std::string m_error;        // of the latest generation, "" if it launched
  bool m_aborted = false;
};

class EmulatedCommunicator final : public GpuCommunicator {
 public:
  // backend: what backendName() says ("cuda-emulated", or "nccl" when the
  // group's executor launches NCCL collectives).
  EmulatedCommunicator(std::shared_ptr<EmulatedGroup> group, int rank, int device,
                       StreamHandle default_stream, std::string backend = "cuda-emulated");
  int rank() const override { return m_rank; }
  int size() const override { return m_group->size(); }
  std::string backendName() const override { return m_backend; }

  void allReduce(void* data, size_t count, DType dtype) override;
  void reduceScatter(const void* input, void* output, size_t count, DType dtype) override;
  void allGather(const void* input, void* output, size_t count, DType dtype) override;
  void broadcast(void* data, size_t count, DType dtype, int root) override;
  // Returns once every rank has called it; streams are ordered after all ranks'
  // earlier work. The host does not wait for the device.
  void barrier() override;
  uint64_t bytesSent() const override { return m_sent.load(std::memory_order_relaxed); }
  void abort() override { m_group->abort(); }

  void setStream(StreamHandle stream) override { m_stream = stream; }
  StreamHandle stream() const override { return m_stream; }
  int device() const override { return m_device; }

 private:
  void run(Collective op, size_t count, DType dtype, int root, const void* input, void* output);

  std::shared_ptr<EmulatedGroup> m_group;
  int m_rank;
  int m_device;
  StreamHandle m_stream;
  std::string m_backend;
  std::atomic<uint64_t> m_sent{0};  // written by the rank's thread, read by any
};

// P communicators over one executor; default_streams[r] is rank r's initial stream.
std::vector<std::unique_ptr<GpuCommunicator>> createEmulatedGroup(
    int size, std::unique_ptr<CollectiveExecutor> executor, int device,
    const std::vector<StreamHandle>& default_streams);

}  // namespace shardscope::gpu
