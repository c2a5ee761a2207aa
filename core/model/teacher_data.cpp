#include "model/teacher_data.h"

#include <cmath>

#include "common/random.h"

namespace shardscope {

namespace {
constexpr uint64_t kTeacherA = 0x7ea1;
constexpr uint64_t kTeacherC = 0x7ea2;
constexpr uint64_t kInputs = 0x1a9u;
}  // namespace

TeacherData::TeacherData(int io_dim, uint64_t seed) : m_ioDim(io_dim), m_seed(seed) {
  const size_t n = static_cast<size_t>(io_dim) * io_dim;
  m_a.resize(n);
  m_c.resize(n);
  const float scale = 1.5f / std::sqrt(static_cast<float>(io_dim));
  for (size_t i = 0; i < n; ++i) {
    m_a[i] = scale * normal(seed, kTeacherA, i);
    m_c[i] = scale * normal(seed, kTeacherC, i);
  }
}

void TeacherData::batch(int step, int64_t first, int count, float* x, float* y) const {
  const int n = m_ioDim;
  std::vector<float> h(n);
  for (int s = 0; s < count; ++s) {
    const uint64_t sample = static_cast<uint64_t>(first + s);
    float* xs = x + static_cast<size_t>(s) * n;
    float* ys = y + static_cast<size_t>(s) * n;
    const uint64_t stream = kInputs ^ (static_cast<uint64_t>(step) << 32);
    for (int i = 0; i < n; ++i) xs[i] = normal(m_seed, stream, sample * n + i);
    for (int r = 0; r < n; ++r) {
      double acc = 0;
      for (int i = 0; i < n; ++i) acc += static_cast<double>(m_a[r * n + i]) * xs[i];
      h[r] = static_cast<float>(std::tanh(acc));
    }
    for (int r = 0; r < n; ++r) {
      double acc = 0;
      for (int i = 0; i < n; ++i) acc += static_cast<double>(m_c[r * n + i]) * h[i];
      ys[r] = static_cast<float>(acc);
    }
  }
}

}  // namespace shardscope
