#include "comm/meta_communicator.h"

#include <atomic>

namespace shardscope {

namespace {

class MetaCommunicator final : public Communicator {
 public:
  MetaCommunicator(int rank, int size) : m_rank(rank), m_size(size) {}
  int rank() const override { return m_rank; }
  int size() const override { return m_size; }
  std::string backendName() const override { return "meta"; }

  // Ring all-reduce on P chunks: a rank sends every chunk but one in the
  // reduce-scatter half and every chunk but one in the all-gather half.
  void allReduce(void*, size_t count, DType dtype) override {
    if (m_size == 1) return;
    const size_t base = count / m_size, extra = count % m_size;
    auto chunk = [&](int c) { return base + (static_cast<size_t>(c) < extra ? 1 : 0); };
    // Reduce-scatter: rank r sends chunks r, r-1, ..., r-P+2; all-gather: r+1, r, ..., r-P+3.
    size_t sent = 0;
    for (int j = 0; j < m_size - 1; ++j) sent += chunk(((m_rank - j) % m_size + m_size) % m_size);
    for (int j = 0; j < m_size - 1; ++j) sent += chunk(((m_rank + 1 - j) % m_size + m_size) % m_size);
    m_sent += sent * dtypeSize(dtype);
  }
  void reduceScatter(const void*, void*, size_t count, DType dtype) override {
    m_sent += static_cast<uint64_t>(m_size - 1) * count * dtypeSize(dtype);
  }
  void allGather(const void*, void*, size_t count, DType dtype) override {
    m_sent += static_cast<uint64_t>(m_size - 1) * count * dtypeSize(dtype);
  }
  // Chain from the root: every rank but the last in the chain forwards once.
  void broadcast(void*, size_t count, DType dtype, int root) override {
    if (m_size > 1 && m_rank != (root + m_size - 1) % m_size) m_sent += count * dtypeSize(dtype);
  }
  void barrier() override {}
  uint64_t bytesSent() const override { return m_sent.load(); }

 private:
  int m_rank, m_size;
  std::atomic<uint64_t> m_sent{0};
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> createMetaGroup(int size) {
  std::vector<std::unique_ptr<Communicator>> group;
  for (int r = 0; r < size; ++r) group.push_back(std::make_unique<MetaCommunicator>(r, size));
  return group;
}

}  // namespace shardscope
