// The GPU backend against the CPU backend: one row per self-test of
// tests/gpu/cuda_selftest.h (every kernel in f32 and bf16 storage, the GEMMs in
// all four transpose combinations on both cuBLAS paths, the allocator's ledger,
// stream ordering, the emulated collectives at P = 4 and NCCL on every visible
// GPU). Bounds are stated in cuda_selftest.cpp. Without a usable GPU every row
// skips with the runtime's own reason.
#include <QtTest>

#include "cuda_selftest.h"

using namespace shardscope::gpu;

class TestCudaKernels : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { m_unavailable = gpuUnavailableReason(); }

  void selfTest_data() {
    QTest::addColumn<QString>("name");
    for (const std::string& name : selfTestNames()) {
      QTest::newRow(name.c_str()) << QString::fromStdString(name);
    }
  }

  void selfTest() {
    if (!m_unavailable.empty()) QSKIP(qPrintable("no usable GPU: " + QString::fromStdString(m_unavailable)));
    QFETCH(QString, name);
    const SelfTestResult r = runSelfTest(name.toStdString(), 0, /*seed=*/0x5eed);
    const std::string message = r.name + ": error " + std::to_string(r.error) + " vs bound " +
                                std::to_string(r.bound) + ": " + r.detail;
    QVERIFY2(r.passed, message.c_str());
  }

  void namesAreUniqueAndCoverTheBrief() {
    const auto names = selfTestNames();
    QSet<QString> seen;
    for (const auto& n : names) {
      QVERIFY2(!seen.contains(QString::fromStdString(n)), n.c_str());
      seen.insert(QString::fromStdString(n));
    }
    for (const char* required : {"cast_bf16_f32", "layernorm_bf16", "gelu_bf16", "softmax_bf16",
                                 "cross_entropy_bf16", "mse_f32", "adamw_exact", "gemm_lt_NN_bf16",
                                 "gemm_lt_TT_f32", "gemm_ex_NT_bf16", "allocator_ledger",
                                 "emulated_p4", "nccl_all_gpus"}) {
      QVERIFY2(seen.contains(required), required);
    }
    const SelfTestResult unknown = runSelfTest("no_such_check", 0, 1);
    QVERIFY(!unknown.passed);
    QVERIFY(unknown.detail.find("no_such_check") != std::string::npos);
  }

 private:
  std::string m_unavailable;
};

QTEST_GUILESS_MAIN(TestCudaKernels)
#include "test_cuda_kernels.moc"
