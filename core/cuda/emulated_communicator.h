// "cuda-emulated" ranks: P ranks sharing ONE GPU (NCCL refuses two ranks per
// device), so multi-rank strategies run on a single card. Collectives are real
// device work: device-to-device copies and one reduction kernel over all ranks'
// buffers, enqueued by the last rank to arrive on its stream after every rank's
// ready event; the other ranks' streams wait on its done event. bf16 sums are
// taken in fp32 and rounded once (a ring rounds at every hop, so bf16 results can
// differ from NCCL's in the last bit). bytesSent follows the ring formulas.
#pragma once

#include <memory>
#include <vector>

#include "cuda/gpu_communicator.h"

namespace shardscope::gpu {

// size in [1, 64]. Each rank starts on its own non-blocking stream, owned by the group.
std::vector<std::unique_ptr<GpuCommunicator>> createEmulatedGroup(int size, int device);

}  // namespace shardscope::gpu
