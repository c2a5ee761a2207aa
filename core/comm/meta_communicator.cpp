#include "comm/meta_communicator.h"

#include <atomic>

#include "common/collective.h"

namespace shardscope {

namespace {

class MetaCommunicator final : public Communicator {
 public:
  MetaCommunicator(int rank, int size) : m_rank(rank), m_size(size) {}
  int rank() const override { return m_rank; }
  int size() const override { return m_size; }
  std::string backendName() const override { return "meta"; }

  // Bytes from the ring formulas (common/collective.h), as Gloo sends them.
  void allReduce(void*, size_t count, DType dtype) override { add(Collective::AllReduce, count, dtype); }
  void reduceScatter(const void*, void*, size_t count, DType dtype) override {
    add(Collective::ReduceScatter, count, dtype);
  }
  void allGather(const void*, void*, size_t count, DType dtype) override { add(Collective::AllGather, count, dtype); }
  void broadcast(void*, size_t count, DType dtype, int root) override { add(Collective::Broadcast, count, dtype, root); }
  void barrier() override {}
  uint64_t bytesSent() const override { return m_sent.load(); }

 private:
  void add(Collective c, size_t count, DType dtype, int root = 0) {
    m_sent += ringBytesSent(c, m_rank, m_size, count, dtypeSize(dtype), root);
  }
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
