// CPU reference kernels for the GPT model: causal softmax, multi-head causal
// self-attention (per-(sample, head) GEMMs on strided views of qkv, no copies)
// and the token cross-entropy. fp32 math; the reported loss sums in double.
// Masked scores (key after query) are exactly 0 after softmax, so backward
// needs no mask: their gradients vanish through the zero probabilities.
#pragma once

#include <cstdint>

namespace shardscope::cpu {

// probs(rows, cols): row i = softmax(scale * x[i, 0..i]) and 0 after column i
// (the causal mask, query i sees keys 0..i; needs rows <= cols). In place allowed.
void causalSoftmaxForward(const float* x, float* probs, int rows, int cols, float scale);
// dx(rows, cols) = probs * (dprobs - sum_j probs * dprobs), the softmax Jacobian
// (overwrites; in place with dprobs allowed). Multiply by the forward scale outside.
void softmaxBackward(const float* probs, const float* dprobs, float* dx, int rows, int cols);

// Causal self-attention of NH heads of size C / NH, scores scaled by 1/sqrt(C / NH).
//   qkv: (B, T, 3C), q | k | v, head h in columns [h*hs, (h+1)*hs) of each
//   att: (B, NH, T, T) softmax probabilities, saved for backward
//   out: (B, T, C)    heads concatenated
void attentionForward(const float* qkv, float* att, float* out, int B, int T, int C, int NH);
// dqkv (B, T, 3C) overwritten; scratch: (T, T) floats the caller owns.
void attentionBackward(const float* dout, const float* qkv, const float* att, float* scratch,
                       float* dqkv, int B, int T, int C, int NH);

// Mean token cross-entropy of logits (rows, V) against targets (rows), scaled by
// 1/total_rows (total_rows >= rows) so that slices of a batch add up to the batch
// mean. dlogits (rows, V) = (softmax - onehot) / total_rows (overwrites; may alias
// logits). Returns the loss (fp64 sum). Throws if a target is outside [0, V).
double crossEntropy(const float* logits, const int32_t* targets, float* dlogits, int rows, int V,
                    int total_rows);

}  // namespace shardscope::cpu
