// Row-major GEMMs on cuBLASLt or cublasGemmEx, both column-major: C(M,N) row-major
// is C^T(N,M) column-major = op(B)^T op(A)^T, so every call swaps the operands and
// passes (N, M, K). cuBLASLt plans are cached per shape, transposes, output type,
// batch strides and pointer alignment, since the heuristic's choice is only valid for
// pointers (and, in a strided batch, every matrix start) at least as aligned as it was told.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cuda/cuda_check.h"
#include "cuda/cuda_kernels.h"
#include "cuda/cuda_stream.h"
#include "cuda/kernels/internal.h"

namespace shardscope::gpu {
namespace {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // NVIDIA's advice for Hopper

// Largest power of two (<= 256) dividing the address: what the heuristic may assume.
// For a strided batch every matrix's start must be that aligned, so the stride's
// byte count limits it too.
uint32_t alignmentOf(const void* p, uint64_t stride_bytes = 0) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 1 && ((a % align) != 0 || (stride_bytes % align) != 0)) align /= 2;
  return align;
}

struct PlanKey {
  bool transA, transB, bf16Out;
  int M, N, K;
  uint32_t alignA, alignB, alignC;
  int batch;                          // 1: a plain GEMM
  int64_t strideA, strideB, strideC;  // elements between a batch's matrices
  bool operator<(const PlanKey& o) const {
    return std::tie(transA, transB, bf16Out, M, N, K, alignA, alignB, alignC, batch, strideA,
                    strideB, strideC) <
           std::tie(o.transA, o.transB, o.bf16Out, o.M, o.N, o.K, o.alignA, o.alignB, o.alignC,
                    o.batch, o.strideA, o.strideB, o.strideC);
  }
};

struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

}  // namespace

struct BlasHandle::Impl {
  GemmPath path = GemmPath::CublasLt;
  int device = 0;
  cublasLtHandle_t lt = nullptr;
  cublasHandle_t blas = nullptr;
  void* workspace = nullptr;
  std::map<PlanKey, LtPlan> plans;

  ~Impl() {
    for (auto& [key, plan] : plans) {
      cublasLtMatrixLayoutDestroy(plan.a);
      cublasLtMatrixLayoutDestroy(plan.b);
      cublasLtMatrixLayoutDestroy(plan.c);
      cublasLtMatmulDescDestroy(plan.desc);
    }
    if (lt) cublasLtDestroy(lt);
    if (blas) cublasDestroy(blas);
    if (workspace) cudaFree(workspace);
  }

