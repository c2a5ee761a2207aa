// Preset files read by core (the GUI adapts them, fuzzing calls them): every
// shipped preset reads and writes back to itself; a key given twice is an
// error naming its path, as in profiles; the number of runs and the steps of
// each are bounded with the limit in the message; only regular files under
// the size cap are read.
#include <QtTest>

#include <sys/stat.h>

#include <QDir>
#include <QTemporaryDir>

#include "common/errors.h"
#include "config/preset_file.h"

using namespace shardscope;

namespace {

const std::string kRun = R"({"label": "a", "config": {"strategy": "ddp", "ranks": 2, "batch": 4}})";

std::string presetWithRuns(const std::vector<std::string>& runs) {
  std::string json = R"({"title": "t", "text": "x", "runs": [)";
  for (size_t i = 0; i < runs.size(); ++i) json += (i ? ", " : "") + runs[i];
  return json + "]}";
}

QString refusal(const std::string& json) {
  try {
    parsePresetJson(json, "bad.json");
  } catch (const ConfigError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace

class TestPresetFile : public QObject {
  Q_OBJECT

 private slots:
  void shippedPresetsReadAndWriteBack() {
    const QDir dir(QStringLiteral(SHARDSCOPE_SOURCE_DIR "/resources/presets"));
    const QStringList files = dir.entryList({QStringLiteral("*.json")}, QDir::Files);
    QVERIFY(files.size() >= 7);
    for (const QString& name : files) {
      const PresetFile p = readPresetFile(dir.filePath(name).toStdString());
      QVERIFY(!p.title.empty() && p.text.size() > 200);
      // Every shipped preset is a lesson: its one-line question ends in '?'.
      QVERIFY2(p.question.size() > 20 && p.question.back() == '?', qPrintable(name));
      QVERIFY(!p.runs.empty());
      for (const PresetFileRun& run : p.runs) {
        QCOMPARE(run.config.clock, ClockKind::Modeled);  // presets default to the deterministic clock
        QVERIFY(!run.label.empty());
      }
      const PresetFile back = parsePresetJson(presetFileJson(p), name.toStdString());
      QCOMPARE(back.runs.size(), p.runs.size());
      for (size_t i = 0; i < p.runs.size(); ++i) {
        QCOMPARE(runArgs(back.runs[i].config), runArgs(p.runs[i].config));
        QCOMPARE(back.runs[i].label, p.runs[i].label);
      }
      QCOMPARE(back.view, p.view);
      QCOMPARE(back.question, p.question);
      QCOMPARE(back.expect_error, p.expect_error);
    }
  }

  // The lesson's question: optional, a non-empty string on one line.
  void aQuestionIsOneLineOfText() {
    const std::string run = "\"runs\": [" + kRun + "]}";
    QCOMPARE(parsePresetJson(R"({"title": "t", "question": " Why? ", "text": "x", )" + run, "q.json").question, std::string("Why?"));
    QCOMPARE(parsePresetJson(R"({"title": "t", "text": "x", )" + run, "q.json").question, std::string());
    QVERIFY(refusal(R"({"title": "t", "question": 3, "text": "x", )" + run).contains(QStringLiteral("field \"question\" must be a non-empty string")));
    QVERIFY(refusal(R"({"title": "t", "question": "a\nb", "text": "x", )" + run).contains(QStringLiteral("field \"question\" must be one line")));
  }

  void aRepeatedKeyIsNamedByItsPath_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("expected");
    QTest::newRow("top") << QString::fromStdString(R"({"title": "t", "title": "u", "text": "x", "runs": [)" + kRun + "]}")
                         << QStringLiteral("bad.json: field \"title\" appears twice");
    QTest::newRow("config") << QString::fromStdString(presetWithRuns(
                                   {kRun, R"({"config": {"strategy": "ddp", "ranks": 2, "ranks": 4, "batch": 4}})"}))
                            << QStringLiteral("bad.json: field \"runs[1].config.ranks\" appears twice");
    QTest::newRow("run") << QString::fromStdString(presetWithRuns({R"({"label": "a", "label": "b", "config": {}})"}))
                         << QStringLiteral("field \"runs[0].label\" appears twice");
  }

  void aRepeatedKeyIsNamedByItsPath() {
    QFETCH(QString, json);
    QFETCH(QString, expected);
    const QString message = refusal(json.toStdString());
    QVERIFY2(message.contains(expected), qPrintable(message));
    QVERIFY(!message.contains(QLatin1Char('\n')));
  }

  void runsAndStepsAreBounded() {
    std::vector<std::string> many(kMaxPresetRuns + 1, kRun);
    QString message = refusal(presetWithRuns(many));
    QVERIFY2(message.contains(QStringLiteral("bad.json: runs: a preset may have at most %1 runs, got %2")
                                  .arg(kMaxPresetRuns)
                                  .arg(kMaxPresetRuns + 1)),
             qPrintable(message));
    many.resize(kMaxPresetRuns);
    QVERIFY2(refusal(presetWithRuns(many)).isEmpty(), qPrintable(refusal(presetWithRuns(many))));

    message = refusal(presetWithRuns({kRun, R"({"config": {"ranks": 2, "batch": 4, "steps": 32768}})"}));
    QVERIFY2(message.contains(QStringLiteral("bad.json: runs[1].config.steps: a preset run may have at most %1 steps")
                                  .arg(kMaxPresetSteps)),
             qPrintable(message));
    QVERIFY2(message.endsWith(QStringLiteral("got 32768")), qPrintable(message));
  }

  void deepNestingIsRefused() {
    const std::string deep = R"({"title": "t", "text": "x", "runs": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
    const QString message = refusal(deep);
    QVERIFY2(message.contains(QStringLiteral("nested deeper than")), qPrintable(message));
  }

  void onlyRegularFilesUnderTheCapAreRead() {
    QTemporaryDir dir;
    const auto refusedFile = [](const std::string& path) {
      try {
        readPresetFile(path);
      } catch (const ConfigError& e) {
        return QString::fromStdString(e.what());
      }
      return QString();
    };
    QVERIFY2(refusedFile("/dev/zero").contains(QStringLiteral("not a regular file")), qPrintable(refusedFile("/dev/zero")));
    const QString fifo = dir.filePath("p.json");
    QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
    QVERIFY(refusedFile(fifo.toStdString()).contains(QStringLiteral("not a regular file")));
    QVERIFY(refusedFile(dir.filePath("none.json").toStdString()).contains(QStringLiteral("no such file")));
    QFile big(dir.filePath("big.json"));
    QVERIFY(big.open(QIODevice::WriteOnly));
    big.resize(17 << 20);
    big.close();
    QVERIFY2(refusedFile(big.fileName().toStdString()).contains(QStringLiteral("SHARDSCOPE_MAX_PRESET_MB")),
             qPrintable(refusedFile(big.fileName().toStdString())));
  }
};

QTEST_APPLESS_MAIN(TestPresetFile)
#include "test_preset_file.moc"
