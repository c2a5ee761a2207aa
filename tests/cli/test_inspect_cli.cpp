// `inspect` as a user runs it on a trace `run --trace` wrote: the CLI reads it
// with the GUI's EventStore and models. DDP's buckets fire in order, once per
// rank, and its ledger holds fp32 masters at twice the bf16 params; zero3 has
// units, no buckets, holds half the params per rank, never every unit
// unsharded, and one more with prefetch; bad input is one line, exit 2.
#include <QtTest>

#include "cli_process.h"

#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

namespace {

const QStringList kSmallModel = {"--layers", "3", "--hidden", "64", "--batch", "8"};

// The line of out that starts with prefix, or "".
QString lineStarting(const QString& out, const QString& prefix) {
  for (const QString& line : out.split('\n'))
    if (line.startsWith(prefix)) return line;
  return {};
}

// "name 123" in a peak line, -1 when absent.
qint64 peakOf(const QString& line, const QString& category) {
  const auto m = QRegularExpression(QStringLiteral(" %1 (\\d+)").arg(category)).match(line);
  return m.hasMatch() ? m.captured(1).toLongLong() : -1;
}

}  // namespace

class TestInspectCli : public QObject {
  Q_OBJECT

 private slots:
  void ddpTrace() {
    QTemporaryDir dir;
    const QString trace = dir.filePath("ddp.json");
    const CliResult run = runCli(QStringList{"run", "--strategy", "ddp", "--ranks", "2", "--steps", "2", "--bucket-mb",
                                             "0.05", "--first-bucket-mb", "0.02", "--trace", trace} + kSmallModel);
    QVERIFY2(run.exit_code == 0, qPrintable(run.err));
    const CliResult r = runCli({"inspect", trace});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.out.startsWith("run: ddp, 2 ranks, "), qPrintable(r.out));
    QVERIFY(r.out.contains("clock measured"));
    for (int rank = 0; rank < 2; ++rank) {
      const QString buckets = lineStarting(r.out, QStringLiteral("rank %1 buckets: ").arg(rank));
      QVERIFY2(buckets.contains(" fire order "), qPrintable(r.out));
      QVERIFY(!buckets.contains("never ready"));
      // Buckets are numbered in reverse parameter order, the order backward
      // readies them: every bucket fires once, bucket 0 first.
      const QStringList order = buckets.section(" fire order ", 1).split(' ', Qt::SkipEmptyParts);
      QVERIFY2(order.size() > 1, qPrintable(buckets));
      for (int i = 0; i < order.size(); ++i) QCOMPARE(order[i], QString::number(i));
      QCOMPARE(lineStarting(r.out, QStringLiteral("rank %1 units: ").arg(rank)), QStringLiteral("rank %1 units: none").arg(rank));
      const QString peaks = lineStarting(r.out, QStringLiteral("rank %1 peak bytes: ").arg(rank));
      const qint64 param = peakOf(peaks, "param");
      QVERIFY2(param > 0, qPrintable(peaks));
      QCOMPARE(peakOf(peaks, "grad"), param);           // bf16 both
      QCOMPARE(peakOf(peaks, "master"), 2 * param);     // fp32 master weights
      QCOMPARE(peakOf(peaks, "adam_m"), 2 * param);
      QVERIFY(peakOf(peaks, "bucket") > 0);
      QVERIFY(peakOf(peaks, "gathered") < 0);           // DDP gathers nothing
    }
    QVERIFY(lineStarting(r.out, "rank 2 ").isEmpty());
  }

  void zero3Trace() {
    // On the modeled clock (deterministic): prefetching keeps one more unit
    // unsharded than gathering each unit only when it is needed.
    QTemporaryDir dir;
    int most[2] = {0, 0};
    const QStringList prefetch = {"none", "both"};
    for (int i = 0; i < 2; ++i) {
      const QString trace = dir.filePath(QStringLiteral("zero3-%1.json").arg(prefetch[i]));
      const CliResult run = runCli(QStringList{"run", "--strategy", "zero3", "--ranks", "2", "--steps", "2", "--clock",
                                               "modeled", "--prefetch", prefetch[i], "--trace", trace} + kSmallModel);
      QVERIFY2(run.exit_code == 0, qPrintable(run.err));
      const CliResult r = runCli({"inspect", trace});
      QVERIFY2(r.exit_code == 0, qPrintable(r.err));
      const auto head = QRegularExpression("^run: zero3, 2 ranks, (\\d+) params, \\d+ events, clock modeled, ").match(r.out);
      QVERIFY2(head.hasMatch(), qPrintable(r.out));
      QCOMPARE(lineStarting(r.out, "rank 0 buckets: "), QString("rank 0 buckets: none"));
      const QString units = lineStarting(r.out, "rank 1 units: ");
      const auto m = QRegularExpression("^rank 1 units: (\\d+) units, step 1, at most (\\d+) unsharded at once; "
                                        "gathering [0-9.]+ [mu]s, gathered [0-9.]+ [mu]s, computing [0-9.]+ [mu]s, "
                                        "reducing [0-9.]+ [mu]s, freed [0-9.]+ [mu]s$")
                         .match(units);
      QVERIFY2(m.hasMatch(), qPrintable(r.out));
      const int count = m.captured(1).toInt();
      most[i] = m.captured(2).toInt();
      QVERIFY(count > 2);
      QVERIFY2(most[i] >= 1 && most[i] < count, qPrintable(units));  // sharding frees what it gathered
      // Each rank holds its half of the bf16 parameters, and gathers the rest unit by unit.
      const QString peaks = lineStarting(r.out, "rank 0 peak bytes: ");
      const qint64 params = head.captured(1).toLongLong();
      QCOMPARE(peakOf(peaks, "param"), params * 2 / 2);  // bf16 bytes, over 2 ranks
      QVERIFY(peakOf(peaks, "gathered") > 0);
    }
    QCOMPARE(most[1], most[0] + 1);
  }

  void badInput() {
    const CliResult none = runCli({"inspect"});
    QCOMPARE(none.exit_code, 2);
    QCOMPARE(none.err, QString("error: inspect needs a trace file: inspect TRACE.json\n"));
    const CliResult flag = runCli({"inspect", "--json"});
    QCOMPARE(flag.exit_code, 2);
    QVERIFY2(flag.err.contains("'--json'") && flag.err.count('\n') == 1, qPrintable(flag.err));
    QTemporaryDir dir;
    const QString missing = dir.filePath("missing.json");
    const CliResult absent = runCli({"inspect", missing});
    QCOMPARE(absent.exit_code, 2);
    QVERIFY2(absent.err.contains(missing) && absent.err.count('\n') == 1, qPrintable(absent.err));
    QVERIFY(absent.out.isEmpty());
  }

  void pytorchTraceSaysWhereItOpens() {
    // A gzipped trace and one whose pids exceed 32767: one line naming analyze and the window.
    const QString data = QStringLiteral(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/";
    for (const QString& name : {QString("torch_ddp_gloo_rank1.json.gz"), QString("pid_over_32767.json")}) {
      const CliResult r = runCli({"inspect", data + name});
      QCOMPARE(r.exit_code, 2);
      QVERIFY2(r.err.contains("PyTorch profiler (Kineto) trace") && r.err.contains("shardscope-cli analyze " + data + name) &&
                   r.err.contains("window") && r.err.count('\n') == 1,
               qPrintable(r.err));
      QVERIFY2(!r.err.contains("not valid JSON") && !r.err.contains("expected an integer"), qPrintable(r.err));
    }
    // A memory snapshot (pickle) and a flight-recorder dump: named as such, with analyze (issue 50: "not valid JSON").
    const QString pm = QStringLiteral(SHARDSCOPE_SOURCE_DIR) + "/tests/data/postmortem/";
    for (const auto& [name, what] : {std::pair{QString("snapshot_oom.pickle"), QString("a PyTorch memory snapshot")},
                                     std::pair{QString("fr_missing_rank/nccl_trace_rank_0"), QString("a flight-recorder dump")}}) {
      const CliResult r = runCli({"inspect", pm + name});
      QCOMPARE(r.exit_code, 2);
      QVERIFY2(r.err.contains(what) && r.err.contains("shardscope-cli analyze " + pm + name) && r.err.count('\n') == 1,
               qPrintable(r.err));
      QVERIFY2(!r.err.contains("not valid JSON"), qPrintable(r.err));
    }
    // A folder of dumps and a file no reader takes: named by the one door (input/input_detect.h).
    const QString fr = pm + QStringLiteral("fr_all_complete");
    const CliResult folder = runCli({"inspect", fr});
    QCOMPARE(folder.exit_code, 2);
    QVERIFY2(folder.err.contains(fr + " is a folder of flight-recorder dumps") && folder.err.contains("shardscope-cli analyze " + fr),
             qPrintable(folder.err));
    QTemporaryDir dir;
    const QString notes = dir.filePath(QStringLiteral("notes.txt"));
    {
      QFile f(notes);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("hello\n");
    }
    const CliResult unknown = runCli({"inspect", notes});
    QCOMPARE(unknown.exit_code, 2);
    QVERIFY2(unknown.err.contains(notes + ": starts with 'h'") && unknown.err.contains("ShardScope opens") &&
                 unknown.err.count('\n') == 1,
             qPrintable(unknown.err));
    // The profiler's memory timeline: named, with analyze, which reads it.
    const QString tl = QStringLiteral(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/memory_timeline/run.raw.json.gz";
    const CliResult t = runCli({"inspect", tl});
    QCOMPARE(t.exit_code, 2);
    QVERIFY2(t.err.contains("memory timeline") && t.err.contains("shardscope-cli analyze " + tl) && t.err.count('\n') == 1,
             qPrintable(t.err));
    const CliResult a = runCli({"analyze", tl});
    QCOMPARE(a.exit_code, 0);
    QVERIFY2(a.out.contains("peak 17.00 MiB"), qPrintable(a.out + a.err));
  }
};

QTEST_GUILESS_MAIN(TestInspectCli)
#include "test_inspect_cli.moc"