  const LtPlan& plan(const PlanKey& key) {
    auto it = plans.find(key);
    if (it != plans.end()) return it->second;
    LtPlan p;
    const cublasOperation_t opA = key.transB ? CUBLAS_OP_T : CUBLAS_OP_N;  // swapped operands
    const cublasOperation_t opB = key.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cudaDataType_t outType = key.bf16Out ? CUDA_R_16BF : CUDA_R_32F;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA,
                                                sizeof opA));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB,
                                                sizeof opB));
    // Stored (column-major) shapes before op(): "A" is B's memory, "B" is A's.
    const uint64_t aRows = key.transB ? key.K : key.N, aCols = key.transB ? key.N : key.K;
    const uint64_t bRows = key.transA ? key.M : key.K, bCols = key.transA ? key.K : key.M;
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.a, CUDA_R_16BF, aRows, aCols,
                                            static_cast<int64_t>(aRows)));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.b, CUDA_R_16BF, bRows, bCols,
                                            static_cast<int64_t>(bRows)));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.c, outType, key.N, key.M, key.N));
    if (key.batch > 1) {  // swapped operands: layout "a" is B's memory, "b" is A's
      const int32_t count = key.batch;
      const std::pair<cublasLtMatrixLayout_t, int64_t> strided[] = {
          {p.a, key.strideB}, {p.b, key.strideA}, {p.c, key.strideC}};
      for (const auto& [layout, stride] : strided) {
        CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                      &count, sizeof count));
        CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
            layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
      }
    }

    cublasLtMatmulPreference_t pref = nullptr;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t ws = kWorkspaceBytes;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                         sizeof ws);
    // Operand "A" holds B's pointer and vice versa; C and D are the same buffer.
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                         &key.alignB, sizeof key.alignB);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                         &key.alignA, sizeof key.alignA);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                         &key.alignC, sizeof key.alignC);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                         &key.alignC, sizeof key.alignC);
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(lt, p.desc, p.a, p.b, p.c, p.c,
                                                                 pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (status != CUBLAS_STATUS_SUCCESS || found == 0) {
      cublasLtMatrixLayoutDestroy(p.a);
      cublasLtMatrixLayoutDestroy(p.b);
      cublasLtMatrixLayoutDestroy(p.c);
      cublasLtMatmulDescDestroy(p.desc);
      throw std::runtime_error(
          "gpu::gemm: cuBLASLt has no algorithm for M=" + std::to_string(key.M) +
          " N=" + std::to_string(key.N) + " K=" + std::to_string(key.K) +
          (key.batch > 1 ? " batch=" + std::to_string(key.batch) : std::string()) +
          (key.transA ? " A^T" : " A") + (key.transB ? " B^T" : " B") +
          (key.bf16Out ? " -> bf16" : " -> f32") + " with pointer alignments " +
          std::to_string(key.alignA) + "/" + std::to_string(key.alignB) + "/" +
          std::to_string(key.alignC) + " bytes (" + cublasGetStatusName(status) +
          "; hint: 16-byte aligned buffers and dimensions divisible by 8 always have one)");
    }
    p.algo = result.algo;
    return plans.emplace(key, p).first->second;
  }
};

BlasHandle::BlasHandle(GemmPath path) : m_impl(std::make_unique<Impl>()) {
  m_impl->path = path;
  CUDA_CHECK(cudaGetDevice(&m_impl->device));
  CUDA_CHECK(cudaMalloc(&m_impl->workspace, kWorkspaceBytes));
  if (path == GemmPath::CublasLt) {
    CUBLAS_CHECK(cublasLtCreate(&m_impl->lt));
  } else {
    CUBLAS_CHECK(cublasCreate(&m_impl->blas));
    CUBLAS_CHECK(cublasSetWorkspace(m_impl->blas, m_impl->workspace, kWorkspaceBytes));
  }
}

BlasHandle::~BlasHandle() = default;

GemmPath BlasHandle::path() const { return m_impl->path; }

