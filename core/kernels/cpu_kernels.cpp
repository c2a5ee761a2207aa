// CPU reference kernels (see cpu_kernels.h). Inner loops are branch-free so that
// -O2/-O3 auto-vectorizes them; argument checks happen once, before the loops.
// Reductions that feed a reported number (the loss) accumulate in double.
#include "kernels/cpu_kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>

// Exported by OpenBLAS's threaded builds (its fork handler), not in cblas.h;
// weak, so a build against the serial OpenBLAS (no pool, no such symbol) links.
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

namespace shardscope::cpu {

namespace {

void requireNonNegative(int value, const char* name, const char* kernel) {
  if (value < 0) {
    throw std::invalid_argument(std::string(kernel) + ": " + name + " = " +
                                std::to_string(value) + " must be >= 0");
  }
}

}  // namespace

void initBlasSingleThreaded() {
  // Debian's OpenBLAS (the pthread build) starts a pool of nproc - 1 threads
  // when it is loaded, and each spins on sched_yield for about 0.1 s before
  // it sleeps: a core taken from the start of every command (analyze of a
  // 200 MB trace on two cores: 0.31 s with the pool, 0.21 s without). Every
  // GEMM here runs on its rank's own thread, so the pool is stopped once,
  // after the one-thread setting; a later openblas_set_num_threads would
  // start it again (OpenBLAS re-creates a stopped pool on that call), hence once.
  static std::once_flag once;
  std::call_once(once, [] {
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_) blas_thread_shutdown_();
  });
}

void bf16ToF32(const bf16* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = toFloat(in[i]);
}

void f32ToBf16(const float* in, bf16* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = toBf16(in[i]);
}

void gemm(bool transA, bool transB, int M, int N, int K, float alpha, const float* A,
          const float* B, float beta, float* C) {
  requireNonNegative(M, "M", "gemm");
  requireNonNegative(N, "N", "gemm");
  requireNonNegative(K, "K", "gemm");
  if (M == 0 || N == 0) return;
  // Row-major leading dimensions are the stored row lengths; BLAS rejects 0, and
  // with K == 0 the operand is never read, so 1 is as good as any.
  const int lda = std::max(1, transA ? M : K);
  const int ldb = std::max(1, transB ? K : N);
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, N);
}

void addBias(float* y, const float* bias, int rows, int cols) {
  for (int r = 0; r < rows; ++r) {
    float* row = y + static_cast<size_t>(r) * cols;
    for (int c = 0; c < cols; ++c) row[c] += bias[c];
  }
}

void biasGrad(const float* dy, float* dbias, int rows, int cols) {
  std::fill(dbias, dbias + std::max(cols, 0), 0.0f);
  for (int r = 0; r < rows; ++r) {
    const float* row = dy + static_cast<size_t>(r) * cols;
    for (int c = 0; c < cols; ++c) dbias[c] += row[c];
  }
}

void layerNormForward(const float* x, const float* gamma, const float* beta, float* y,
                      float* mean, float* rstd, int rows, int cols, float eps) {
  requireNonNegative(rows, "rows", "layerNormForward");
  if (cols <= 0) {
    throw std::invalid_argument("layerNormForward: cols = " + std::to_string(cols) +
                                " must be > 0");
  }
  const float inv_cols = 1.0f / static_cast<float>(cols);
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<size_t>(r) * cols;
    float* yr = y + static_cast<size_t>(r) * cols;
    // Two passes (mean, then centred variance) avoid the cancellation of E[x^2]-E[x]^2.
    float sum = 0.0f;
    for (int c = 0; c < cols; ++c) sum += xr[c];
    const float mu = sum * inv_cols;
    float sq = 0.0f;
    for (int c = 0; c < cols; ++c) {
      const float d = xr[c] - mu;
      sq += d * d;
    }
    const float rs = 1.0f / std::sqrt(sq * inv_cols + eps);  // biased variance, as PyTorch
    for (int c = 0; c < cols; ++c) yr[c] = (xr[c] - mu) * rs * gamma[c] + beta[c];
    mean[r] = mu;
    rstd[r] = rs;
  }
}

void layerNormBackward(const float* dy, const float* x, const float* gamma, const float* mean,
                       const float* rstd, float* dx, float* dgamma, float* dbeta, int rows,
                       int cols) {
  requireNonNegative(rows, "rows", "layerNormBackward");
  if (cols <= 0) {
    throw std::invalid_argument("layerNormBackward: cols = " + std::to_string(cols) +
                                " must be > 0");
  }
  std::fill(dgamma, dgamma + cols, 0.0f);
  std::fill(dbeta, dbeta + cols, 0.0f);
  const float inv_cols = 1.0f / static_cast<float>(cols);
  for (int r = 0; r < rows; ++r) {
    const float* dyr = dy + static_cast<size_t>(r) * cols;
    const float* xr = x + static_cast<size_t>(r) * cols;
    float* dxr = dx + static_cast<size_t>(r) * cols;
    const float mu = mean[r];
    const float rs = rstd[r];
    // dx = rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)), dnorm = gamma * dy.
    float dnorm_sum = 0.0f;
    float dnorm_norm_sum = 0.0f;
    for (int c = 0; c < cols; ++c) {
      const float norm = (xr[c] - mu) * rs;
      const float dnorm = gamma[c] * dyr[c];
      dnorm_sum += dnorm;
      dnorm_norm_sum += dnorm * norm;
      dgamma[c] += dyr[c] * norm;
      dbeta[c] += dyr[c];
    }
    const float dnorm_mean = dnorm_sum * inv_cols;
    const float dnorm_norm_mean = dnorm_norm_sum * inv_cols;
    for (int c = 0; c < cols; ++c) {
      const float norm = (xr[c] - mu) * rs;
      const float dnorm = gamma[c] * dyr[c];
      dxr[c] = (dnorm - dnorm_mean - norm * dnorm_norm_mean) * rs;
    }
  }
}

