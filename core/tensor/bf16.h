// bfloat16 storage type: the top 16 bits of an IEEE float. Conversions round to
// nearest even (as PyTorch and CUDA's __float2bfloat16 do); NaN stays NaN.
#pragma once

#include <cstdint>
#include <cstring>

namespace shardscope {

struct bf16 {
  uint16_t bits = 0;
};
static_assert(sizeof(bf16) == 2);

inline float toFloat(bf16 v) {
  const uint32_t u = static_cast<uint32_t>(v.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Round to nearest even; a NaN stays a (quiet) NaN. Written as a select, not
// a branch, so loops over arrays of it vectorise (the CPU rings sum bf16
// through it at every hop).
inline bf16 toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x40u;
  const bool is_nan = static_cast<int32_t>(u & 0x7fffffffu) > 0x7f800000;
  return bf16{static_cast<uint16_t>(is_nan ? quiet_nan : rounded)};
}

}  // namespace shardscope
