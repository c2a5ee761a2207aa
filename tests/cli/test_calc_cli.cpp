// `calc` and `profiles` as a user runs them: calc --json parses and carries
// the seed's numbers for Llama 2 70B; the text table says which stage fits and
// that activations are extra; each bad flag is one line naming it, exit 2;
// profiles lists the shipped files and reports a broken one (exit 2).
#include <QtTest>

#include "cli_process.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTemporaryDir>

namespace {

QJsonObject parseObject(const QString& text) {
  QJsonParseError error;
  const QJsonDocument doc = QJsonDocument::fromJson(text.toUtf8(), &error);
  if (error.error != QJsonParseError::NoError) qWarning() << error.errorString() << text;
  return doc.object();
}

}  // namespace

class TestCalcCli : public QObject {
  Q_OBJECT

 private slots:
  void llama70bJson() {
    const CliResult r = runCli({"calc", "--model", "llama2-70b", "--ranks", "64", "--json"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const QJsonObject o = parseObject(r.out);
    QCOMPARE(o.value("params").toInteger(), qint64(68'976'648'192));
    QCOMPARE(o.value("model").toString(), QString("llama2-70b"));
    QCOMPARE(o.value("ranks").toInt(), 64);
    QVERIFY(o.value("shard_group").isNull());
    QCOMPARE(o.value("capacity_gb").toDouble(), 80.0);
    QCOMPARE(o.value("bytes_per_gb").toDouble(), 1e9);
    QCOMPARE(o.value("smallest_fitting_stage").toString(), QString("zero3"));
    QCOMPARE(o.value("zero3_min_ranks").toInt(), 14);
    QCOMPARE(o.value("activations_included").toBool(true), false);
    QVERIFY(o.value("note").toString().contains("activations"));

    const QJsonArray stages = o.value("stages").toArray();
    QStringList names;
    for (const QJsonValue& v : stages) names << v.toObject().value("stage").toString();
    QCOMPARE(names, (QStringList{"ddp", "zero1", "zero2", "zero3"}));
    const QJsonObject ddp = stages[0].toObject(), zero3 = stages[3].toObject();
    QCOMPARE(ddp.value("bytes_per_param").toDouble(), 16.0);
    QCOMPARE(ddp.value("bytes_per_rank").toInteger(), qint64(16) * 68'976'648'192);
    QCOMPARE(ddp.value("fits").toBool(true), false);
    QCOMPARE(zero3.value("bytes_per_param").toDouble(), 0.25);
    QCOMPARE(zero3.value("gb_per_rank").toDouble(), 16.0 * 1'077'760'128 / 1e9);  // ceil(N/64) params
    QCOMPARE(zero3.value("fits").toBool(), true);
    QCOMPARE(stages[1].toObject().value("bytes_per_param").toDouble(), 4.0 + 12.0 / 64);
  }

  // One meaning per number: under TP, calc's per-model-param figure is the
  // one `run` reports for the same layout (its per-slice one is T times it).
  void tensorParallelBytesPerParamIsRunsFigure() {
    const CliResult calc = runCli({"calc", "--model", "llama2-7b", "--ranks", "8", "--tp", "2", "--json"});
    QVERIFY2(calc.exit_code == 0, qPrintable(calc.err));
    QJsonObject zero3;
    for (const QJsonValue& v : parseObject(calc.out).value("stages").toArray())
      if (v.toObject().value("stage").toString() == "zero3") zero3 = v.toObject();
    QCOMPARE(zero3.value("bytes_per_param").toDouble(), 4.0);        // 16/P of the slice, P = 4
    QCOMPARE(zero3.value("bytes_per_model_param").toDouble(), 2.0);  // (16/P)/T
    QTemporaryDir dir;
    const QString summary = dir.filePath("s.json");
    const CliResult run = runCli({"run", "--backend", "meta", "--model", "llama2-7b", "--strategy", "zero3", "--ranks", "8",
                                  "--tp", "2", "--batch", "8", "--steps", "1", "--clock", "modeled", "--summary", summary});
    QVERIFY2(run.exit_code == 0, qPrintable(run.err));
    QFile f(summary);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject rank0 = QJsonDocument::fromJson(f.readAll()).object().value("per_rank").toArray().at(0).toObject();
    QCOMPARE(rank0.value("expected_model_state_bytes_per_param").toDouble(), zero3.value("bytes_per_model_param").toDouble());
    const CliResult text = runCli({"calc", "--model", "llama2-7b", "--ranks", "8", "--tp", "2"});
    QVERIFY2(text.out.contains("B/slice param") && text.out.contains("B/model param"), qPrintable(text.out));
  }

  void hsdpRow() {
    const CliResult r = runCli({"calc", "--params", "70B", "--ranks", "64", "--shard-group", "16", "--json"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const QJsonObject o = parseObject(r.out);
    QCOMPARE(o.value("shard_group").toInt(), 16);
    QCOMPARE(o.value("stages").toArray().size(), 5);
    QCOMPARE(o.value("smallest_fitting_stage").toString(), QString("hsdp"));  // 70 GB <= 80 GB
  }

  void textTable() {
    const CliResult r = runCli({"calc", "--params", "70B", "--ranks", "13"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("1120.00"), qPrintable(r.out));  // ddp GB/rank
    QVERIFY(r.out.contains("no stage fits 80 GB per rank on 13 ranks"));
    QVERIFY(r.out.contains("zero3 fits 80 GB from 14 ranks up"));
    QVERIFY(r.out.contains("1 GB = 1e9 bytes"));
    QVERIFY(r.out.contains("activations"));
    QVERIFY(r.err.isEmpty());
  }

  void badInput_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("flag");
    QTest::newRow("params not a number") << QStringList{"--params", "7X", "--ranks", "8"} << "--params";
    QTest::newRow("params zero") << QStringList{"--params", "0", "--ranks", "8"} << "--params";
    QTest::newRow("ranks zero") << QStringList{"--params", "7B", "--ranks", "0"} << "--ranks";
    QTest::newRow("ranks text") << QStringList{"--params", "7B", "--ranks", "many"} << "--ranks";
    // Without --ranks calc answers the smallest P for zero3 (test_headless_cli);
    // the hsdp row still needs P.
    QTest::newRow("ranks missing for hsdp") << QStringList{"--params", "7B", "--shard-group", "8"} << "--ranks";
    QTest::newRow("capacity negative") << QStringList{"--params", "7B", "--ranks", "8", "--capacity-gb", "-1"}
                                       << "--capacity-gb";
    QTest::newRow("unknown model") << QStringList{"--model", "gpt5", "--ranks", "8"} << "--model";
    QTest::newRow("params and model") << QStringList{"--params", "7B", "--model", "llama2-7b", "--ranks", "8"}
                                      << "--params or --model";
    QTest::newRow("neither params nor model") << QStringList{"--ranks", "8"} << "--params";
    QTest::newRow("group does not divide") << QStringList{"--params", "7B", "--ranks", "64", "--shard-group", "3"}
                                           << "--shard-group";
    QTest::newRow("group above ranks") << QStringList{"--params", "7B", "--ranks", "4", "--shard-group", "8"}
                                       << "--shard-group";
    QTest::newRow("unknown flag") << QStringList{"--params", "7B", "--ranks", "8", "--bogus", "1"} << "--bogus";
    QTest::newRow("value missing") << QStringList{"--params", "7B", "--ranks"} << "--ranks needs a value";
  }

  void badInput() {
    QFETCH(QStringList, args);
    QFETCH(QString, flag);
    const CliResult r = runCli(QStringList{"calc"} + args);
    QCOMPARE(r.exit_code, 2);
    QVERIFY(r.out.isEmpty());
    QVERIFY2(r.err.startsWith("error: ") && r.err.contains(flag), qPrintable(r.err));
    QCOMPARE(r.err.count('\n'), 1);  // one line
  }

  // Listing never measures: with an empty cache this-cpu is "not calibrated".
  void profilesJson() {
    QTemporaryDir cache;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("SHARDSCOPE_RESOURCES", SHARDSCOPE_SOURCE_DIR "/resources");
    env.insert("XDG_CACHE_HOME", cache.path());
    const CliResult r = runCli({"profiles", "--json"}, env);
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const QJsonObject o = parseObject(r.out);
    QStringList names;
    for (const QJsonValue& v : o.value("profiles").toArray()) names << v.toObject().value("name").toString();
    QCOMPARE(names, (QStringList{"a100-40gb-pcie", "a100-sxm4-80gb-selene", "cluster-25gbe", "h100-sxm", "h200",
                                 "rtx4090-pcie"}));
    const QJsonObject h100 = o.value("profiles").toArray()[3].toObject();
    QCOMPARE(h100.value("device").toObject().value("bf16_tflops").toDouble(), 989.0);
    QCOMPARE(h100.value("inter_node").toObject().value("bandwidth_gb_per_s").toDouble(), 50.0);
    // The Selene profile's cost-model constants come back in the file's units.
    const QJsonObject selene = o.value("profiles").toArray()[1].toObject().value("calibration").toObject();
    QCOMPARE(selene.value("sms").toInt(), 108);
    QCOMPARE(selene.value("intra_node_busbw_gb_per_s").toDouble(), 210.0);
    QCOMPARE(o.value("not_calibrated").toArray(), QJsonArray{"this-cpu"});
    QVERIFY(o.value("errors").toArray().isEmpty());
    QVERIFY(!QDir(cache.filePath("shardscope")).exists());
  }

  void brokenProfileReported() {
    QTemporaryDir res, cache;
    QVERIFY(QDir(res.path()).mkpath("profiles"));
    QFile f(res.filePath("profiles/my-gpu.json"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"name": "my-gpu", "description": "", "device": {"bf16_tflops": 100, "mem_bandwidth_gb_per_s": 1000,
      "mem_capacity_gb": 24, "compute_efficiency": 0.5}, "intra_node": {"bandwidth_gb_per_s": -3, "latency_us": 5},
      "inter_node": {"bandwidth_gb_per_s": 3, "latency_us": 5}, "gpus_per_node": 4, "sources": []})");
    f.close();
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("SHARDSCOPE_RESOURCES", res.path());
    env.insert("XDG_CACHE_HOME", cache.path());
    const CliResult r = runCli({"profiles"}, env);
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("my-gpu.json: intra_node.bandwidth_gb_per_s must be a positive number"), qPrintable(r.err));
    QVERIFY(r.out.contains("this-cpu"));
  }
};

QTEST_APPLESS_MAIN(TestCalcCli)
#include "test_calc_cli.moc"
