// A modeled run's trace is a pure function of its config: these runs must
// write exactly the bytes stored in tests/data/golden/, one per strategy and
// backend. The files were written before the run description became a typed
// table, so a refactoring that changes a trace (a key, its order, a number's
// text, an event) fails here and names the first differing byte.
//
// A deliberate format change regenerates them: SHARDSCOPE_UPDATE_GOLDEN=1.
//
// The losses in them come from OpenBLAS, whose kernels differ by CPU (an
// AVX-512 machine sums in another order and moves the 8th digit): the runs
// pin its AVX2 kernels, which every x86-64 machine with AVX2 runs the same.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>

namespace {

struct GoldenCase {
  const char* name;
  QStringList flags;
};

const QStringList kSmall = {"--clock", "modeled", "--ranks", "4", "--layers", "3", "--hidden", "64",
                            "--batch", "8",       "--steps", "2"};

QList<GoldenCase> cases() {
  return {
      {"ddp", QStringList{"--strategy", "ddp", "--bucket-mb", "0.05", "--first-bucket-mb", "0.02"} + kSmall},
      {"zero1", QStringList{"--strategy", "zero1"} + kSmall},
      {"zero2", QStringList{"--strategy", "zero2"} + kSmall},
      {"zero3", QStringList{"--strategy", "zero3"} + kSmall},
      {"fsdp-no-prefetch", QStringList{"--strategy", "fsdp", "--prefetch", "none", "--unit-blocks", "2"} + kSmall},
      {"hsdp", QStringList{"--strategy", "hsdp", "--shard-group", "2", "--reshard-after-forward", "off"} + kSmall},
      {"gpt-zero3-25gbe",
       {"--strategy", "zero3", "--clock", "modeled", "--profile", "cluster-25gbe", "--model", "gpt", "--layers", "2",
        "--hidden", "32", "--heads", "2", "--seq", "16", "--ranks", "2", "--batch", "4", "--steps", "1"}},
      {"meta-ddp-gpt2", {"--backend", "meta", "--model", "gpt2-124m", "--strategy", "ddp", "--ranks", "4", "--batch",
                         "16", "--steps", "1"}},
  };
}

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

}  // namespace

class TestGoldenTraces : public QObject {
  Q_OBJECT

 private slots:
  void modeledTraceIsByteIdentical_data() {
    QTest::addColumn<QStringList>("flags");
    QTest::addColumn<QString>("name");
    for (const GoldenCase& c : cases()) QTest::newRow(c.name) << c.flags << QString(c.name);
  }

  void modeledTraceIsByteIdentical() {
    QFETCH(QStringList, flags);
    QFETCH(QString, name);
    QTemporaryDir dir;
    const QString trace = dir.filePath("t.trace.json");
    QProcess p;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx2")) {
      QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
      env.insert("OPENBLAS_CORETYPE", "Haswell");
      p.setProcessEnvironment(env);
    }
#endif
    p.start(SHARDSCOPE_CLI_PATH, QStringList{"run"} + flags + QStringList{"--trace", trace});
    QVERIFY2(p.waitForFinished(120000), "shardscope-cli run timed out");
    QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, p.readAllStandardError().constData());
    const QByteArray got = readAll(trace);
    QVERIFY(!got.isEmpty());

    const QString golden = QStringLiteral(SHARDSCOPE_SOURCE_DIR "/tests/data/golden/%1.trace.json").arg(name);
    if (qEnvironmentVariableIsSet("SHARDSCOPE_UPDATE_GOLDEN")) {
      QFile out(golden);
      QVERIFY(out.open(QIODevice::WriteOnly | QIODevice::Truncate));
      out.write(got);
      QSKIP("golden trace rewritten");
    }
    const QByteArray want = readAll(golden);
    QVERIFY2(!want.isEmpty(), qPrintable("missing " + golden));
    if (got == want) return;
    qsizetype at = 0;
    while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
    const qsizetype from = std::max<qsizetype>(0, at - 60);
    QFAIL(qPrintable(QStringLiteral("%1: %2 bytes written, %3 expected; first difference at byte %4\n"
                                    "  expected: …%5…\n  written:  …%6…")
                         .arg(name)
                         .arg(got.size())
                         .arg(want.size())
                         .arg(at)
                         .arg(QString::fromUtf8(want.mid(from, 120)))
                         .arg(QString::fromUtf8(got.mid(from, 120)))));
  }
};

QTEST_GUILESS_MAIN(TestGoldenTraces)
#include "test_golden_traces.moc"
