// Synthetic regression data: inputs x ~ N(0, 1) and targets y = teacher(x) from
// a fixed random network y = C·tanh(A·x). Sample i of step s is the same on
// every rank count, so P ranks on slices of B see exactly one rank's batch B.
#pragma once

#include <cstdint>
#include <vector>

namespace shardscope {

class TeacherData {
 public:
  TeacherData(int io_dim, uint64_t seed);
  // x, y: (count, io_dim), samples [first, first + count) of the global batch of `step`.
  void batch(int step, int64_t first, int count, float* x, float* y) const;
  int ioDim() const { return m_ioDim; }

 private:
  int m_ioDim;
  uint64_t m_seed;
  std::vector<float> m_a;  // (io, io)
  std::vector<float> m_c;  // (io, io)
};

}  // namespace shardscope
