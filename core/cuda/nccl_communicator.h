// NCCL ranks: one rank per visible GPU, all threads of this process, created
// together by ncclCommInitAll. Sub-groups come from ncclCommSplit (a collective
// over the parent: every rank calls split() from its own thread). abort() and any
// NCCL error call ncclCommAbort, so a failed or cancelled run never waits out a
// hung collective; after that every call throws RunAborted.
#pragma once

#include <nccl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "cuda/gpu_communicator.h"

namespace shardscope::gpu {

class CudaStream;

class NcclCommunicator final : public GpuCommunicator {
 public:
  // Takes ownership of comm (rank `rank` of `size` on `device`).
  NcclCommunicator(ncclComm_t comm, int rank, int size, int device);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return m_rank; }
  int size() const override { return m_size; }
  std::string backendName() const override { return "nccl"; }

  void allReduce(void* data, size_t count, DType dtype) override;
  void reduceScatter(const void* input, void* output, size_t count, DType dtype) override;
  void allGather(const void* input, void* output, size_t count, DType dtype) override;
  void broadcast(void* data, size_t count, DType dtype, int root) override;
  // A one-element all-reduce, then waits for the stream (polling, so abort() wakes it).
  void barrier() override;
  uint64_t bytesSent() const override { return m_sent.load(std::memory_order_relaxed); }
  void abort() override;

  void setStream(StreamHandle stream) override { m_stream = stream; }
  StreamHandle stream() const override { return m_stream; }
  int device() const override { return m_device; }

  // Ranks passing the same color >= 0 form a new communicator, ranked by key
  // (ties by parent rank); color < 0 joins none and gets nullptr.
  std::unique_ptr<NcclCommunicator> split(int color, int key);

 private:
  template <class Call>
  void enqueue(const char* what, Call&& call);

  ncclComm_t m_comm = nullptr;
  int m_rank, m_size, m_device;
  std::unique_ptr<CudaStream> m_ownStream;
  StreamHandle m_stream = nullptr;
  float* m_barrierScratch = nullptr;  // device, one float
  std::atomic<uint64_t> m_sent{0};
  std::atomic<bool> m_aborted{false};
  std::mutex m_mutex;  // held while a call uses m_comm, so abort never frees it under one
};

// devices: one rank each, rank i on devices[i]; empty = every visible GPU.
// Throws std::runtime_error (NCCL's message) when initialisation fails.
std::vector<std::unique_ptr<NcclCommunicator>> createNcclGroup(const std::vector<int>& devices = {});

// Ranks as processes: a fresh ncclUniqueId as bytes (NCCL_UNIQUE_ID_BYTES), made
// by a group's first member and shared with the others through the store.
std::vector<uint8_t> makeNcclUniqueId();
// This process's member `rank` of a `size`-rank group on `device`, joined with
// ncclCommInitRank under the group's id (blocks until every member has joined).
// Throws std::runtime_error (NCCL's message) when initialisation fails.
std::unique_ptr<NcclCommunicator> joinNcclGroup(const std::vector<uint8_t>& unique_id, int rank, int size,
                                                int device);

}  // namespace shardscope::gpu
