// NcclCommunicator. Collectives run under m_mutex only while NCCL enqueues (never
// blocking on peers with blocking communicators), so abort() from another thread
// waits at most one enqueue before ncclCommAbort frees the communicator. split()
// is the exception: ncclCommSplit waits for every parent rank under the mutex.
#include "cuda/nccl_communicator.h"

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include "common/errors.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_stream.h"

namespace shardscope::gpu {
namespace {

ncclDataType_t ncclType(DType t) { return t == DType::F32 ? ncclFloat32 : ncclBfloat16; }

}  // namespace

NcclCommunicator::NcclCommunicator(ncclComm_t comm, int rank, int size, int device)
    : m_comm(comm), m_rank(rank), m_size(size), m_device(device) {
  m_ownStream = std::make_unique<CudaStream>(device, "nccl rank " + std::to_string(rank));
  m_stream = m_ownStream->handle();
  DeviceGuard guard(device);
  CUDA_CHECK(cudaMalloc(&m_barrierScratch, sizeof(float)));
  CUDA_CHECK(cudaMemset(m_barrierScratch, 0, sizeof(float)));
}

// ncclCommDestroy is an intra-node collective (it finalizes first), so one thread
// destroying several ranks' communicators in turn would hang on the first. The
// stream's pending work is waited for instead, then the local-only abort frees it.
NcclCommunicator::~NcclCommunicator() {
  std::lock_guard lock(m_mutex);
  int previous = 0;
  cudaGetDevice(&previous);
  cudaSetDevice(m_device);
  if (m_comm) {
    if (!m_aborted) cudaStreamSynchronize(m_stream);
    ncclCommAbort(m_comm);
    m_comm = nullptr;
  }
  if (m_barrierScratch) cudaFree(m_barrierScratch);
  cudaGetLastError();
  cudaSetDevice(previous);
}

template <class Call>
void NcclCommunicator::enqueue(const char* what, Call&& call) {
  std::unique_lock lock(m_mutex);
  if (m_aborted || !m_comm) throw RunAborted();
  DeviceGuard guard(m_device);
  const ncclResult_t result = call(m_comm);
  if (result != ncclSuccess) {
    const std::string detail = ncclGetLastError(m_comm);
    ncclCommAbort(m_comm);  // peers blocked in this collective fail instead of hanging
    m_comm = nullptr;
    m_aborted = true;
    throw std::runtime_error(std::string("nccl ") + what + " on rank " + std::to_string(m_rank) +
                             " (GPU " + std::to_string(m_device) + "): " +
                             ncclResultName(result) + ": " + ncclGetErrorString(result) +
                             (detail.empty() ? "" : " (" + detail + ")") +
                             " (hint: " + ncclErrorHint(result) + ")");
  }
}

void NcclCommunicator::allReduce(void* data, size_t count, DType dtype) {
  enqueue("allReduce", [&](ncclComm_t c) {
    return ncclAllReduce(data, data, count, ncclType(dtype), ncclSum, c, m_stream);
  });
  m_sent += ringBytesSent(Collective::AllReduce, m_rank, m_size, count, dtypeSize(dtype));
}

void NcclCommunicator::reduceScatter(const void* input, void* output, size_t count, DType dtype) {
  enqueue("reduceScatter", [&](ncclComm_t c) {
    return ncclReduceScatter(input, output, count, ncclType(dtype), ncclSum, c, m_stream);
  });
  m_sent += ringBytesSent(Collective::ReduceScatter, m_rank, m_size, count, dtypeSize(dtype));
}

void NcclCommunicator::allGather(const void* input, void* output, size_t count, DType dtype) {
  enqueue("allGather", [&](ncclComm_t c) {
    return ncclAllGather(input, output, count, ncclType(dtype), c, m_stream);
  });
  m_sent += ringBytesSent(Collective::AllGather, m_rank, m_size, count, dtypeSize(dtype));
}

void NcclCommunicator::broadcast(void* data, size_t count, DType dtype, int root) {
  if (root < 0 || root >= m_size) {
    throw std::invalid_argument("nccl broadcast: root " + std::to_string(root) + " outside [0, " +
                                std::to_string(m_size) + ")");
  }
  enqueue("broadcast", [&](ncclComm_t c) {
    return ncclBroadcast(data, data, count, ncclType(dtype), root, c, m_stream);
  });
  m_sent += ringBytesSent(Collective::Broadcast, m_rank, m_size, count, dtypeSize(dtype), root);
}

void NcclCommunicator::barrier() {
  enqueue("barrier", [&](ncclComm_t c) {
    return ncclAllReduce(m_barrierScratch, m_barrierScratch, 1, ncclFloat32, ncclSum, c, m_stream);
  });
  DeviceGuard guard(m_device);
  for (;;) {
    const cudaError_t status = cudaStreamQuery(m_stream);
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) CUDA_CHECK(status);
    cudaGetLastError();
    if (m_aborted) throw RunAborted();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void NcclCommunicator::abort() {
  m_aborted = true;  // first, so a barrier polling the stream gives up
  std::lock_guard lock(m_mutex);
  if (m_comm) {
    ncclCommAbort(m_comm);
    m_comm = nullptr;
  }
}

std::unique_ptr<NcclCommunicator> NcclCommunicator::split(int color, int key) {
  ncclComm_t child = nullptr;
  enqueue("commSplit", [&](ncclComm_t c) {
    return ncclCommSplit(c, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &child, nullptr);
  });
  if (!child) return nullptr;
  int rank = 0, size = 0;
  NCCL_CHECK(ncclCommUserRank(child, &rank));
  NCCL_CHECK(ncclCommCount(child, &size));
  return std::make_unique<NcclCommunicator>(child, rank, size, m_device);
}

std::vector<std::unique_ptr<NcclCommunicator>> createNcclGroup(const std::vector<int>& devices) {
  std::vector<int> list = devices;
  if (list.empty()) {
    int count = 0;
    CUDA_CHECK(cudaGetDeviceCount(&count));
    for (int d = 0; d < count; ++d) list.push_back(d);
  }
  if (list.empty()) throw std::runtime_error("createNcclGroup: no GPU is visible");
  std::vector<ncclComm_t> comms(list.size(), nullptr);
  NCCL_CHECK(ncclCommInitAll(comms.data(), static_cast<int>(list.size()), list.data()));
  std::vector<std::unique_ptr<NcclCommunicator>> group;
  for (size_t r = 0; r < list.size(); ++r) {
    group.push_back(std::make_unique<NcclCommunicator>(comms[r], static_cast<int>(r),
                                                       static_cast<int>(list.size()), list[r]));
  }
  return group;
}

std::vector<uint8_t> makeNcclUniqueId() {
  ncclUniqueId id;
  NCCL_CHECK(ncclGetUniqueId(&id));
  const auto* bytes = reinterpret_cast<const uint8_t*>(id.internal);
  return {bytes, bytes + sizeof id.internal};
}

std::unique_ptr<NcclCommunicator> joinNcclGroup(const std::vector<uint8_t>& unique_id, int rank, int size,
                                                int device) {
  ncclUniqueId id;
  if (unique_id.size() != sizeof id.internal)
    throw std::invalid_argument("joinNcclGroup: an ncclUniqueId is " + std::to_string(sizeof id.internal) +
                                " bytes, not " + std::to_string(unique_id.size()));
  std::memcpy(id.internal, unique_id.data(), sizeof id.internal);
  DeviceGuard guard(device);
  ncclComm_t comm = nullptr;
  NCCL_CHECK(ncclCommInitRank(&comm, size, id, rank));
  return std::make_unique<NcclCommunicator>(comm, rank, size, device);
}

}  // namespace shardscope::gpu