namespace {
constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;
}  // namespace

void geluForward(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float xi = x[i];
    const float u = kGeluScale * (xi + kGeluCubic * xi * xi * xi);
    y[i] = 0.5f * xi * (1.0f + std::tanh(u));
  }
}

void geluBackward(const float* x, const float* dy, float* dx, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float xi = x[i];
    const float u = kGeluScale * (xi + kGeluCubic * xi * xi * xi);
    const float t = std::tanh(u);
    const float du = kGeluScale * (1.0f + 3.0f * kGeluCubic * xi * xi);
    const float grad = 0.5f * (1.0f + t) + 0.5f * xi * (1.0f - t * t) * du;
    dx[i] = grad * dy[i];
  }
}

double mseLoss(const float* pred, const float* target, float* dpred, int rows, int cols,
               int total_rows) {
  requireNonNegative(rows, "rows", "mseLoss");
  requireNonNegative(cols, "cols", "mseLoss");
  if (total_rows <= 0 || total_rows < rows) {
    throw std::invalid_argument("mseLoss: total_rows = " + std::to_string(total_rows) +
                                " must be > 0 and >= rows = " + std::to_string(rows) +
                                " (it is the full batch this slice belongs to)");
  }
  if (cols == 0) return 0.0;
  const size_t n = static_cast<size_t>(rows) * cols;
  const double denom = static_cast<double>(total_rows) * cols;
  const float grad_scale = static_cast<float>(2.0 / denom);
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const float d = pred[i] - target[i];
    sum += static_cast<double>(d) * d;
    dpred[i] = grad_scale * d;
  }
  return sum / denom;
}

namespace {

inline float gradValue(float g) { return g; }
inline float gradValue(bf16 g) { return toFloat(g); }

template <class Grad>
void adamStepFrom(float* master, float* m, float* v, const Grad* grad, bf16* param_out, size_t n,
                  const AdamConfig& config, int step) {
  if (step < 1) {
    throw std::invalid_argument("adamStep: step = " + std::to_string(step) +
                                " must be >= 1 (bias correction divides by 1 - beta^step)");
  }
  // Scalars follow torch.optim.AdamW (single-tensor path): computed in double, then
  // p *= 1 - lr*wd; p -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps).
  const double bc1 = 1.0 - std::pow(static_cast<double>(config.beta1), step);
  const double bc2 = 1.0 - std::pow(static_cast<double>(config.beta2), step);
  const float decay = static_cast<float>(1.0 - static_cast<double>(config.lr) * config.weight_decay);
  const float step_size = static_cast<float>(config.lr / bc1);
  const float inv_bc2_sqrt = static_cast<float>(1.0 / std::sqrt(bc2));
  const float b1 = config.beta1;
  const float b2 = config.beta2;
  const float eps = config.eps;
  for (size_t i = 0; i < n; ++i) {
    const float g = gradValue(grad[i]);
    const float mi = b1 * m[i] + (1.0f - b1) * g;
    const float vi = b2 * v[i] + (1.0f - b2) * g * g;
    const float p = master[i] * decay - step_size * mi / (std::sqrt(vi) * inv_bc2_sqrt + eps);
    m[i] = mi;
    v[i] = vi;
    master[i] = p;
  }
  if (param_out) f32ToBf16(master, param_out, n);
}

}  // namespace

void adamStep(float* master, float* m, float* v, const bf16* grad, bf16* param_out, size_t n,
              const AdamConfig& config, int step) {
  adamStepFrom(master, m, v, grad, param_out, n, config, step);
}

void adamStep(float* master, float* m, float* v, const float* grad, bf16* param_out, size_t n,
              const AdamConfig& config, int step) {
  adamStepFrom(master, m, v, grad, param_out, n, config, step);
}

namespace {

// The CPU rings sum every hop through addInPlace and addBf16InPlace: each is
// built for AVX2 too and picked at the first call where the CPU has it (a
// plain function pointer choice, not an ifunc, which sanitizers cannot run).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SHARDSCOPE_AVX2 __attribute__((target("avx2")))
bool haveAvx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
#else
#define SHARDSCOPE_AVX2
bool haveAvx2() { return false; }
#endif

template <typename T>
void addLoop(T* y, const T* x, size_t n) {
  if constexpr (std::is_same_v<T, float>) {
    for (size_t i = 0; i < n; ++i) y[i] += x[i];
  } else {
    for (size_t i = 0; i < n; ++i) y[i] = toBf16(toFloat(y[i]) + toFloat(x[i]));
  }
}
SHARDSCOPE_AVX2 void addFloatsAvx2(float* y, const float* x, size_t n) { addLoop(y, x, n); }
SHARDSCOPE_AVX2 void addBf16Avx2(bf16* y, const bf16* x, size_t n) { addLoop(y, x, n); }

}  // namespace

void addInPlace(float* y, const float* x, size_t n) {
  if (haveAvx2()) addFloatsAvx2(y, x, n);
  else addLoop(y, x, n);
}

void addBf16InPlace(bf16* y, const bf16* x, size_t n) {
  if (haveAvx2()) addBf16Avx2(y, x, n);
  else addLoop(y, x, n);
}

void scaleBf16InPlace(bf16* y, float s, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = toBf16(toFloat(y[i]) * s);
}

void scaleInPlace(float* y, float s, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] *= s;
}

void bf16ToF32Scaled(const bf16* x, float s, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = toFloat(x[i]) * s;
}

void addBf16ToF32(float* y, const bf16* x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += toFloat(x[i]);
}

}  // namespace shardscope::cpu
