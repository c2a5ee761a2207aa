// shardscope-cli as a user runs it: the trace opens as Chrome/Perfetto JSON
// with one process per rank, named lanes, counters and args; the summary has
// the contract keys; every bad flag is one line naming it, exit code 2; the
// injected branch exits 3.
#include <QtTest>

#include "cli_process.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSet>
#include <QTemporaryDir>

namespace {

QJsonDocument readJson(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  QJsonParseError error;
  QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &error);
  if (error.error != QJsonParseError::NoError) qWarning() << path << error.errorString();
  return doc;
}

const QStringList kSmallModel = {"--layers", "3", "--hidden", "64", "--batch", "8"};

}  // namespace

class TestCli : public QObject {
  Q_OBJECT

 private slots:
  void traceAndSummary() {
    QTemporaryDir dir;
    const QString trace = dir.filePath("t.json"), summary = dir.filePath("s.json");
    const CliResult r = runCli(QStringList{"run", "--strategy", "ddp", "--ranks", "4", "--steps", "2",
                                           "--bucket-mb", "0.05", "--first-bucket-mb", "0.02",
                                           "--trace", trace, "--summary", summary} + kSmallModel);
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY(r.out.contains("bytes/param"));
    QVERIFY(r.out.contains("firing order"));

    const QJsonObject t = readJson(trace).object();
    const QJsonArray events = t.value("traceEvents").toArray();
    QVERIFY(events.size() > 100);
    QSet<int> pids;
    QSet<QString> process_names, thread_names, phases;
    bool all_reduce_with_args = false, memory_counter = false, forward_block = false;
    for (const QJsonValue& v : events) {
      const QJsonObject e = v.toObject();
      const QString ph = e.value("ph").toString(), name = e.value("name").toString();
      const QJsonObject args = e.value("args").toObject();
      phases.insert(ph);
      pids.insert(e.value("pid").toInt(-1));
      if (ph == "M" && name == "process_name") process_names.insert(args.value("name").toString());
      if (ph == "M" && name == "thread_name") thread_names.insert(args.value("name").toString());
      if (ph == "X" && name.startsWith("all_reduce")) {
        QVERIFY(e.value("dur").toDouble() >= 0);
        all_reduce_with_args |= args.contains("bucket") && args.value("bytes").toDouble() > 0;
      }
      if (ph == "X" && name.startsWith("forward")) forward_block |= args.contains("block");
      if (ph == "C") memory_counter |= args.contains("param") && args.contains("adam_v");
    }
    QCOMPARE(pids, (QSet<int>{0, 1, 2, 3}));
    QCOMPARE(process_names, (QSet<QString>{"rank 0", "rank 1", "rank 2", "rank 3"}));
    QVERIFY(thread_names.contains("compute") && thread_names.contains("comm") && thread_names.contains("host"));
    QVERIFY(phases.contains("X") && phases.contains("i") && phases.contains("C"));
    QVERIFY(all_reduce_with_args);
    QVERIFY(memory_counter);
    QVERIFY(forward_block);

    const QJsonObject s = readJson(summary).object();
    QCOMPARE(s.value("strategy").toString(), QString("ddp"));
    QCOMPARE(s.value("ranks").toInt(), 4);
    const double n = s.value("params").toDouble();
    QVERIFY(n > 0);
    QCOMPARE(s.value("steps").toArray().size(), 2);
    QVERIFY(s.value("steps").toArray()[0].toObject().contains("loss"));
    const QJsonArray per_rank = s.value("per_rank").toArray();
    QCOMPARE(per_rank.size(), 4);
    for (const QJsonValue& v : per_rank) {
      const QJsonObject rank = v.toObject();
      const QJsonObject peak = rank.value("peak_bytes").toObject();
      for (const char* key : {"param", "grad", "master", "adam_m", "adam_v", "bucket", "activation"})
        QVERIFY2(peak.contains(key), key);
      QCOMPARE(rank.value("model_state_bytes_per_param").toDouble(), 16.0);
      const QJsonObject comm = rank.value("comm_bytes").toObject();
      QCOMPARE(comm.value("all_reduce").toDouble(), 2.0 * 3 / 4 * 2 * n);
      QCOMPARE(comm.value("reduce_scatter").toDouble(), 0.0);
      QCOMPARE(comm.value("all_gather").toDouble(), 0.0);
    }
    const QJsonArray buckets = s.value("buckets").toArray();
    QVERIFY(buckets.size() >= 3);
    QVERIFY(buckets[0].toObject().value("params").toArray()[0].toString() == "head.bias");
    const QJsonArray order = s.value("bucket_fire_order").toArray();
    QCOMPARE(order.size(), 4);
    for (const QJsonValue& v : order) {
      const QJsonArray o = v.toArray();
      QCOMPARE(o.size(), buckets.size());
      for (int i = 0; i < o.size(); ++i) QCOMPARE(o[i].toInt(), i);
    }
  }