namespace {

// batch == 1 is a plain GEMM (strides unused).
template <class TC>
void gemmImpl(BlasHandle& blas, bool transA, bool transB, int M, int N, int K, float alpha,
              const bf16* A, int64_t strideA, const bf16* B, int64_t strideB, float beta, TC* C,
              int64_t strideC, int batch, StreamHandle stream) {
  if (M < 0 || N < 0 || K < 0) {
    throw std::invalid_argument("gpu::gemm: M = " + std::to_string(M) + ", N = " +
                                std::to_string(N) + ", K = " + std::to_string(K) +
                                " must all be >= 0");
  }
  if (batch < 0 || (batch > 1 && (strideA < 0 || strideB < 0 || strideC < 0))) {
    throw std::invalid_argument("gpu::gemmStridedBatched: batch = " + std::to_string(batch) +
                                " and strides " + std::to_string(strideA) + "/" +
                                std::to_string(strideB) + "/" + std::to_string(strideC) +
                                " must all be >= 0");
  }
  if (M == 0 || N == 0 || batch == 0) return;
  const size_t mn = static_cast<size_t>(M) * static_cast<size_t>(N);
  if (K == 0) {  // op(A) op(B) is empty: C = beta * C, which cuBLASLt does not take
    for (int i = 0; i < batch; ++i) {
      detail::scaleInPlace(C + static_cast<size_t>(i) * static_cast<size_t>(strideC), beta, mn,
                           stream);
    }
    return;
  }
  if (batch == 1) strideA = strideB = strideC = 0;  // one plan per shape, whatever was passed
  BlasHandle::Impl& h = blas.impl();
  DeviceGuard guard(h.device);
  constexpr bool kBf16Out = std::is_same_v<TC, bf16>;
  if (h.path == GemmPath::CublasGemmEx) {
    CUBLAS_CHECK(cublasSetStream(h.blas, stream));
    const cublasOperation_t opA = transB ? CUBLAS_OP_T : CUBLAS_OP_N;  // swapped operands
    const cublasOperation_t opB = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int ldb = transB ? K : N, lda = transA ? M : K;
    const cudaDataType_t outType = kBf16Out ? CUDA_R_16BF : CUDA_R_32F;
    if (batch == 1) {
      CUBLAS_CHECK(cublasGemmEx(h.blas, opA, opB, N, M, K, &alpha, B, CUDA_R_16BF, ldb, A,
                                CUDA_R_16BF, lda, &beta, C, outType, N, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
    } else {
      CUBLAS_CHECK(cublasGemmStridedBatchedEx(h.blas, opA, opB, N, M, K, &alpha, B, CUDA_R_16BF,
                                              ldb, strideB, A, CUDA_R_16BF, lda, strideA, &beta,
                                              C, outType, N, strideC, batch, CUBLAS_COMPUTE_32F,
                                              CUBLAS_GEMM_DEFAULT));
    }
    return;
  }
  const PlanKey key{transA,
                    transB,
                    kBf16Out,
                    M,
                    N,
                    K,
                    alignmentOf(A, static_cast<uint64_t>(strideA) * sizeof(bf16)),
                    alignmentOf(B, static_cast<uint64_t>(strideB) * sizeof(bf16)),
                    alignmentOf(C, static_cast<uint64_t>(strideC) * sizeof(TC)),
                    batch,
                    strideA,
                    strideB,
                    strideC};
  const LtPlan& p = h.plan(key);
  CUBLAS_CHECK(cublasLtMatmul(h.lt, p.desc, &alpha, B, p.a, A, p.b, &beta, C, p.c, C, p.c, &p.algo,
                              h.workspace, kWorkspaceBytes, stream));
}

}  // namespace

void gemm(BlasHandle& blas, bool transA, bool transB, int M, int N, int K, float alpha,
          const bf16* A, const bf16* B, float beta, float* C, StreamHandle stream) {
  gemmImpl(blas, transA, transB, M, N, K, alpha, A, 0, B, 0, beta, C, 0, 1, stream);
}

void gemm(BlasHandle& blas, bool transA, bool transB, int M, int N, int K, float alpha,
          const bf16* A, const bf16* B, float beta, bf16* C, StreamHandle stream) {
  gemmImpl(blas, transA, transB, M, N, K, alpha, A, 0, B, 0, beta, C, 0, 1, stream);
}

void gemmStridedBatched(BlasHandle& blas, bool transA, bool transB, int M, int N, int K,
                        float alpha, const bf16* A, int64_t strideA, const bf16* B,
                        int64_t strideB, float beta, float* C, int64_t strideC, int batch,
                        StreamHandle stream) {
  gemmImpl(blas, transA, transB, M, N, K, alpha, A, strideA, B, strideB, beta, C, strideC, batch,
           stream);
}

void gemmStridedBatched(BlasHandle& blas, bool transA, bool transB, int M, int N, int K,
                        float alpha, const bf16* A, int64_t strideA, const bf16* B,
                        int64_t strideB, float beta, bf16* C, int64_t strideC, int batch,
                        StreamHandle stream) {
  gemmImpl(blas, transA, transB, M, N, K, alpha, A, strideA, B, strideB, beta, C, strideC, batch,
           stream);
}

}  // namespace shardscope::gpu
