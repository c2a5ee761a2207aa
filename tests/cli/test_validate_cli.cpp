// `validate` as a user runs it: the shipped table prints each figure beside
// its prediction (or what is not modeled) and the statistics, --json repeats
// every row with predicted and error_percent; a bad table or flag is one line
// naming the field, exit 2; --local times this machine's CPU ranks both ways.
#include <QtTest>

#include "cli_process.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

class TestValidateCli : public QObject {
  Q_OBJECT

  QProcessEnvironment env() const {
    QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
    e.insert("SHARDSCOPE_RESOURCES", SHARDSCOPE_SOURCE_DIR "/resources");
    e.insert("XDG_CACHE_HOME", m_cache.path());
    return e;
  }
  QTemporaryDir m_cache;

 private slots:
  void shippedTableTextAndJson() {
    QTemporaryDir dir;
    const QString json = dir.filePath("validate.json");
    const CliResult r = runCli({"validate", "--json", json}, env());
    QVERIFY2(r.exit_code == 0, qPrintable(r.err + r.out));
    QVERIFY(r.out.contains("22B, full recompute"));
    QVERIFY(r.out.contains("GPT-3 175B, full recompute"));  // pipelines run (interleaved, 8 stages)
    QVERIFY(!r.out.contains("not modeled: pipeline parallelism"));
    QVERIFY(!r.out.contains("not modeled"));  // fp32 gradients run as --grad-dtype fp32
    QVERIFY(r.out.contains("mean absolute error"));
    QVERIFY2(r.out.contains("20 of 20 published figures modeled"), qPrintable(r.out));
    const QJsonObject o = QJsonDocument::fromJson(readFileBytes(json)).object();
    const QJsonArray rows = o.value("rows").toArray();
    QCOMPARE(rows.size(), 16);
    const QJsonObject first = rows[0].toObject();
    QCOMPARE(first.value("name").toString(), QString("22B, full recompute"));
    QCOMPARE(first.value("published").toObject().value("iteration_s").toDouble(), 1.42);
    const double predicted = first.value("predicted").toObject().value("iteration_s").toDouble();
    QVERIFY(predicted > 0);
    QCOMPARE(first.value("error_percent").toObject().value("iteration_s").toDouble(),
             std::round((predicted - 1.42) / 1.42 * 1e4) / 100);
    // The 175B row runs through its interleaved pipeline of 8 stages; the
    // parameters + optimizer figures are predicted (fp32 gradients).
    QVERIFY(rows[2].toObject().value("predicted").toObject().value("iteration_s").toDouble() > 0);
    int param_opt = 0;
    for (const QJsonValue& row : rows)
      param_opt += row.toObject().value("predicted").toObject().value("param_opt").toDouble() > 0;
    QCOMPARE(param_opt, 4);
    QCOMPARE(o.value("summary").toObject().value("time_modeled").toInt(), 8);
  }

  void badInputs_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("table");
    QTest::addColumn<QString>("expected");
    const QString row = R"({"rows": [{"name": "r", "source": "s 2022", "machine": "%1", "dtype": "bf16",
      "model": {"layers": 2, "hidden": 256, "heads": 4, "vocab": 512, "seq": 128},
      "parallel": {"gpus": 2, "tp": %2, "dp": 1}, "batch": {"global": 2, "micro": 2}, "recompute": "none",
      "published": {"iteration_s": 0.01}}]})";
    QTest::newRow("tp zero") << QStringList{} << row.arg("a100-sxm4-80gb-selene", "0") << "rows[0].parallel.tp must be a whole number >= 1";
    QTest::newRow("unknown machine") << QStringList{} << row.arg("b200", "2") << "row 'r': unknown profile 'b200'";
    QTest::newRow("not json") << QStringList{} << QString("{") << "table ";
    QTest::newRow("unknown flag") << QStringList{"--tabel", "x"} << QString() << "validate takes --table FILE";
    QTest::newRow("table without file") << QStringList{"--table"} << QString() << "--table needs a file name";
    QTest::newRow("missing table") << QStringList{"--table", "/nonexistent/t.json"} << QString() << "/nonexistent/t.json";
  }

  void badInputs() {
    QFETCH(QStringList, args);
    QFETCH(QString, table);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    QStringList all{"validate"};
    if (!table.isEmpty()) {
      QFile f(dir.filePath("t.json"));
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(table.toUtf8());
      f.close();
      all << "--table" << dir.filePath("t.json");
    }
    all << args;
    const CliResult r = runCli(all, env());
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.startsWith("error: ") && r.err.contains(expected), qPrintable(r.err));
    QCOMPARE(r.err.count('\n'), 1);
  }

  void help() {
    const CliResult r = runCli({"validate", "--help"}, env());
    QCOMPARE(r.exit_code, 0);
    QVERIFY(r.out.contains("--table FILE") && r.out.contains("--local"));
  }

  // Both clocks on this machine: three runs, each measured and modeled.
  void local() {
    QTemporaryDir dir;
    const QString json = dir.filePath("local.json");
    const CliResult r = runCli({"validate", "--local", "--json", json}, env());
    QVERIFY2(r.exit_code == 0, qPrintable(r.err + r.out));
    QVERIFY(r.out.contains("profile this-cpu: mean absolute error"));
    const QJsonArray runs = QJsonDocument::fromJson(readFileBytes(json)).object().value("local").toArray();
    QCOMPARE(runs.size(), 3);
    for (const QJsonValue& v : runs) {
      QVERIFY(v.toObject().value("measured_s").toDouble() > 0);
      QVERIFY(v.toObject().value("modeled_s").toDouble() > 0);
    }
  }
};

QTEST_APPLESS_MAIN(TestValidateCli)
#include "test_validate_cli.moc"
