// validate --local's machinery on a tiny config: every check reports its
// measured and modeled step and the error between them, and the modeled clock
// prices CPU ranks with the profile's calibration (GEMMs, element-wise ops and
// weight conversions one after another, as one rank thread runs them).
// Nothing here asserts on this machine's speed: only on the structure and on
// the modeled clock, which is deterministic.
#include <QtTest>

#include <QTemporaryDir>

#include <cmath>
#include <fstream>

#include "analysis/local_validation.h"
#include "engine/run.h"
#include "model/hardware_profile.h"
#include "rank/cost_model.h"

using namespace shardscope;

namespace {

// A CPU-like profile with the CPU pricing; figures round so the prices are exact.
HardwareProfile cpuProfile(const std::string& name) {
  HardwareProfile p;
  p.name = name;
  p.description = "test: a CPU rank's calibration";
  p.device.bf16_flops = 100e9;
  p.device.mem_bandwidth = 10e9;
  p.device.mem_capacity = 8e9;
  p.device.compute_efficiency = 1.0;
  p.intra_node = {1e9, 50e-6};
  p.inter_node = p.intra_node;
  p.gpus_per_node = 2;
  HardwareProfile::Calibration c;
  c.gemm_efficiency = 0.8;
  c.gemm_tile_m = c.gemm_tile_n = c.sms = 1;
  c.hbm_efficiency = 0.5;
  c.intra_node_busbw = c.inter_node_busbw = 0.5e9;
  c.elementwise_bandwidth = 2e9;
  c.weight_convert = 1e-9;
  p.calibration = c;
  p.sources = {"test"};
  return p;
}

std::string writeProfile(const QTemporaryDir& dir, const HardwareProfile& p) {
  const std::string path = dir.filePath(QString::fromStdString(p.name + ".json")).toStdString();
  std::ofstream out(path);
  writeProfileJson(p, out);
  return path;
}

LocalCheck tinyCheck() {
  RunConfig c;
  c.strategy = Strategy::Ddp;
  c.ranks = 2;
  c.steps = 2;
  c.model.kind = ModelKind::Mlp;
  c.model.layers = 2;
  c.model.hidden = 32;
  c.batch = 8;
  return {"ddp, 2 ranks, residual MLP 2 x 32", c};
}

// The modeled step (slowest rank) of `config` on the meta backend under the
// profile at `profile_path`: what runLocalChecks sets beside the measured one.
double modeledSeconds(RunConfig config, const std::string& profile_path) {
  config.backend = Backend::Meta;
  config.clock = ClockKind::Modeled;
  config.profile = profile_path;
  int64_t wall = 0;
  for (const StepMetrics& m : Run(config).execute().last_step) wall = std::max(wall, m.wall_ns);
  return double(wall) * 1e-9;
}

}  // namespace

class TestLocalValidation : public QObject {
  Q_OBJECT

 private slots:
  // The CPU pricing adds the block's GEMMs, its element-wise bytes over the
  // calibrated rate and its weight conversions: a rank's one thread runs them in turn.
  void costModelAddsTheCpuTerms() {
    CostModel model(cpuProfile("cpu-test"));
    BlockWork work;
    work.gemms.push_back({64, 1024, 256});
    work.memory_bytes = 4e6;
    work.weight_elements = 1e6;
    const double gemm = 2.0 * 64 * 1024 * 256 / (100e9 * 0.8);  // operands' bytes / 5 GB/s is less
    QVERIFY(std::fabs(model.gemmSeconds(work.gemms[0]) - gemm) < 1e-12);
    QCOMPARE(model.elementwiseBandwidth(), 2e9);
    QCOMPARE(model.memoryBandwidth(), 5e9);  // the optimizer's streams: hbm_efficiency x memcpy
    const double expected = gemm + 4e6 / 2e9 + 1e6 * 1e-9;
    QVERIFY2(std::fabs(model.workSeconds(work) - expected) < 1e-12,
             qPrintable(QString("work %1 s, expected %2 s").arg(model.workSeconds(work)).arg(expected)));
  }

  // The profile file keeps the CPU pricing's two optional fields.
  void profileRoundTripsTheCpuFields() {
    QTemporaryDir dir;
    const HardwareProfile p = loadProfile(writeProfile(dir, cpuProfile("cpu-test")));
    QVERIFY(p.calibration);
    QVERIFY(std::fabs(p.calibration->elementwise_bandwidth - 2e9) < 1);
    QVERIFY(std::fabs(p.calibration->weight_convert - 1e-9) < 1e-18);
  }

  // Every check gets a measured and a modeled step and its error; the modeled
  // one moves with the calibration (slower GEMMs and element-wise ops: longer),
  // and without the calibration it is another figure: the calibration is applied.
  void checksReportPerRowUnderTheCalibration() {
    QTemporaryDir dir;
    std::vector<LocalCheck> checks = {tinyCheck(), tinyCheck()};
    checks[1].config.strategy = Strategy::Zero3;
    checks[1].name = "zero3, 2 ranks, residual MLP 2 x 32";
    const HardwareProfile base = cpuProfile("cpu-test");
    runLocalChecks(checks, writeProfile(dir, base));
    for (const LocalCheck& c : checks) {
      QVERIFY2(c.measured_s > 0 && c.modeled_s > 0, qPrintable(QString::fromStdString(c.name)));
      QVERIFY(std::isfinite(c.errorPercent()));
      QVERIFY(std::fabs(c.errorPercent() - 100.0 * (c.modeled_s - c.measured_s) / c.measured_s) < 1e-9);
    }

    HardwareProfile slow = cpuProfile("cpu-slow");
    slow.calibration->gemm_efficiency /= 2;
    slow.calibration->elementwise_bandwidth /= 2;
    slow.calibration->weight_convert *= 2;
    HardwareProfile flat = cpuProfile("cpu-flat");
    flat.calibration.reset();
    // runLocalChecks' modeled figure is the meta run under the given profile.
    QCOMPARE(modeledSeconds(checks[0].config, writeProfile(dir, base)), checks[0].modeled_s);
    // At the shipped checks' size (modeled only: no measured run), compute
    // outweighs the collectives' latency, so the calibration's rates show.
    const RunConfig shipped = localChecks().front().config;
    const double at_base = modeledSeconds(shipped, writeProfile(dir, base));
    const double at_slow = modeledSeconds(shipped, writeProfile(dir, slow));
    const double at_flat = modeledSeconds(shipped, writeProfile(dir, flat));
    QVERIFY2(at_slow > 1.2 * at_base, qPrintable(QString("base %1 s, slow %2 s").arg(at_base).arg(at_slow)));
    QVERIFY2(at_flat != at_base, qPrintable(QString("base %1 s, flat %2 s").arg(at_base).arg(at_flat)));
  }

  void shippedChecksAreNamed() {
    const std::vector<LocalCheck> checks = localChecks();
    QVERIFY(checks.size() >= 3);
    for (const LocalCheck& c : checks) QVERIFY(!c.name.empty() && c.config.ranks >= 2);
  }
};

QTEST_GUILESS_MAIN(TestLocalValidation)
#include "test_local_validation.moc"
