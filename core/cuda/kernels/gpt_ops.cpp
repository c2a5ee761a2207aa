// Host side of the GPT kernels: causal attention as strided-batch GEMMs over the
// B * NH contiguous (sample, head) matrices that splitHeads lays out (the same
// products as cpu_attention.cpp's per-head strided views), and the token index
// behind the deterministic token-embedding gradient. Everything here only enqueues.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda/cuda_kernels.h"

namespace shardscope::gpu {

namespace {

struct HeadShape {
  int BH, hs;                   // (sample, head) matrices, head size
  int64_t head_stride;          // T * hs: one (T, hs) head matrix
  int64_t att_stride;           // T * T: one (T, T) probability matrix
  size_t head_elems;            // B * NH * T * hs = B * T * C: one of q, k, v
  float scale;                  // 1 / sqrt(hs)
};

HeadShape headShape(int B, int T, int C, int NH, const char* op) {
  if (B < 0 || T <= 0 || C <= 0 || NH <= 0 || C % NH != 0) {
    throw std::invalid_argument(std::string("gpu::") + op + ": B = " + std::to_string(B) +
                                ", T = " + std::to_string(T) + ", C = " + std::to_string(C) +
                                ", NH = " + std::to_string(NH) +
                                " must be B >= 0, T, C, NH > 0 and C a multiple of NH");
  }
  if (static_cast<int64_t>(B) * NH * T > INT_MAX) {
    throw std::invalid_argument(std::string("gpu::") + op + ": B * NH * T = " +
                                std::to_string(static_cast<int64_t>(B) * NH * T) +
                                " softmax rows exceed INT_MAX");
  }
  HeadShape s;
  s.BH = B * NH;
  s.hs = C / NH;
  s.head_stride = static_cast<int64_t>(T) * s.hs;
  s.att_stride = static_cast<int64_t>(T) * T;
  s.head_elems = static_cast<size_t>(B) * T * C;
  s.scale = 1.0f / std::sqrt(static_cast<float>(s.hs));
  return s;
}

}  // namespace

void buildTokenIndex(const int32_t* tokens, int n, int V, int32_t* offsets, int32_t* positions) {
  if (n < 0 || V <= 0) {
    throw std::invalid_argument("gpu::buildTokenIndex: n = " + std::to_string(n) + ", V = " +
                                std::to_string(V) + " must be n >= 0 and V > 0");
  }
  std::fill(offsets, offsets + V + 1, 0);
  for (int i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= V) {
      throw std::invalid_argument("gpu::buildTokenIndex: token " + std::to_string(i) + " = " +
                                  std::to_string(tokens[i]) + " is outside the vocabulary [0, " +
                                  std::to_string(V) + ")");
    }
    ++offsets[tokens[i] + 1];  // counts, shifted by one
  }
  for (int v = 1; v <= V; ++v) offsets[v] += offsets[v - 1];  // offsets[v] = start of v
  // Counting sort, stable: after it offsets[v] = start of v + 1 (offsets[V] stays n).
  for (int i = 0; i < n; ++i) positions[offsets[tokens[i]]++] = i;
  for (int v = V; v > 0; --v) offsets[v] = offsets[v - 1];
  offsets[0] = 0;
}

void attentionForward(BlasHandle& blas, const bf16* qkvh, bf16* att, bf16* yh, bf16* out, int B,
                      int T, int C, int NH, StreamHandle stream) {
  const HeadShape s = headShape(B, T, C, NH, "attentionForward");
  if (B == 0) return;
  const bf16* q = qkvh;
  const bf16* k = q + s.head_elems;
  const bf16* v = k + s.head_elems;
  // scores (T, T) = q (T, hs) · k^T; probabilities in place.
  gemmStridedBatched(blas, false, true, T, T, s.hs, 1.0f, q, s.head_stride, k, s.head_stride,
                     0.0f, att, s.att_stride, s.BH, stream);
  causalSoftmaxForward<bf16>(att, att, s.BH, T, T, s.scale, stream);
  // y (T, hs) = p (T, T) · v (T, hs)
  gemmStridedBatched(blas, false, false, T, s.hs, T, 1.0f, att, s.att_stride, v, s.head_stride,
                     0.0f, yh, s.head_stride, s.BH, stream);
  mergeHeads<bf16>(yh, out, 1, B, T, C, NH, stream);
}

void attentionBackward(BlasHandle& blas, const bf16* dout, const bf16* qkvh, const bf16* att,
                       bf16* dyh, bf16* datt, bf16* dqkvh, bf16* dqkv, int B, int T, int C,
                       int NH, StreamHandle stream) {
  const HeadShape s = headShape(B, T, C, NH, "attentionBackward");
  if (B == 0) return;
  const bf16* q = qkvh;
  const bf16* k = q + s.head_elems;
  const bf16* v = k + s.head_elems;
  bf16* dq = dqkvh;
  bf16* dk = dq + s.head_elems;
  bf16* dv = dk + s.head_elems;
  splitHeads<bf16>(dout, nullptr, dyh, 1, B, T, C, NH, stream);
  // dv (T, hs) = p^T (T, T) · dy (T, hs)
  gemmStridedBatched(blas, true, false, T, s.hs, T, 1.0f, att, s.att_stride, dyh, s.head_stride,
                     0.0f, dv, s.head_stride, s.BH, stream);
  // dp (T, T) = dy (T, hs) · v^T, then ds = softmax'(dp) in place (unscaled)
  gemmStridedBatched(blas, false, true, T, T, s.hs, 1.0f, dyh, s.head_stride, v, s.head_stride,
                     0.0f, datt, s.att_stride, s.BH, stream);
  softmaxBackward<bf16>(att, datt, datt, s.BH * T, T, stream);
  // dq (T, hs) = scale * ds (T, T) · k (T, hs);  dk (T, hs) = scale * ds^T · q
  gemmStridedBatched(blas, false, false, T, s.hs, T, s.scale, datt, s.att_stride, k,
                     s.head_stride, 0.0f, dq, s.head_stride, s.BH, stream);
  gemmStridedBatched(blas, true, false, T, s.hs, T, s.scale, datt, s.att_stride, q,
                     s.head_stride, 0.0f, dk, s.head_stride, s.BH, stream);
  mergeHeads<bf16>(dqkvh, dqkv, 3, B, T, C, NH, stream);
}

}  // namespace shardscope::gpu
