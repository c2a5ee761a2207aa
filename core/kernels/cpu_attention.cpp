// GPT kernels (see cpu_attention.h). Heads are strided views into qkv (row
// stride 3C) and out (row stride C), so the per-(sample, head) GEMMs call BLAS
// with explicit leading dimensions instead of copying heads out and back.
#include "kernels/cpu_attention.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace shardscope::cpu {

namespace {

void requirePositive(int value, const char* name, const char* kernel) {
  if (value <= 0) {
    throw std::invalid_argument(std::string(kernel) + ": " + name + " = " + std::to_string(value) +
                                " must be > 0");
  }
}

// C(M,N) = alpha * op(A) * op(B) + beta * C on row-major views with leading dims.
void gemmStrided(bool transA, bool transB, int M, int N, int K, float alpha, const float* A, int lda,
                 const float* B, int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
              M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace

void causalSoftmaxForward(const float* x, float* probs, int rows, int cols, float scale) {
  requirePositive(rows, "rows", "causalSoftmaxForward");
  if (rows > cols) {
    throw std::invalid_argument("causalSoftmaxForward: rows = " + std::to_string(rows) +
                                " must be <= cols = " + std::to_string(cols) +
                                " (query i attends to keys 0..i)");
  }
  for (int i = 0; i < rows; ++i) {
    const float* xr = x + static_cast<size_t>(i) * cols;
    float* pr = probs + static_cast<size_t>(i) * cols;
    float mx = xr[0] * scale;
    for (int j = 1; j <= i; ++j) mx = std::max(mx, xr[j] * scale);
    float sum = 0.0f;
    for (int j = 0; j <= i; ++j) {
      pr[j] = std::exp(xr[j] * scale - mx);
      sum += pr[j];
    }
    const float inv = 1.0f / sum;
    for (int j = 0; j <= i; ++j) pr[j] *= inv;
    for (int j = i + 1; j < cols; ++j) pr[j] = 0.0f;
  }
}

void softmaxBackward(const float* probs, const float* dprobs, float* dx, int rows, int cols) {
  for (int i = 0; i < rows; ++i) {
    const float* pr = probs + static_cast<size_t>(i) * cols;
    const float* dpr = dprobs + static_cast<size_t>(i) * cols;
    float* dxr = dx + static_cast<size_t>(i) * cols;
    float dot = 0.0f;
    for (int j = 0; j < cols; ++j) dot += pr[j] * dpr[j];
    for (int j = 0; j < cols; ++j) dxr[j] = pr[j] * (dpr[j] - dot);
  }
}

void attentionForward(const float* qkv, float* att, float* out, int B, int T, int C, int NH) {
  requirePositive(NH, "NH", "attentionForward");
  if (C % NH != 0) {
    throw std::invalid_argument("attentionForward: C = " + std::to_string(C) +
                                " must be a multiple of NH = " + std::to_string(NH));
  }
  const int hs = C / NH, C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const float* q = qkv + static_cast<size_t>(b) * T * C3 + h * hs;  // (T, hs), stride 3C
      const float* k = q + C;
      const float* v = q + 2 * C;
      float* p = att + (static_cast<size_t>(b) * NH + h) * T * T;      // (T, T)
      float* o = out + static_cast<size_t>(b) * T * C + h * hs;        // (T, hs), stride C
      gemmStrided(false, true, T, T, hs, 1.0f, q, C3, k, C3, 0.0f, p, T);  // q·k^T
      causalSoftmaxForward(p, p, T, T, scale);
      gemmStrided(false, false, T, hs, T, 1.0f, p, T, v, C3, 0.0f, o, C);  // p·v
    }
  }
}

void attentionBackward(const float* dout, const float* qkv, const float* att, float* scratch,
                       float* dqkv, int B, int T, int C, int NH) {
  requirePositive(NH, "NH", "attentionBackward");
  const int hs = C / NH, C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const size_t row0 = static_cast<size_t>(b) * T;
      const float* q = qkv + row0 * C3 + h * hs;
      const float* k = q + C;
      const float* v = q + 2 * C;
      float* dq = dqkv + row0 * C3 + h * hs;
      float* dk = dq + C;
      float* dv = dq + 2 * C;
      const float* p = att + (static_cast<size_t>(b) * NH + h) * T * T;
      const float* dout_h = dout + row0 * C + h * hs;
      gemmStrided(true, false, T, hs, T, 1.0f, p, T, dout_h, C, 0.0f, dv, C3);      // dv = p^T·dout
      gemmStrided(false, true, T, T, hs, 1.0f, dout_h, C, v, C3, 0.0f, scratch, T);  // dp = dout·v^T
      softmaxBackward(p, scratch, scratch, T, T);                                     // ds (unscaled)
      gemmStrided(false, false, T, hs, T, scale, scratch, T, k, C3, 0.0f, dq, C3);   // dq = s·ds·k
      gemmStrided(true, false, T, hs, T, scale, scratch, T, q, C3, 0.0f, dk, C3);    // dk = s·ds^T·q
    }
  }
}

double crossEntropy(const float* logits, const int32_t* targets, float* dlogits, int rows, int V,
                    int total_rows) {
  requirePositive(V, "V", "crossEntropy");
  if (rows < 0 || total_rows <= 0 || total_rows < rows) {
    throw std::invalid_argument("crossEntropy: total_rows = " + std::to_string(total_rows) +
                                " must be > 0 and >= rows = " + std::to_string(rows) +
                                " (it is the token count this slice belongs to)");
  }
  const float grad_scale = 1.0f / static_cast<float>(total_rows);
  double sum = 0.0;
  for (int r = 0; r < rows; ++r) {
    const float* lr = logits + static_cast<size_t>(r) * V;
    float* dr = dlogits + static_cast<size_t>(r) * V;
    const int32_t target = targets[r];
    if (target < 0 || target >= V) {
      throw std::invalid_argument("crossEntropy: target " + std::to_string(target) + " of row " +
                                  std::to_string(r) + " is outside the vocabulary [0, " +
                                  std::to_string(V) + ")");
    }
    float mx = lr[0];
    for (int j = 1; j < V; ++j) mx = std::max(mx, lr[j]);
    double z = 0.0;
    for (int j = 0; j < V; ++j) z += std::exp(static_cast<double>(lr[j] - mx));
    sum += std::log(z) - static_cast<double>(lr[target] - mx);  // -log softmax[target]
    const float inv_z = static_cast<float>(1.0 / z);
    for (int j = 0; j < V; ++j) dr[j] = std::exp(lr[j] - mx) * inv_z * grad_scale;
    dr[target] -= grad_scale;
  }
  return sum / static_cast<double>(total_rows);
}

}  // namespace shardscope::cpu
