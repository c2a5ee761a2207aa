// --backend cuda --launch processes: one worker process per GPU, each rank's
// NCCL communicators joined with ncclCommInitRank under an id that the group's
// first member puts in the rendezvous store. On a machine with GPUs the run
// matches the same run with rank threads (losses, traffic, memory peaks); with
// fewer GPUs than ranks every rank process refuses, naming the flags; without
// a GPU (or without the CUDA build) the device part skips, and the processes
// run still fails fast with the runtime's reason instead of hanging.
#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include "cli_process.h"

namespace {

const QStringList kSmall = {"--backend", "cuda", "--layers", "2", "--hidden", "64", "--batch", "8", "--steps", "3"};

bool noDevice(const CliResult& r) {
  return r.err.contains("no CUDA device is visible") || r.err.contains("needs the CUDA backend");
}

}  // namespace

class TestCudaProcesses : public QObject {
  Q_OBJECT

 private slots:
  // Runs everywhere: a rank process that cannot open its GPU ends the run
  // with that reason, and the launcher does not wait for the others.
  void withoutADeviceTheRunFailsFast() {
    const CliResult threads = runCli(QStringList{"run", "--ranks", "1"} + kSmall);
    if (!noDevice(threads)) QSKIP("a CUDA device is visible: the device tests below cover this machine");
    QElapsedTimer timer;
    timer.start();
    const CliResult r = runCli(QStringList{"run", "--ranks", "2", "--launch", "processes"} + kSmall, 60000);
    QVERIFY2(r.exit_code != 0 && r.exit_code != -1, qPrintable(r.err));
    QVERIFY2(noDevice(r), qPrintable(r.err));
    QVERIFY2(r.err.contains("--backend cuda"), qPrintable(r.err));
    QVERIFY(timer.elapsed() < 60000);
  }

  void processesMatchThreads_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<QStringList>("flags");
    QTest::newRow("ddp, 1 rank") << 1 << QStringList{"--strategy", "ddp"};
    QTest::newRow("ddp, 2 ranks") << 2 << QStringList{"--strategy", "ddp"};
    QTest::newRow("zero3, 2 ranks") << 2 << QStringList{"--strategy", "zero3"};
    QTest::newRow("hsdp 2x2") << 4 << QStringList{"--strategy", "hsdp", "--shard-group", "2"};
  }

  void processesMatchThreads() {
    QFETCH(int, ranks);
    QFETCH(QStringList, flags);
    QTemporaryDir dir;
    QMap<QString, QJsonObject> s;
    for (const QString launch : {"threads", "processes"}) {
      const QString path = dir.filePath(launch + ".json");
      const CliResult r = runCli(QStringList{"run", "--ranks", QString::number(ranks), "--launch", launch} + kSmall +
                                     flags + QStringList{"--summary", path},
                                 300000);
      if (r.exit_code != 0 && noDevice(r)) QSKIP(qPrintable("no CUDA device or no CUDA build: " + r.err.trimmed().left(300)));
      if (r.exit_code != 0 && r.err.contains("visible GPU"))
        QSKIP(qPrintable(QString::number(ranks) + " ranks need " + QString::number(ranks) +
                         " GPUs: " + r.err.trimmed().left(300)));
      QVERIFY2(r.exit_code == 0, qPrintable(launch + ": " + r.err));
      s[launch] = QJsonDocument::fromJson(readFileBytes(path)).object();
    }
    const QJsonArray la = s["threads"].value("steps").toArray(), lb = s["processes"].value("steps").toArray();
    QCOMPARE(lb.size(), 3);
    for (int i = 0; i < 3; ++i) {
      // The same NCCL reductions in the same order: bf16 sums agree closely.
      const double a = la[i].toObject().value("loss").toDouble(), b = lb[i].toObject().value("loss").toDouble();
      QVERIFY2(std::abs(a - b) <= 1e-3 * std::max(1.0, std::abs(a)),
               qPrintable(QString("step %1: threads loss %2, processes %3").arg(i).arg(a).arg(b)));
    }
    const QJsonArray ra = s["threads"].value("per_rank").toArray(), rb = s["processes"].value("per_rank").toArray();
    QCOMPARE(rb.size(), ranks);
    for (int r = 0; r < ranks; ++r)
      for (const char* key : {"comm_bytes", "model_state_peak_bytes"})
        QCOMPARE(rb[r].toObject().value(key), ra[r].toObject().value(key));
  }
};

QTEST_APPLESS_MAIN(TestCudaProcesses)
#include "test_cuda_processes.moc"