  void badInput_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("mentions");
    QTest::newRow("ranks 0") << QStringList{"run", "--ranks", "0"} << "--ranks must be in 1..64";
    QTest::newRow("ranks 65") << QStringList{"run", "--ranks", "65"} << "--ranks must be in 1..64";
    QTest::newRow("ranks text") << QStringList{"run", "--ranks", "four"} << "--ranks expects an integer";
    QTest::newRow("batch not multiple") << QStringList{"run", "--ranks", "4", "--batch", "30"} << "--batch 30 must be a multiple of --ranks 4";
    QTest::newRow("unknown strategy") << QStringList{"run", "--strategy", "zero9"} << "--strategy must be one of";
    QTest::newRow("unit-blocks with ddp") << QStringList{"run", "--strategy", "ddp", "--unit-blocks", "2"} << "--unit-blocks applies to --strategy zero3, fsdp or hsdp";
    QTest::newRow("shard-group with zero3") << QStringList{"run", "--strategy", "zero3", "--shard-group", "2"} << "--shard-group applies to --strategy hsdp only";
    QTest::newRow("hsdp without group") << QStringList{"run", "--strategy", "hsdp"} << "--strategy hsdp needs --shard-group";
    QTest::newRow("shard-group divides") << QStringList{"run", "--strategy", "hsdp", "--ranks", "6", "--batch", "12", "--shard-group", "4"} << "--shard-group 4 must divide --ranks 6; use one of 1 2 3 6";
    QTest::newRow("unit-blocks too big") << QStringList{"run", "--strategy", "zero3", "--layers", "4", "--unit-blocks", "5"} << "--unit-blocks must be in 1..4";
    QTest::newRow("prefetch") << QStringList{"run", "--strategy", "zero3", "--prefetch", "sideways"} << "--prefetch must be one of none, forward, backward, both";
    QTest::newRow("reshard") << QStringList{"run", "--strategy", "fsdp", "--reshard-after-forward", "maybe"} << "--reshard-after-forward must be on or off";
    QTest::newRow("unknown flag") << QStringList{"run", "--bogus", "1"} << "unknown flag --bogus";
    QTest::newRow("missing value") << QStringList{"run", "--steps"} << "--steps needs a value";
    QTest::newRow("bucket-mb") << QStringList{"run", "--bucket-mb", "-1"} << "--bucket-mb must be in";
    QTest::newRow("inject format") << QStringList{"run", "--inject-branch", "1"} << "--inject-branch expects RANK:BLOCK";
    QTest::newRow("inject rank") << QStringList{"run", "--ranks", "2", "--inject-branch", "5:0"} << "--inject-branch RANK must be in 0..1";
    QTest::newRow("huge") << QStringList{"run", "--layers", "99999999999"} << "--layers";
    QTest::newRow("unknown command") << QStringList{"train"} << "unknown command 'train'";
    QTest::newRow("devices flag") << QStringList{"devices", "--all"} << "devices takes only --json";
  }

  void badInput() {
    QFETCH(QStringList, args);
    QFETCH(QString, mentions);
    const CliResult r = runCli(args, 20000);
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains(mentions), qPrintable(r.err));
    QCOMPARE(r.err.trimmed().count('\n'), 0);  // one line
  }

  void injectedBranchExitsThree() {
    const CliResult r = runCli(QStringList{"run", "--ranks", "2", "--steps", "2", "--timeout-ms", "800",
                                           "--inject-branch", "1:1"} + kSmallModel, 60000);
    QCOMPARE(r.exit_code, 3);
    QVERIFY2(r.err.contains("never became ready on rank 1"), qPrintable(r.err));
  }

  void metaRunReportsNoLoss() {
    // Shapes only: no loss is computed, so none may be printed as a number.
    QTemporaryDir dir;
    const QString summary = dir.filePath("s.json");
    const CliResult r = runCli({"run", "--backend", "meta", "--model", "gpt2-124m", "--strategy", "zero3", "--ranks",
                                "4", "--batch", "8", "--steps", "2", "--summary", summary});
    QCOMPARE(r.exit_code, 0);
    QVERIFY2(r.out.contains("loss per step: none (the meta backend"), qPrintable(r.out));
    QVERIFY(!r.out.contains("loss 0.000000"));
    const QJsonArray steps = readJson(summary).object().value("steps").toArray();
    QCOMPARE(steps.size(), 2);
    for (const QJsonValue& s : steps) QVERIFY(s.toObject().value("loss").isNull());
  }

  void devicesReports() {
    const CliResult r = runCli({"devices"}, 60000);
    QCOMPARE(r.exit_code, 0);
#ifdef SHARDSCOPE_HAVE_CUDA
    // The report loads the CUDA backend plugin: every symbol it takes from
    // the program resolved, and it reports the NCCL it was built with.
    QVERIFY2(r.out.startsWith("CUDA runtime ") && r.out.contains("NCCL 2."), qPrintable(r.out));
#else
    QVERIFY2(r.out.contains("without CUDA"), qPrintable(r.out));
#endif
    const CliResult j = runCli({"devices", "--json"}, 60000);
    QCOMPARE(j.exit_code, 0);
    QVERIFY(QJsonDocument::fromJson(j.out.toUtf8()).isObject());
  }

  // The CUDA libraries are the plugin's, not the program's: the CLI starts
  // without them (and without their 0.35 s of static initializers).
  void theProgramLinksNoCudaLibrary() {
    const CliResult r = runProcess(QStringLiteral("readelf"), {"-d", SHARDSCOPE_CLI_PATH},
                                   QProcessEnvironment::systemEnvironment(), 30000);
    if (r.exit_code != 0) QSKIP("readelf is not available");
    QVERIFY2(r.out.contains("(NEEDED)"), qPrintable(r.out));
    for (const char* lib : {"libcudart", "libcublas", "libnccl"})
      QVERIFY2(!r.out.contains(QLatin1String(lib)), qPrintable(r.out));
  }

  // A backend that cannot be loaded is one error naming --backend and why.
  void anUnloadableCudaBackendIsNamed_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("says");
    QTest::newRow("missing") << QStringLiteral("/nonexistent/libshardscope-cuda.so") << QStringLiteral("was not found");
    QTest::newRow("not a backend") << QStringLiteral(SHARDSCOPE_CLI_PATH) << QStringLiteral("could not be loaded");
  }
  void anUnloadableCudaBackendIsNamed() {
#ifndef SHARDSCOPE_HAVE_CUDA
    QSKIP("built without CUDA: no backend to load");
#else
    QFETCH(QString, file);
    QFETCH(QString, says);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("SHARDSCOPE_CUDA_BACKEND"), file);
    const CliResult r = runCli({"run", "--backend", "cuda-emulated", "--steps", "1"}, env, 60000);
    QVERIFY2(r.exit_code != 0 && r.exit_code != -1, qPrintable(r.err));
    QVERIFY2(r.err.contains("--backend cuda-emulated needs the CUDA backend") && r.err.contains(says) &&
                 r.err.contains(file),
             qPrintable(r.err));
    const CliResult d = runCli({"devices"}, env, 60000);
    QCOMPARE(d.exit_code, 0);
    QVERIFY2(d.out.startsWith("built with CUDA, but") && d.out.contains(file), qPrintable(d.out));
    const CliResult j = runCli({"devices", "--json"}, env, 60000);
    const QJsonObject json = QJsonDocument::fromJson(j.out.toUtf8()).object();
    QCOMPARE(json.value("cuda_built").toBool(), true);
    QCOMPARE(json.value("backend_loaded").toBool(true), false);
    QVERIFY2(json.value("error").toString().contains(file), qPrintable(j.out));
#endif
  }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
