// What a lecturer types without a display: `shardscope --help`, `--version`
// and `--screenshot` work with no DISPLAY and no QT_QPA_PLATFORM (exit 0;
// screenshots on the offscreen platform); `shardscope-cli calc` without
// --ranks answers the smallest P for ZeRO-3; `--backend meta --ranks 512`
// without --batch runs, the default global batch following the rank count.
#include <QFileInfo>
#include <QTemporaryDir>
#include <QtTest>

#include "cli_process.h"

namespace {

// The environment of an ssh session or a CI job: no display, no platform chosen.
QProcessEnvironment noDisplay() {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) env.remove(QString::fromLatin1(name));
  return env;
}

CliResult runGui(const QStringList& args, int timeout_ms = 120000) {
  QProcess p;
  p.setProcessEnvironment(noDisplay());
  p.start(QStringLiteral(SHARDSCOPE_GUI_PATH), args);
  CliResult r;
  if (!p.waitForFinished(timeout_ms)) {
    p.kill();
    p.waitForFinished();
    r.err = "timed out";
    return r;
  }
  r.exit_code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

}  // namespace

class TestHeadlessCli : public QObject {
  Q_OBJECT
 private slots:
  void guiHelpAndVersionNeedNoDisplay() {
#ifndef SHARDSCOPE_GUI_PATH
    QSKIP("built without the GUI");
#else
    const CliResult help = runGui({"--help"});
    QVERIFY2(help.exit_code == 0, qPrintable(help.err));
    QVERIFY2(help.out.contains(QStringLiteral("--screenshot")), qPrintable(help.out));
    const CliResult version = runGui({"--version"});
    QVERIFY2(version.exit_code == 0, qPrintable(version.err));
    QVERIFY2(version.out.contains(QStringLiteral(SHARDSCOPE_VERSION)), qPrintable(version.out));
#endif
  }

  void guiScreenshotNeedsNoDisplay() {
#ifndef SHARDSCOPE_GUI_PATH
    QSKIP("built without the GUI");
#else
    QTemporaryDir dir;
    const QString png = dir.filePath(QStringLiteral("window.png"));
    const CliResult shot = runGui({"--screenshot", png, "--size", "1280x720"});
    QVERIFY2(shot.exit_code == 0, qPrintable(shot.err));
    QFile file(png);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray bytes = file.readAll();
    QVERIFY(bytes.size() > 1000 && bytes.startsWith("\x89PNG"));
    // IHDR: width and height, big-endian, at bytes 16 and 20.
    const auto be32 = [&](int at) {
      return (uint32_t(uint8_t(bytes[at])) << 24) | (uint32_t(uint8_t(bytes[at + 1])) << 16) |
             (uint32_t(uint8_t(bytes[at + 2])) << 8) | uint32_t(uint8_t(bytes[at + 3]));
    };
    QCOMPARE(be32(16), 1280u);
    QCOMPARE(be32(20), 720u);
#endif
  }

  void calcWithoutRanksAnswersTheSmallestZero3P() {
    // 70e9 params × 16 B = 1120 GB of model state over 80 GB ranks: 14.
    const CliResult r = runCli({"calc", "--params", "70e9", "--capacity-gb", "80"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains(QStringLiteral("smallest P for zero3: 14 ranks")), qPrintable(r.out));
    QVERIFY2(r.out.contains(QStringLiteral("14 ranks, capacity 80 GB per rank")), qPrintable(r.out));
    const CliResult json = runCli({"calc", "--params", "70e9", "--capacity-gb", "80", "--json"});
    QCOMPARE(json.exit_code, 0);
    QVERIFY2(json.out.contains(QStringLiteral("\"zero3_min_ranks\": 14")), qPrintable(json.out));
    QVERIFY2(json.out.contains(QStringLiteral("\"ranks\": 14")), qPrintable(json.out));
    // A shard group means nothing without P.
    const CliResult group = runCli({"calc", "--params", "7B", "--shard-group", "8"});
    QCOMPARE(group.exit_code, 2);
    QVERIFY2(group.err.contains(QStringLiteral("--shard-group needs --ranks")), qPrintable(group.err));
  }

  void metaRunWithoutBatchFollowsTheRanks() {
    QTemporaryDir dir;
    const QString summary = dir.filePath(QStringLiteral("s.json"));
    const CliResult r = runCli({"run", "--backend", "meta", "--ranks", "512", "--steps", "1", "--layers", "2", "--hidden",
                                "64", "--summary", summary});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QFile f(summary);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY2(f.readAll().contains("\"batch\": 512"), "the default global batch follows 512 ranks");
    // An explicit batch is still checked.
    const CliResult bad = runCli({"run", "--backend", "meta", "--ranks", "512", "--batch", "32", "--steps", "1"});
    QCOMPARE(bad.exit_code, 2);
    QVERIFY2(bad.err.contains(QStringLiteral("--batch 32 must be a multiple of --ranks 512")), qPrintable(bad.err));
  }
};

QTEST_MAIN(TestHeadlessCli)
#include "test_headless_cli.moc"
