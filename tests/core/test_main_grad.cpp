// --grad-dtype fp32 (Megatron-LM's main_grad): gradients accumulate, are
// reduced and reach the optimizer in fp32, on DDP's buckets, ZeRO-1's
// reduce-scatters and a pipeline stage's microbatch sums.
//  - the real math on CPU ranks still trains like the one-rank run, and is
//    not the bf16 path under another name (its updates differ);
//  - the ledger books 4 bytes per gradient element: 18 bytes per parameter
//    under DDP, 6 + 12/P under ZeRO-1, as the formula says;
//  - the gradient collectives move fp32: twice the bytes;
//  - the flag names what it applies to.
#include <QtTest>

#include "analysis/formulas.h"
#include "engine/run.h"
#include "equivalence_check.h"

using namespace shardscope;
using namespace shardscope::testing;

namespace {

RunConfig mlpConfig(Strategy strategy, int ranks, bool fp32) {
  RunConfig c;
  c.strategy = strategy;
  c.ranks = ranks;
  c.model.layers = 4;
  c.model.hidden = 64;
  c.model.io_dim = 32;
  c.batch = 16;
  c.steps = 3;
  c.lr = 1e-3;
  c.bucket_mb = 0.01;  // several buckets, so their order and slots matter
  c.first_bucket_mb = 0.005;
  if (fp32) c.grad_dtype = CommDType::Fp32;
  return c;
}

int64_t categoryPeak(const RankResult& r, Category c) { return r.ledger.peak[static_cast<size_t>(c)]; }

}  // namespace

class TestMainGrad : public QObject {
  Q_OBJECT

 private slots:
  void trainsLikeOneRank_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("pp");
    QTest::newRow("ddp 4 ranks") << "ddp" << 4 << 1;
    QTest::newRow("zero1 4 ranks") << "zero1" << 4 << 1;
    QTest::newRow("ddp dp2 x pp2 1f1b") << "ddp" << 4 << 2;
    QTest::newRow("zero1 dp2 x pp2 1f1b") << "zero1" << 4 << 2;
  }
  void trainsLikeOneRank() {
    QFETCH(QString, strategy);
    QFETCH(int, ranks);
    QFETCH(int, pp);
    RunConfig c = mlpConfig(*parseStrategy(strategy.toStdString()), ranks, true);
    c.pp = pp;
    if (pp > 1) c.microbatches = 2;
    const RunResult got = Run(c).execute();
    const RunResult ref = Run(mlpConfig(Strategy::Ddp, 1, true)).execute();
    verifyEquivalent(got, ref, c);
  }

  // The fp32 path is really taken: the same run in bf16 ends elsewhere.
  void fp32IsNotBf16() {
    const RunResult fp32 = Run(mlpConfig(Strategy::Ddp, 2, true)).execute();
    const RunResult bf16 = Run(mlpConfig(Strategy::Ddp, 2, false)).execute();
    QCOMPARE(fp32.final_master.size(), bf16.final_master.size());
    int differ = 0;
    for (size_t i = 0; i < fp32.final_master.size(); ++i) differ += fp32.final_master[i] != bf16.final_master[i];
    QVERIFY2(differ > 0, "fp32 gradients gave the bf16 run's weights bit for bit");
  }

  void ledgerBooksFourBytesPerGradient_data() {
    QTest::addColumn<QString>("strategy");
    QTest::addColumn<int>("pp");
    QTest::newRow("ddp") << "ddp" << 1;
    QTest::newRow("zero1") << "zero1" << 1;
    QTest::newRow("ddp pp2") << "ddp" << 2;
  }
  void ledgerBooksFourBytesPerGradient() {
    QFETCH(QString, strategy);
    QFETCH(int, pp);
    const auto measure = [&](bool fp32) {
      RunConfig c = mlpConfig(*parseStrategy(strategy.toStdString()), 4, fp32);
      c.backend = Backend::Meta;
      c.clock = ClockKind::Modeled;
      c.model.hidden = 1024;
      c.steps = 1;
      c.pp = pp;
      if (pp > 1) c.microbatches = 2;
      return std::pair{c, Run(c).execute()};
    };
    const auto [c32, r32] = measure(true);
    const auto [c16, r16] = measure(false);
    const RankResult& a = r32.ranks.front();
    const RankResult& b = r16.ranks.front();
    // Megatron-LM's 18 bytes per parameter (ZeRO-1: 6 + 12/P), the formula's figure.
    const double expected = expectedModelStateBytes(c32) + double(a.padding_state_bytes);
    QVERIFY2(std::abs(double(a.ledger.model_state_peak) - expected) <= 1e-6 * expected,
             qPrintable(QString("model state %1 bytes, formula %2").arg(a.ledger.model_state_peak).arg(expected)));
    QCOMPARE(QString::fromStdString(modelStateFormulaText(c32)).left(2),
             QString(strategy == "ddp" ? "18" : "6 "));
    // The gradient's 2 extra bytes per element over bf16 (ZeRO-1's fp32
    // buckets also hold their padding to a multiple of P).
    const int64_t g32 = categoryPeak(a, Category::Grad), g16 = categoryPeak(b, Category::Grad);
    QVERIFY2(g32 >= 2 * g16 && g32 <= 2 * g16 + 4 * r32.padding_elements,
             qPrintable(QString("grad bytes fp32 %1, bf16 %2").arg(g32).arg(g16)));
    if (strategy == "ddp" && pp == 1)  // the fp32 buckets are the gradients: no second copy
      QCOMPARE(categoryPeak(a, Category::Bucket), int64_t(0));
  }

  void gradientCollectivesMoveFp32() {
    const auto sent = [](Strategy s, bool fp32) {
      RunConfig c = mlpConfig(s, 4, fp32);
      c.backend = Backend::Meta;
      c.clock = ClockKind::Modeled;
      c.steps = 1;
      return Run(c).execute().ranks.front().comm_bytes;
    };
    QCOMPARE(sent(Strategy::Ddp, true).all_reduce, 2 * sent(Strategy::Ddp, false).all_reduce);
    const CommBytes z32 = sent(Strategy::Zero1, true), z16 = sent(Strategy::Zero1, false);
    QCOMPARE(z32.reduce_scatter, 2 * z16.reduce_scatter);
    QCOMPARE(z32.all_gather, z16.all_gather);  // the updated parameters stay bf16
    // The traffic formula says the same.
    RunConfig c = mlpConfig(Strategy::Ddp, 4, true);
    QCOMPARE(expectedTraffic(c).coefficient, 4.0);
    c.strategy = Strategy::Zero1;
    QCOMPARE(expectedTraffic(c).coefficient, 3.0);
  }

  void flagNamesWhatItAppliesTo() {
    QCOMPARE(parseRunArgs({"--strategy", "zero1", "--grad-dtype", "fp32"}).fp32Grads(), true);
    const auto refused = [](std::vector<std::string> args, const QString& start) {
      try {
        parseRunArgs(args);
        QFAIL("accepted");
      } catch (const ConfigError& e) {
        QVERIFY2(QString(e.what()).startsWith(start), e.what());
      }
    };
    refused({"--strategy", "zero3", "--grad-dtype", "fp32"}, "--grad-dtype applies to --strategy ddp or zero1");
    refused({"--strategy", "ddp", "--backend", "cuda", "--grad-dtype", "fp32"},
            "--grad-dtype fp32 applies to --backend cpu or meta");
    refused({"--grad-dtype", "fp16"}, "--grad-dtype");
  }
};

QTEST_GUILESS_MAIN(TestMainGrad)
#include "test_main_grad.moc"
