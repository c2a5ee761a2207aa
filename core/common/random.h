// Counter-based random numbers: value i of stream s under seed k is a pure
// function of (k, s, i), so every rank draws the same init and each rank can
// generate exactly its slice of the global batch, independent of rank count.
#pragma once

#include <cmath>
#include <cstdint>

namespace shardscope {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in (0, 1).
inline double uniform01(uint64_t seed, uint64_t stream, uint64_t index) {
  const uint64_t h = splitmix64(splitmix64(seed ^ splitmix64(stream)) + index);
  return (static_cast<double>(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

// Standard normal (Box-Muller on two uniforms of the same counter).
inline float normal(uint64_t seed, uint64_t stream, uint64_t index) {
  const double u1 = uniform01(seed, stream, 2 * index);
  const double u2 = uniform01(seed, stream, 2 * index + 1);
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

}  // namespace shardscope
