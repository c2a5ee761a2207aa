// Limits as the CLI user meets them: a profile whose figures are nonsense
// (1e-300 TFLOPS, an efficiency of 5e-324, a link of 1e-300 GB/s) once ran and
// reported an MFU of 1e+299; it is refused up front, exit 2, one line naming
// the field. A FIFO or /dev/zero given as a profile or a trace is refused, as
// is a trace whose op ends before it begins.
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>
#include <unistd.h>

#include "cli_process.h"

namespace {

QString writeProfile(const QTemporaryDir& dir, const QString& name, const QString& device, const QString& inter) {
  const QString path = dir.filePath(name + ".json");
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return {};
  f.write(QStringLiteral(R"({"name": "%1", "description": "a test", "device": {%2, "mem_bandwidth_gb_per_s": 2000,
    "mem_capacity_gb": 40}, "intra_node": {"bandwidth_gb_per_s": 300, "latency_us": 2}, "inter_node": %3,
    "gpus_per_node": 8, "sources": ["a test"]})")
              .arg(name, device, inter)
              .toUtf8());
  return path;
}

const QStringList kRun = {"run", "--strategy", "ddp", "--ranks", "2", "--steps", "1", "--clock", "modeled", "--backend", "meta"};

}  // namespace

class TestLimitsCli : public QObject {
  Q_OBJECT

 private slots:
  void implausibleProfileRefused_data() {
    QTest::addColumn<QString>("device");
    QTest::addColumn<QString>("inter");
    QTest::addColumn<QString>("field");
    const QString link = R"({"bandwidth_gb_per_s": 25, "latency_us": 8})";
    QTest::newRow("tflops 1e-300") << R"("bf16_tflops": 1e-300, "compute_efficiency": 0.5)" << link << "device.bf16_tflops must be at least";
    QTest::newRow("efficiency 5e-324") << R"("bf16_tflops": 100, "compute_efficiency": 5e-324)" << link
                                       << "device.compute_efficiency must be at least";
    QTest::newRow("bandwidth 1e-300") << R"("bf16_tflops": 100, "compute_efficiency": 0.5)"
                                      << R"({"bandwidth_gb_per_s": 1e-300, "latency_us": 8})"
                                      << "inter_node.bandwidth_gb_per_s must be at least";
  }

  void implausibleProfileRefused() {
    QFETCH(QString, device);
    QFETCH(QString, inter);
    QFETCH(QString, field);
    QTemporaryDir dir;
    const QString path = writeProfile(dir, QStringLiteral("tiny"), device, inter);
    QVERIFY(!path.isEmpty());
    const CliResult r = runCli(kRun + QStringList{"--profile", path});
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.startsWith("error: ") && r.err.contains(field), qPrintable(r.err));
    QVERIFY2(r.err.contains(path), qPrintable(r.err));
    QCOMPARE(r.err.count('\n'), 1);
    QVERIFY2(!r.out.contains("MFU"), qPrintable(r.out));
  }

  void nonRegularFilesRefused() {
    QTemporaryDir dir;
    const QString fifo = dir.filePath(QStringLiteral("pipe.json"));
    QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
    const QString zero = dir.filePath(QStringLiteral("zero.json"));
    QCOMPARE(::symlink("/dev/zero", zero.toLocal8Bit().constData()), 0);
    for (const QString& path : {fifo, zero}) {
      const CliResult profile = runCli(kRun + QStringList{"--profile", path}, 30000);
      QCOMPARE(profile.exit_code, 2);
      QVERIFY2(profile.err.contains(path + ": not a regular file"), qPrintable(profile.err));
      const CliResult inspect = runCli({"inspect", path}, 30000);
      QCOMPARE(inspect.exit_code, 2);
      QVERIFY2(inspect.err.contains("not a regular file"), qPrintable(inspect.err));
    }
  }

  void negativeDurationRefused() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("neg.trace.json"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"traceEvents":[{"ph":"X","cat":"forward","name":"forward","pid":0,"tid":1,"ts":10,"dur":-4}]})");
    f.close();
    const CliResult r = runCli({"inspect", path}, 30000);
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("traceEvents[0].dur: expected a duration >= 0"), qPrintable(r.err));
    QCOMPARE(r.err.count('\n'), 1);
  }
};

QTEST_APPLESS_MAIN(TestLimitsCli)
#include "test_limits_cli.moc"
