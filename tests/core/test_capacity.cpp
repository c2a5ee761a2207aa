// The capacity calculator against the seed's numbers (70B under DDP is 16 B/param
// = 1120 GB per rank; zero3 fits 80 GB from 14 ranks, not 13), the smallest
// stage that fits for a table of cases, padded shards, parameter counts as
// people write them, and the model presets' counts against the published ones.
#include <QtTest>

#include "analysis/capacity.h"
#include "analysis/formulas.h"
#include "common/errors.h"
#include "config/model_presets.h"

using namespace shardscope;

namespace {

CapacityReport report(int64_t params, int ranks, double capacity_gb, int shard_group = 0) {
  CapacityInput in;
  in.params = params;
  in.ranks = ranks;
  in.capacity_bytes = capacity_gb * kBytesPerGb;
  in.shard_group = shard_group;
  return computeCapacity(in);
}

const StageCapacity& stage(const CapacityReport& r, const std::string& name) {
  for (const StageCapacity& s : r.stages)
    if (strategyName(s.stage) == name) return s;
  throw std::logic_error("no stage " + name);
}

template <typename F>
QString configErrorOf(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace

class TestCapacity : public QObject {
  Q_OBJECT

 private slots:
  void zeroPaperNumbers() {
    const int64_t n = 70'000'000'000;
    const CapacityReport r = report(n, 64, 80);
    QCOMPARE(stage(r, "ddp").bytes_per_param, 16.0);
    QCOMPARE(stage(r, "ddp").bytes_per_rank, int64_t{1'120'000'000'000});  // 1120 GB
    QVERIFY(!stage(r, "ddp").fits);
    QCOMPARE(r.zero3_min_ranks, int64_t{14});  // 16 x 70e9 / 80e9 = 14
    QVERIFY(stage(report(n, 14, 80), "zero3").fits);
    QCOMPARE(stage(report(n, 14, 80), "zero3").bytes_per_rank, int64_t{80'000'000'000});  // exactly at capacity
    QVERIFY(!stage(report(n, 13, 80), "zero3").fits);
  }

  // The bytes/param column is the ZeRO paper's formula itself, at P (or G for hsdp).
  void bytesPerParamMatchesFormulas() {
    const CapacityReport r = report(1'000'000, 8, 80, 4);
    QCOMPARE(r.stages.size(), size_t{5});
    for (const StageCapacity& s : r.stages)
      QCOMPARE(s.bytes_per_param, expectedBytesPerParam(formulaConfig(s.stage, 8, 4)));
    QCOMPARE(stage(r, "zero1").bytes_per_param, 4.0 + 12.0 / 8);
    QCOMPARE(stage(r, "zero2").bytes_per_param, 2.0 + 14.0 / 8);
    QCOMPARE(stage(r, "hsdp").bytes_per_param, 4.0);
    QCOMPARE(stage(r, "zero3").bytes_per_param, 2.0);
    // Without --shard-group there is no hsdp row; the order is least sharding first.
    std::vector<std::string> order;
    for (const StageCapacity& s : report(1'000'000, 8, 80).stages) order.push_back(strategyName(s.stage));
    QCOMPARE(order, (std::vector<std::string>{"ddp", "zero1", "zero2", "zero3"}));
  }

  // A shard holds ceil(N/P) params, as a padded flat shard does.
  void paddedShards() {
    const auto bytes = [](Strategy s, int ranks, int group = 0) {
      return expectedModelStateBytesRoundedUp(formulaConfig(s, ranks, group), 10);
    };
    QCOMPARE(bytes(Strategy::Zero3, 4), int64_t{16 * 3});
    QCOMPARE(bytes(Strategy::Zero1, 4), int64_t{4 * 10 + 12 * 3});
    QCOMPARE(bytes(Strategy::Zero2, 4), int64_t{2 * 10 + 14 * 3});
    QCOMPARE(bytes(Strategy::Hsdp, 8, 4), int64_t{16 * 3});
    QCOMPARE(bytes(Strategy::Ddp, 4), int64_t{160});
  }

  void smallestStage_data() {
    QTest::addColumn<qint64>("params");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<double>("capacityGb");
    QTest::addColumn<int>("shardGroup");
    QTest::addColumn<QString>("expected");  // "" = none fits
    QTest::newRow("1B on 8 x 80 GB: ddp (16 GB)") << qint64(1e9) << 8 << 80.0 << 0 << "ddp";
    QTest::newRow("7B on 8 x 80 GB: zero1 (38.5 GB)") << qint64(7e9) << 8 << 80.0 << 0 << "zero1";
    QTest::newRow("7B on 8 x 30 GB: zero2 (26.25 GB)") << qint64(7e9) << 8 << 30.0 << 0 << "zero2";
    QTest::newRow("7B on 8 x 24 GB: zero3 (14 GB)") << qint64(7e9) << 8 << 24.0 << 0 << "zero3";
    QTest::newRow("70B on 64 x 80 GB: zero3 (17.5 GB)") << qint64(70e9) << 64 << 80.0 << 0 << "zero3";
    QTest::newRow("70B on 64 x 80 GB, G=16: hsdp (70 GB)") << qint64(70e9) << 64 << 80.0 << 16 << "hsdp";
    QTest::newRow("70B on 64 x 80 GB, G=8: zero3 (hsdp 140 GB)") << qint64(70e9) << 64 << 80.0 << 8 << "zero3";
    QTest::newRow("70B on 8 x 80 GB: none (zero3 140 GB)") << qint64(70e9) << 8 << 80.0 << 0 << "";
    QTest::newRow("5B on 1 x 80 GB: exactly ddp") << qint64(5e9) << 1 << 80.0 << 0 << "ddp";
  }

  void smallestStage() {
    QFETCH(qint64, params);
    QFETCH(int, ranks);
    QFETCH(double, capacityGb);
    QFETCH(int, shardGroup);
    QFETCH(QString, expected);
    const CapacityReport r = report(params, ranks, capacityGb, shardGroup);
    QCOMPARE(QString::fromStdString(r.smallest_fitting_stage ? strategyName(*r.smallest_fitting_stage) : ""), expected);
    // "Smallest" means the first fitting row; every row before it must not fit.
    for (const StageCapacity& s : r.stages) {
      if (s.stage == r.smallest_fitting_stage) break;
      QVERIFY2(!s.fits, strategyName(s.stage).c_str());
    }
  }

  void zero3MinRanks_data() {
    QTest::addColumn<qint64>("params");
    QTest::addColumn<double>("capacityGb");
    QTest::addColumn<qint64>("expected");
    QTest::newRow("70B, 80 GB") << qint64(70e9) << 80.0 << qint64(14);
    QTest::newRow("70B, 79.999 GB") << qint64(70e9) << 79.999 << qint64(15);
    QTest::newRow("llama2-70b, 80 GB (13.8)") << qint64(68'976'648'192) << 80.0 << qint64(14);
    QTest::newRow("7B, 80 GB (1.4)") << qint64(7e9) << 80.0 << qint64(2);
    QTest::newRow("124M, 24 GB") << qint64(124'439'808) << 24.0 << qint64(1);
    QTest::newRow("below 16 bytes: never") << qint64(1000) << 1e-8 << qint64(0);
  }

  void zero3MinRanks() {
    QFETCH(qint64, params);
    QFETCH(double, capacityGb);
    QFETCH(qint64, expected);
    const CapacityReport r = report(params, 1, capacityGb);
    QCOMPARE(r.zero3_min_ranks, expected);
    if (expected > 1) {  // the boundary: fits at P, not at P - 1
      QVERIFY(stage(report(params, static_cast<int>(expected), capacityGb), "zero3").fits);
      QVERIFY(!stage(report(params, static_cast<int>(expected) - 1, capacityGb), "zero3").fits);
    }
  }

  void badInput_data() {
    QTest::addColumn<qint64>("params");
    QTest::addColumn<int>("ranks");
    QTest::addColumn<double>("capacityGb");
    QTest::addColumn<int>("shardGroup");
    QTest::addColumn<QString>("expected");
    QTest::newRow("no params") << qint64(0) << 8 << 80.0 << 0 << "--params";
    QTest::newRow("no ranks") << qint64(1e9) << 0 << 80.0 << 0 << "--ranks";
    QTest::newRow("no capacity") << qint64(1e9) << 8 << 0.0 << 0 << "--capacity-gb";
    QTest::newRow("group does not divide") << qint64(1e9) << 64 << 80.0 << 3 << "--shard-group 3 must divide --ranks 64";
  }

  void badInput() {
    QFETCH(qint64, params);
    QFETCH(int, ranks);
    QFETCH(double, capacityGb);
    QFETCH(int, shardGroup);
    QFETCH(QString, expected);
    const QString error = configErrorOf([&] { report(params, ranks, capacityGb, shardGroup); });
    QVERIFY2(error.contains(expected), qPrintable(error));
  }

  void parseParams_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<qint64>("expected");  // -1: a ConfigError naming --params
    QTest::newRow("7e9") << "7e9" << qint64(7'000'000'000);
    QTest::newRow("7B") << "7B" << qint64(7'000'000'000);
    QTest::newRow("70b") << "70b" << qint64(70'000'000'000);
    QTest::newRow("124M") << "124M" << qint64(124'000'000);
    QTest::newRow("1.5T") << "1.5T" << qint64(1'500'000'000'000);
    QTest::newRow("350k") << "350k" << qint64(350'000);
    QTest::newRow("plain") << "124439808" << qint64(124'439'808);
    QTest::newRow("decimal B") << "6.738415616B" << qint64(6'738'415'616);
    for (const char* bad : {"", "abc", "7X", "7BB", "B", "-5", "0", "0.5", "1.5", "inf", "nan", "2e15", " 7B"})
      QTest::addRow("bad '%s'", bad) << bad << qint64(-1);
  }

  void parseParams() {
    QFETCH(QString, text);
    QFETCH(qint64, expected);
    if (expected >= 0) {
      QCOMPARE(parseParamCount("--params", text.toStdString()), int64_t{expected});
    } else {
      const QString error = configErrorOf([&] { parseParamCount("--params", text.toStdString()); });
      QVERIFY2(error.startsWith("--params "), qPrintable(error));
    }
  }

  // Counted from the architecture; equal to the published totals exactly.
  void presetParamCounts_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<qint64>("published");
    QTest::newRow("gpt2-124m") << "gpt2-124m" << qint64(124'439'808);
    QTest::newRow("llama2-7b") << "llama2-7b" << qint64(6'738'415'616);
    QTest::newRow("llama2-70b") << "llama2-70b" << qint64(68'976'648'192);
  }

  void presetParamCounts() {
    QFETCH(QString, name);
    QFETCH(qint64, published);
    QCOMPARE(findModelPreset(name.toStdString()).params(), int64_t{published});
  }

  void unknownPreset() {
    const QString error = configErrorOf([] { findModelPreset("gpt5"); });
    QVERIFY(error.contains("--model") && error.contains("llama2-70b") && error.contains("'gpt5'"));
  }
};

QTEST_APPLESS_MAIN(TestCapacity)
#include "test_capacity.moc"
