// `calc` with a mesh, as a user runs it: the per-stage table and its JSON for
// a pipelined Llama 2 7B, --fit's answer and the candidates it tried,
// --compare-schedules' three rows, and one line naming the flag for each bad value.
#include <QtTest>

#include "cli_process.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace {

QJsonObject parseObject(const QString& text) {
  QJsonParseError error;
  const QJsonDocument doc = QJsonDocument::fromJson(text.toUtf8(), &error);
  if (error.error != QJsonParseError::NoError) qWarning() << error.errorString() << text;
  return doc.object();
}

const QStringList kSevenB = {"calc", "--model", "llama2-7b", "--ranks", "8", "--tp", "2", "--pp", "4",
                             "--microbatches", "16"};

}  // namespace

class TestCalcStagesCli : public QObject {
  Q_OBJECT

 private slots:
  void stagePlanJson() {
    const CliResult r = runCli(kSevenB + QStringList{"--json"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const QJsonObject plan = parseObject(r.out).value("plan").toObject();
    QCOMPARE(plan.value("model").toString(), QString("llama2-7b"));
    QCOMPARE(plan.value("tp").toInt(), 2);
    QCOMPARE(plan.value("pp").toInt(), 4);
    QCOMPARE(plan.value("dp").toInt(), 1);
    QCOMPARE(plan.value("schedule").toString(), QString("1f1b"));
    QCOMPARE(plan.value("micro_batch").toInt(), 1);
    QCOMPARE(plan.value("global_batch").toInt(), 16);
    const QJsonArray stages = plan.value("stages").toArray();
    QCOMPARE(stages.size(), 4);
    // 1F1B: stage k holds S − k microbatches; the first stage is the most loaded.
    for (int k = 0; k < 4; ++k) QCOMPARE(stages[k].toObject().value("in_flight").toInt(), 4 - k);
    QCOMPARE(plan.value("most_loaded_stage").toInt(), 0);
    for (const QJsonValue& v : stages) {
      const QJsonObject s = v.toObject();
      // The peak holds the model states and the activation peak, and at
      // most the largest buffer beside them (the last stage's head is freed
      // before its blocks' gradients are booked).
      const double model = s.value("model_state_bytes").toDouble(), activations = s.value("activation_bytes").toDouble();
      const double peak = s.value("peak_bytes").toDouble();
      QVERIFY(peak >= model + activations);
      QVERIFY(peak <= model + activations + s.value("buffer_bytes").toDouble());
    }
    QVERIFY(plan.value("fits").toBool());
  }

  void stagePlanText() {
    const CliResult r = runCli(kSevenB);
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("8 GPUs = TP 2 x PP 4 x DP 1") && r.out.contains("most loaded: stage 0") &&
                 r.out.contains("bubble (formula)") && r.out.contains("the embedding, blocks"),
             qPrintable(r.out));
    QVERIFY(!r.out.contains("seed"));
  }

  void fitAnswersTheSmallestProduct() {
    const CliResult r = runCli({"calc", "--model", "llama2-70b", "--ranks", "64", "--strategy", "zero1",
                                "--activation-checkpointing", "selective", "--sp", "on", "--fit", "--json"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const QJsonObject o = parseObject(r.out);
    const QJsonObject fit = o.value("fit").toObject();
    const QJsonObject chosen = fit.value("chosen").toObject();
    const QJsonArray tried = fit.value("tried").toArray();
    QVERIFY(!tried.isEmpty());
    const int product = chosen.value("tp").toInt() * chosen.value("pp").toInt();
    for (const QJsonValue& v : tried) {
      const QJsonObject t = v.toObject();
      QVERIFY(t.value("tp").toInt() * t.value("pp").toInt() <= product);
      // Every stage's peak; the most loaded one's is the candidate's.
      if (!t.value("refused").isNull()) continue;
      const QJsonArray peaks = t.value("stage_peak_bytes").toArray();
      QCOMPARE(peaks.size(), t.value("pp").toInt());
      double top = 0;
      for (const QJsonValue& p : peaks) top = std::max(top, p.toDouble());
      QCOMPARE(top, t.value("peak_bytes").toDouble());
    }
    QCOMPARE(o.value("plan").toObject().value("tp").toInt(), chosen.value("tp").toInt());
    QVERIFY(o.value("plan").toObject().value("fits").toBool());
    const CliResult text = runCli({"calc", "--model", "llama2-70b", "--ranks", "64", "--strategy", "zero1",
                                   "--activation-checkpointing", "selective", "--sp", "on", "--fit"});
    QVERIFY2(text.out.contains("answer: --tp ") && text.out.contains("<- chosen") &&
                 text.out.contains("the smaller T"),
             qPrintable(text.out));
  }

  void compareSchedules() {
    const CliResult r = runCli({"calc", "--model", "gpt", "--layers", "8", "--hidden", "256", "--heads", "4", "--seq",
                                "128", "--vocab", "256", "--ranks", "4", "--pp", "4", "--microbatches", "8",
                                "--compare-schedules", "--json"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const QJsonArray rows = parseObject(r.out).value("schedules").toArray();
    QCOMPARE(rows.size(), 3);
    QStringList names;
    for (const QJsonValue& v : rows) {
      const QJsonObject row = v.toObject();
      names << row.value("schedule").toString();
      QVERIFY(row.value("refused").isNull());
      QVERIFY(row.value("step_ms").toDouble() > 0);
      QCOMPARE(row.value("stages").toArray().size(), 4);
    }
    QCOMPARE(names, (QStringList{"gpipe", "1f1b", "interleaved"}));
  }

  void badInput_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("flag");
    const QStringList m = {"--model", "llama2-7b", "--ranks", "8"};
    QTest::newRow("capacity negative") << m + QStringList{"--pp", "2", "--capacity-gb", "-1"} << "--capacity-gb";
    QTest::newRow("micro-batch zero") << m + QStringList{"--pp", "2", "--micro-batch", "0"} << "--micro-batch";
    QTest::newRow("fit with tp") << m + QStringList{"--fit", "--tp", "2"} << "--fit";
    QTest::newRow("params with pp") << QStringList{"--params", "7B", "--ranks", "8", "--pp", "2"} << "--params";
    QTest::newRow("ranks missing") << QStringList{"--model", "llama2-7b", "--pp", "2"} << "--ranks";
    QTest::newRow("schedule unknown") << m + QStringList{"--pp", "2", "--pp-schedule", "zigzag"} << "--pp-schedule";
    QTest::newRow("pp does not divide") << m + QStringList{"--pp", "3"} << "--pp 3";
    QTest::newRow("compare without stages") << m + QStringList{"--compare-schedules"} << "--pp 2 or more";
    QTest::newRow("not a calc flag") << m + QStringList{"--pp", "2", "--batch", "8"} << "--batch";
    QTest::newRow("mlp has no plan") << QStringList{"--model", "mlp", "--ranks", "2", "--pp", "2"} << "--model";
  }
  void badInput() {
    QFETCH(QStringList, args);
    QFETCH(QString, flag);
    const CliResult r = runCli(QStringList{"calc"} + args);
    QCOMPARE(r.exit_code, 2);
    QVERIFY(r.out.isEmpty());
    QVERIFY2(r.err.startsWith("error: ") && r.err.contains(flag), qPrintable(r.err));
    QCOMPARE(r.err.count('\n'), 1);
  }
};

QTEST_GUILESS_MAIN(TestCalcStagesCli)
#include "test_calc_stages_cli.moc"
