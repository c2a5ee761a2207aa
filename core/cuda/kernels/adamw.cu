// Fused AdamW on an fp32 master shard: reads the bf16 gradient, updates m, v and
// the master, writes the bf16 weights. Every operation is an explicit round-to-
// nearest intrinsic, so nvcc cannot contract a*b+c into an FMA and the result is
// the CPU's (cpu::adamStep, which is compiled without FMA) bit for bit.
#include <cuda_runtime.h>

#include <cmath>

#include "cuda/cuda_check.h"
#include "cuda/cuda_kernels.h"
#include "cuda/kernels/device_math.cuh"

namespace shardscope::gpu {
namespace {

using namespace detail;

struct AdamScalars {
  float b1, b2, one_minus_b1, one_minus_b2, eps, decay, step_size, inv_bc2_sqrt;
};

__global__ void adamStepKernel(float* master, float* m, float* v, const bf16* grad,
                               bf16* param_out, size_t n, AdamScalars s) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    const float g = load(grad + i);
    // mi = b1 * m + (1 - b1) * g;   vi = b2 * v + (1 - b2) * g * g
    const float mi = __fadd_rn(__fmul_rn(s.b1, m[i]), __fmul_rn(s.one_minus_b1, g));
    const float vi =
        __fadd_rn(__fmul_rn(s.b2, v[i]), __fmul_rn(__fmul_rn(s.one_minus_b2, g), g));
    // p = master * decay - step_size * mi / (sqrt(vi) * inv_bc2_sqrt + eps)
    const float denom = __fadd_rn(__fmul_rn(__fsqrt_rn(vi), s.inv_bc2_sqrt), s.eps);
    const float p =
        __fsub_rn(__fmul_rn(master[i], s.decay), __fdiv_rn(__fmul_rn(s.step_size, mi), denom));
    m[i] = mi;
    v[i] = vi;
    master[i] = p;
    if (param_out) store(param_out + i, p);
  }
}

}  // namespace

void adamStep(float* master, float* m, float* v, const bf16* grad, bf16* param_out, size_t n,
              const cpu::AdamConfig& config, int step, StreamHandle stream) {
  if (step < 1) {
    throw std::invalid_argument("gpu::adamStep: step = " + std::to_string(step) +
                                " must be >= 1 (bias correction divides by 1 - beta^step)");
  }
  if (n == 0) return;
  // The scalars exactly as cpu::adamStep computes them (double, then float).
  const double bc1 = 1.0 - std::pow(static_cast<double>(config.beta1), step);
  const double bc2 = 1.0 - std::pow(static_cast<double>(config.beta2), step);
  AdamScalars s{};
  s.b1 = config.beta1;
  s.b2 = config.beta2;
  s.one_minus_b1 = 1.0f - config.beta1;
  s.one_minus_b2 = 1.0f - config.beta2;
  s.eps = config.eps;
  s.decay = static_cast<float>(1.0 - static_cast<double>(config.lr) * config.weight_decay);
  s.step_size = static_cast<float>(config.lr / bc1);
  s.inv_bc2_sqrt = static_cast<float>(1.0 / std::sqrt(bc2));
  adamStepKernel<<<blocksFor(n), kThreads, 0, stream>>>(master, m, v, grad, param_out, n, s);
  CUDA_CHECK_LAUNCH();
}

}  // namespace shardscope::gpu
