// GlooCommunicator's rings between thread ranks, run straight on each other's
// memory (local_ring_board.h). Hop for hop the rings of gloo_communicator.cpp:
// at step s rank q takes the chunk its left neighbour sends there (out of the
// neighbour's buffer, not out of a message) and sums it into its own or copies
// it, with the same chunks and operand order, so results agree to the bit with
// the rings over TCP, and each hop's bytes land on the sender's counter.
#include <algorithm>
#include <cstring>

#include "comm/gloo_communicator.h"
#include "comm/local_transport.h"
#include "comm/ring_chunks.h"

namespace shardscope {
namespace {

using Call = LocalRingBoard::Call;

// dst = a + b is computed a block at a time (copy, then add while the block
// is in L1): the TCP ring's "land the partial, add the own chunk" in one pass
// over memory.
constexpr size_t kLocalSumBlockBytes = size_t{16} << 10;

void sumOf(char* dst, const char* a, const char* b, size_t n, DType dtype) {
  const size_t e = dtypeSize(dtype);
  const size_t block = kLocalSumBlockBytes / e;
  for (size_t i = 0; i < n; i += block) {
    const size_t m = std::min(block, n - i);
    std::memcpy(dst + i * e, a + i * e, m * e);
    ring::reduceInto(dst + i * e, b + i * e, m, dtype);
  }
}

// All-reduce, 2(P-1) steps: at step s rank q takes chunk (q - s - 1), summed
// into its own during the first P - 1 steps, copied after. A chunk is written
// again (s >= P - 1) only once the right neighbour has read its last value
// (at its step s - P + 1).
void allReduceHop(const Call& left, const Call& mine, int q, int s, int P) {
  const size_t e = dtypeSize(mine.dtype);
  const ring::ElementRange c = ring::chunkRange(mine.count, P, ring::wrap(q - s - 1, P));
  const char* sent = left.in + c.offset * e;
  if (s < P - 1) ring::reduceInto(mine.out + c.offset * e, sent, c.length, mine.dtype);
  else std::memcpy(mine.out + c.offset * e, sent, c.length * e);
  left.sent->fetch_add(c.length * e, std::memory_order_relaxed);
}
int allReduceRightNeeds(int s, int P) { return s >= P - 1 ? s - P + 2 : 0; }

// Reduce-scatter, P - 1 steps: at step s rank q sums its left neighbour's
// partial of chunk (q - s - 2) with its own input chunk, into a work buffer by
// step parity (the right neighbour reads it at its next step) and at the last
// step into output. A work buffer is rewritten only after the right neighbour
// is past the step that read it.
void reduceScatterHop(const Call& left, const Call& mine, int q, int s, int P) {
  const size_t chunkBytes = mine.count * dtypeSize(mine.dtype);
  const size_t chunk = static_cast<size_t>(ring::wrap(q - s - 2, P));
  const char* partial =
      s == 0 ? left.in + chunk * chunkBytes : left.work + static_cast<size_t>((s - 1) % 2) * chunkBytes;
  char* dst = s == P - 2 ? mine.out : mine.work + static_cast<size_t>(s % 2) * chunkBytes;
  sumOf(dst, partial, mine.in + chunk * chunkBytes, mine.count, mine.dtype);
  left.sent->fetch_add(chunkBytes, std::memory_order_relaxed);
}
int reduceScatterRightNeeds(int s, int P) { return s >= 2 && s < P - 2 ? s : 0; }

// All-gather, P - 1 steps: at step s rank q copies chunk (q - s - 1) from its
// left neighbour: the neighbour's own input at step 0, its output after.
// Output chunks are written once, so only the end waits for the right one.
void allGatherHop(const Call& left, const Call& mine, int q, int s, int P) {
  const size_t chunkBytes = mine.count * dtypeSize(mine.dtype);
  const size_t chunk = static_cast<size_t>(ring::wrap(q - s - 1, P));
  std::memcpy(mine.out + chunk * chunkBytes, s == 0 ? left.in : left.out + chunk * chunkBytes, chunkBytes);
  left.sent->fetch_add(chunkBytes, std::memory_order_relaxed);
}
int noRightNeeds(int, int) { return 0; }

}  // namespace

void GlooCommunicator::localAllReduce(char* data, size_t count, DType dtype) {
  Call call{nextSlotBase() >> 32, "all-reduce", dtype, count, data, data, nullptr, &m_bytesSent};
  call.steps = 2 * (m_size - 1);
  call.hop = allReduceHop;
  call.right_needs = allReduceRightNeeds;
  m_local->ringBoard().run(m_rank, call, m_timeout);
}

void GlooCommunicator::localReduceScatter(const char* input, char* output, size_t count, DType dtype) {
  const size_t chunkBytes = count * dtypeSize(dtype);
  // Output inside input: the last step lands in a staging copy, copied out
  // once nobody reads this rank's input any more.
  const auto in = reinterpret_cast<uintptr_t>(input);
  const auto outp = reinterpret_cast<uintptr_t>(output);
  const bool aliased = outp < in + static_cast<size_t>(m_size) * chunkBytes && in < outp + chunkBytes;
  const size_t workBytes = static_cast<size_t>(std::min(2, m_size - 2)) * chunkBytes;
  char* work = scratch(workBytes + (aliased ? chunkBytes : 0));
  char* out = aliased ? work + workBytes : output;
  Call call{nextSlotBase() >> 32, "reduce-scatter", dtype, count, input, out, work, &m_bytesSent};
  call.steps = m_size - 1;
  call.hop = reduceScatterHop;
  call.right_needs = reduceScatterRightNeeds;
  m_local->ringBoard().run(m_rank, call, m_timeout);
  if (aliased) std::memcpy(output, out, chunkBytes);
}

void GlooCommunicator::localAllGather(const char* input, char* output, size_t count, DType dtype) {
  const size_t chunkBytes = count * dtypeSize(dtype);
  char* mine = output + static_cast<size_t>(m_rank) * chunkBytes;
  const char* own = input;
  // An input that overlaps output elsewhere than this rank's chunk would be
  // overwritten while the right neighbour reads it: it is read from a copy.
  const auto in = reinterpret_cast<uintptr_t>(input);
  const auto outp = reinterpret_cast<uintptr_t>(output);
  if (input != mine && in < outp + static_cast<size_t>(m_size) * chunkBytes && outp < in + chunkBytes) {
    char* copy = scratch(chunkBytes);
    std::memcpy(copy, input, chunkBytes);
    own = copy;
  }
  // This rank's own chunk of output is read by nobody (its right neighbour
  // takes it from input): copied before the ring starts.
  if (own != mine) std::memcpy(mine, own, chunkBytes);
  Call call{nextSlotBase() >> 32, "all-gather", dtype, count, own, output, nullptr, &m_bytesSent};
  call.steps = m_size - 1;
  call.hop = allGatherHop;
  call.right_needs = noRightNeeds;
  m_local->ringBoard().run(m_rank, call, m_timeout);
}

}  // namespace shardscope
