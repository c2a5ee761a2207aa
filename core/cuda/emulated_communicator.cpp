// The CUDA executor of the emulated group. Events are reused across collectives:
// a rank re-records its ready event only after its previous collective returned,
// and the done event only on a launch, which needs every rank to have joined the
// previous one (EmulatedGroup's generations), so no wait sees a later record.
#include "cuda/emulated_communicator.h"

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "common/errors.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_stream.h"
#include "cuda/emulated_group.h"
#include "cuda/kernels/internal.h"

namespace shardscope::gpu {
namespace {

class CudaCollectiveExecutor final : public CollectiveExecutor {
 public:
  CudaCollectiveExecutor(int size, int device) : m_device(device), m_done(CudaEvent::Timing::Off, device) {
    for (int r = 0; r < size; ++r) {
      m_streams.push_back(std::make_unique<CudaStream>(device, "emulated comm " + std::to_string(r)));
      m_ready.emplace_back(CudaEvent::Timing::Off, device);
    }
  }

  std::vector<StreamHandle> streams() const {
    std::vector<StreamHandle> handles;
    for (const auto& s : m_streams) handles.push_back(s->handle());
    return handles;
  }

  void markReady(int rank, const CollectivePost& post) override {
    m_ready[static_cast<size_t>(rank)].record(post.stream);
  }

  void launch(const std::vector<CollectivePost>& posts, int last) override {
    DeviceGuard guard(m_device);
    const CollectivePost& mine = posts[static_cast<size_t>(last)];
    StreamHandle s = mine.stream;
    const int P = static_cast<int>(posts.size());
    for (int q = 0; q < P; ++q) {
      if (q != last) CUDA_CHECK(cudaStreamWaitEvent(s, m_ready[static_cast<size_t>(q)].handle(), 0));
    }
    const size_t e = dtypeSize(mine.dtype);
    const size_t bytes = mine.count * e;
    std::vector<const void*> in(static_cast<size_t>(P));
    std::vector<void*> out(static_cast<size_t>(P));
    for (int q = 0; q < P; ++q) {
      in[static_cast<size_t>(q)] = posts[static_cast<size_t>(q)].input;
      out[static_cast<size_t>(q)] = posts[static_cast<size_t>(q)].output;
    }
    switch (mine.op) {
      case Collective::AllReduce:
        detail::reduceAcrossRanks(detail::ReduceLayout::AllReduce, in.data(), out.data(), P,
                                  mine.count, mine.dtype, s);
        break;
      case Collective::ReduceScatter:
        detail::reduceAcrossRanks(detail::ReduceLayout::ReduceScatter, in.data(), out.data(), P,
                                  mine.count, mine.dtype, s);
        break;
      case Collective::AllGather:
        // Rank r's input lands in chunk r of every output; an in-place rank's own
        // chunk already holds it. Copies only read inputs and write output chunks.
        for (int dst = 0; dst < P && bytes > 0; ++dst) {
          char* base = static_cast<char*>(out[static_cast<size_t>(dst)]);
          for (int src = 0; src < P; ++src) {
            char* chunk = base + static_cast<size_t>(src) * bytes;
            if (chunk == in[static_cast<size_t>(src)]) continue;
            CUDA_CHECK(cudaMemcpyAsync(chunk, in[static_cast<size_t>(src)], bytes,
                                       cudaMemcpyDeviceToDevice, s));
          }
        }
        break;
      case Collective::Broadcast: {
        const void* root = in[static_cast<size_t>(mine.root)];
        for (int dst = 0; dst < P && bytes > 0; ++dst) {
          if (out[static_cast<size_t>(dst)] == root) continue;
          CUDA_CHECK(cudaMemcpyAsync(out[static_cast<size_t>(dst)], root, bytes,
                                     cudaMemcpyDeviceToDevice, s));
        }
        break;
      }
      case Collective::Barrier:
        break;
      default:
        throw std::logic_error("cuda-emulated " + std::string(collectiveName(mine.op)) + ": not a GpuCommunicator call");
    }
    m_done.record(s);
  }

  void join(int rank, const CollectivePost& post, int last) override {
    if (rank == last) return;
    DeviceGuard guard(m_device);
    CUDA_CHECK(cudaStreamWaitEvent(post.stream, m_done.handle(), 0));
  }

 private:
  int m_device;
  std::vector<std::unique_ptr<CudaStream>> m_streams;  // the ranks' default streams
  std::vector<CudaEvent> m_ready;
  CudaEvent m_done;
};

}  // namespace

std::vector<std::unique_ptr<GpuCommunicator>> createEmulatedGroup(int size, int device) {
  if (size < 1 || size > detail::kMaxEmulatedRanks) {
    throw ConfigError("cuda-emulated: " + std::to_string(size) + " ranks on GPU " +
                      std::to_string(device) + "; the emulation supports 1 to " +
                      std::to_string(detail::kMaxEmulatedRanks) +
                      " ranks per GPU (use more GPUs with the nccl backend beyond that)");
  }
  auto executor = std::make_unique<CudaCollectiveExecutor>(size, device);
  const std::vector<StreamHandle> streams = executor->streams();
  return createEmulatedGroup(size, std::move(executor), device, streams);
}

}  // namespace shardscope::gpu
