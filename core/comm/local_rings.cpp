// GlooCommunicator's rings between thread ranks, run straight on each other's
// memory (local_ring_board.h). Step for step the rings of gloo_communicator.cpp:
// at step s a rank takes the chunk its left neighbour sends there (out of the
// neighbour's buffer, not out of a message) and sums it into its own or copies
// it, with the same chunks and operand order, so results agree to the bit with
// the rings over TCP and every hop's bytes land on the sender's counter.
#include <algorithm>
#include <cstring>

#include "comm/gloo_communicator.h"
#include "comm/local_transport.h"
#include "comm/ring_chunks.h"

namespace shardscope {
namespace {

// dst = a + b is computed a block at a time (copy, then add while the block
// is in L1): the TCP ring's "land the partial, add the own chunk", in one pass
// over memory.
constexpr size_t kLocalSumBlockBytes = size_t{16} << 10;

const char* dtypeText(DType t) { return t == DType::F32 ? "f32" : "bf16"; }

void sumOf(char* dst, const char* a, const char* b, size_t n, DType dtype) {
  const size_t e = dtypeSize(dtype);
  const size_t block = kLocalSumBlockBytes / e;
  for (size_t i = 0; i < n; i += block) {
    const size_t m = std::min(block, n - i);
    std::memcpy(dst + i * e, a + i * e, m * e);
    ring::reduceInto(dst + i * e, b + i * e, m, dtype);
  }
}

}  // namespace

// 2(P-1) steps; at step s a rank takes chunk (rank - s - 1) from its left
// neighbour: summed into its own during the first P - 1 steps, copied after.
// It writes a chunk again (step s >= P - 1) only once its right neighbour has
// read the chunk's last value (the right one's step s - P + 1).
void GlooCommunicator::localAllReduce(char* data, size_t count, DType dtype) {
  const int P = m_size, r = m_rank, left = ring::wrap(r - 1, P), right = ring::wrap(r + 1, P);
  const size_t e = dtypeSize(dtype);
  const int steps = 2 * (P - 1);
  LocalRingBoard& board = m_local->ringBoard();
  board.begin(r, {nextSlotBase() >> 32, "all-reduce", dtypeText(dtype), count, data, data, nullptr, &m_bytesSent});
  for (int s = 0; s < steps; ++s) {
    const uint64_t right_done = s >= P - 1 ? static_cast<uint64_t>(s - P + 2) : 0;
    const LocalRingBoard::Call* theirs = board.await(r, left, static_cast<uint64_t>(s), right, right_done, m_timeout);
    const ring::ElementRange c = ring::chunkRange(count, P, ring::wrap(r - s - 1, P));
    char* mine = data + c.offset * e;
    const char* sent = theirs->in + c.offset * e;
    if (s < P - 1) ring::reduceInto(mine, sent, c.length, dtype);
    else std::memcpy(mine, sent, c.length * e);
    theirs->sent->fetch_add(c.length * e, std::memory_order_relaxed);
    board.finishStep(r);
  }
  board.await(r, -1, 0, right, static_cast<uint64_t>(steps), m_timeout);
}

// P - 1 steps; at step s a rank sums its left neighbour's partial of chunk
// (rank - s - 2) with its own input chunk, into a work buffer by step parity
// (the right neighbour reads it at its next step) and at the last step into
// output. A work buffer is rewritten only after the right neighbour is past
// the step that read it.
void GlooCommunicator::localReduceScatter(const char* input, char* output, size_t count, DType dtype) {
  const int P = m_size, r = m_rank, left = ring::wrap(r - 1, P), right = ring::wrap(r + 1, P);
  const size_t e = dtypeSize(dtype);
  const size_t chunkBytes = count * e;
  const int steps = P - 1;
  // Output inside input: the last step lands in a staging copy, copied out
  // once nobody reads this rank's input any more.
  const auto in = reinterpret_cast<uintptr_t>(input);
  const auto outp = reinterpret_cast<uintptr_t>(output);
  const bool aliased = outp < in + static_cast<size_t>(P) * chunkBytes && in < outp + chunkBytes;
  const size_t workBytes = static_cast<size_t>(std::min(2, P - 2)) * chunkBytes;
  char* work = scratch(workBytes + (aliased ? chunkBytes : 0));
  char* out = aliased ? work + workBytes : output;
  LocalRingBoard& board = m_local->ringBoard();
  board.begin(r, {nextSlotBase() >> 32, "reduce-scatter", dtypeText(dtype), count, input, out, work, &m_bytesSent});
  for (int s = 0; s < steps; ++s) {
    const bool last = s == steps - 1;
    const uint64_t right_done = (s >= 2 && !last) ? static_cast<uint64_t>(s) : 0;
    const LocalRingBoard::Call* theirs = board.await(r, left, static_cast<uint64_t>(s), right, right_done, m_timeout);
    const size_t chunk = static_cast<size_t>(ring::wrap(r - s - 2, P));
    const char* partial =
        s == 0 ? theirs->in + chunk * chunkBytes : theirs->work + static_cast<size_t>((s - 1) % 2) * chunkBytes;
    char* dst = last ? out : work + static_cast<size_t>(s % 2) * chunkBytes;
    sumOf(dst, partial, input + chunk * chunkBytes, count, dtype);
    theirs->sent->fetch_add(chunkBytes, std::memory_order_relaxed);
    board.finishStep(r);
  }
  board.await(r, -1, 0, right, static_cast<uint64_t>(steps), m_timeout);
  if (aliased) std::memcpy(output, out, chunkBytes);
}

// P - 1 steps; at step s a rank copies chunk (rank - s - 1) from its left
// neighbour: the neighbour's own input at step 0, its output after. Output
// chunks are written once, so only the end waits for the right neighbour.
void GlooCommunicator::localAllGather(const char* input, char* output, size_t count, DType dtype) {
  const int P = m_size, r = m_rank, left = ring::wrap(r - 1, P), right = ring::wrap(r + 1, P);
  const size_t e = dtypeSize(dtype);
  const size_t chunkBytes = count * e;
  const int steps = P - 1;
  char* mine = output + static_cast<size_t>(r) * chunkBytes;
  const char* own = input;
  // An input that overlaps output elsewhere than this rank's chunk would be
  // overwritten while the right neighbour reads it: it is read from a copy.
  const auto in = reinterpret_cast<uintptr_t>(input);
  const auto outp = reinterpret_cast<uintptr_t>(output);
  if (input != mine && in < outp + static_cast<size_t>(P) * chunkBytes && outp < in + chunkBytes) {
    char* copy = scratch(chunkBytes);
    std::memcpy(copy, input, chunkBytes);
    own = copy;
  }
  LocalRingBoard& board = m_local->ringBoard();
  board.begin(r, {nextSlotBase() >> 32, "all-gather", dtypeText(dtype), count, own, output, nullptr, &m_bytesSent});
  if (own != mine) std::memcpy(mine, own, chunkBytes);
  for (int s = 0; s < steps; ++s) {
    const LocalRingBoard::Call* theirs = board.await(r, left, static_cast<uint64_t>(s), right, 0, m_timeout);
    const size_t chunk = static_cast<size_t>(ring::wrap(r - s - 1, P));
    const char* sent = s == 0 ? theirs->in : theirs->out + chunk * chunkBytes;
    std::memcpy(output + chunk * chunkBytes, sent, chunkBytes);
    theirs->sent->fetch_add(chunkBytes, std::memory_order_relaxed);
    board.finishStep(r);
  }
  board.await(r, -1, 0, right, static_cast<uint64_t>(steps), m_timeout);
}

}  // namespace shardscope
