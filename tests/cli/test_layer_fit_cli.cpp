// The first reference text's last row: a single layer that does not fit one
// device. `shardscope-cli run` refuses such a run on the modeled clock with one
// error that names the smallest --tp that fits, the same T `calc` names (both
// ask model/layer_fit.h).
#include <QtTest>

#include <QFile>
#include <QTemporaryDir>

#include "cli_process.h"
#include "model/layer_fit.h"
#include "config/model_shape.h"

namespace {

// h100-sxm's figures with only `capacity_gb` of device memory, as a profile file.
QString smallDeviceProfile(const QTemporaryDir& dir, double capacity_gb) {
  const QString path = dir.filePath("small-gpu.json");
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return {};
  const QString json = QString(
      "{\"name\": \"small-gpu\", \"description\": \"h100-sxm with a small memory\", "
      "\"device\": {\"bf16_tflops\": 989, \"mem_bandwidth_gb_per_s\": 3350, \"mem_capacity_gb\": %1, "
      "\"compute_efficiency\": 0.6}, \"intra_node\": {\"bandwidth_gb_per_s\": 450, \"latency_us\": 3}, "
      "\"inter_node\": {\"bandwidth_gb_per_s\": 50, \"latency_us\": 6}, \"gpus_per_node\": 8, "
      "\"sources\": [\"a test device\"]}").arg(capacity_gb);
  f.write(json.toUtf8());
  return path;
}

QStringList runArgs(const QString& profile, int tp) {
  return {"run", "--model", "llama2-70b", "--backend", "meta", "--strategy", "zero3", "--ranks", "8",
          "--batch", "8", "--steps", "1", "--tp", QString::number(tp), "--profile", profile};
}

}  // namespace

class TestLayerFitCli : public QObject {
  Q_OBJECT

 private slots:
  void layerFitCounts() {
    // llama2-70b: one block is 855,654,400 params, 3.42 GB with its grads; at T = 2 half of its matrices.
    const shardscope::ModelShape shape = shardscope::presetShape("llama2-70b");
    const shardscope::LayerFit whole = shardscope::singleLayerFit(shape, 1, 80e9);
    QVERIFY(whole.fits);
    QCOMPARE(whole.block_params, int64_t(855654400));
    QCOMPARE(whole.bytes, 4 * whole.block_params);
    const shardscope::LayerFit small = shardscope::singleLayerFit(shape, 1, 2e9);
    QVERIFY(!small.fits);
    QCOMPARE(small.smallest_tp, 2);
    QCOMPARE(shardscope::singleLayerFit(shape, 1, 0.5e9).smallest_tp, 8);  // 3.42 GB / 8 < 0.5 GB
    QCOMPARE(shardscope::singleLayerFit(shape, 1, 0.1e9).smallest_tp, 0);  // not even at the 8 K/V heads
  }

  void runRefusesALayerTooBig() {
    QTemporaryDir dir;
    const QString profile = smallDeviceProfile(dir, 2);
    const CliResult r = runCli(runArgs(profile, 1));
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.startsWith("error: a single layer does not fit one device of profile 'small-gpu' (2.00 GB)"),
             qPrintable(r.err));
    QVERIFY2(r.err.contains("3.42 GB"), qPrintable(r.err));
    QVERIFY2(r.err.contains("--tp 2 is the smallest that fits"), qPrintable(r.err));
    QCOMPARE(r.err.count('\n'), 1);  // one line
    // calc names the same T for the same capacity.
    const CliResult calc = runCli({"calc", "--model", "llama2-70b", "--capacity-gb", "2"});
    QCOMPARE(calc.exit_code, 0);
    QVERIFY2(calc.out.contains("--tp 2 is the smallest that fits"), qPrintable(calc.out));
    // With that T the run goes.
    const CliResult tp2 = runCli(runArgs(profile, 2));
    QVERIFY2(tp2.exit_code == 0, qPrintable(tp2.err));
  }

  void runSaysWhenNoTpFits() {
    QTemporaryDir dir;
    const CliResult r = runCli(runArgs(smallDeviceProfile(dir, 0.1), 1));
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("no --tp up to 8 makes one fit"), qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(TestLayerFitCli)
#include "test_layer_fit_cli.moc"
