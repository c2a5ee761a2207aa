// Chrome trace sink: the writer's JSON is checked independently with
// QJsonDocument (Perfetto's view of it: pids, lane threads, X/i/C phases, us
// units), then writer -> reader must give back every Event field and the run
// metadata; bad and truncated files must fail with one TraceFormatError.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>

#include "trace/chrome_trace_reader.h"
#include "trace/chrome_trace_writer.h"
#include "common/json_tree.h"
#include "trace/json_writer.h"

using namespace shardscope;

namespace {

Event makeEvent(int rank, EventKind kind, Lane lane, int64_t begin_ns, int64_t end_ns) {
  Event e;
  e.rank = static_cast<int16_t>(rank);
  e.kind = kind;
  e.lane = lane;
  e.begin_ns = begin_ns;
  e.end_ns = end_ns;
  return e;
}

Event memoryEvent(int rank, EventKind kind, Category category, int64_t at_ns, int64_t bytes, int64_t total) {
  Event e = makeEvent(rank, kind, Lane::Host, at_ns, at_ns);
  e.category = category;
  e.bytes = bytes;
  e.value = total;
  return e;
}

// Two ranks of one DDP step: forward/backward, bucket ready, all-reduce, memory.
RunTrace syntheticTrace() {
  RunTrace trace;
  trace.strategy = "ddp";
  trace.ranks = 2;
  trace.params = 123456;
  trace.config = RunConfig{};
  trace.config->ranks = 2;
  trace.config->lr = 0.001;
  trace.param_names = {"embed.weight", "block0.w", "block1.w"};
  trace.block_names = {"embed"};  // block 1 has no name: falls back to "block1"
  trace.buckets = {BucketInfo{0, 4'000'000, {"block1.w"}}, BucketInfo{1, 2'000, {"block0.w", "embed.weight"}}};
  trace.units = {UnitInfo{0, {0}, 100}, UnitInfo{1, {1, 2}, 123356}};
  trace.events.resize(2);
  for (int r = 0; r < 2; ++r) {
    auto& ev = trace.events[static_cast<size_t>(r)];
    const int64_t t0 = 1000 * r;
    Event step = makeEvent(r, EventKind::StepBegin, Lane::Host, t0, t0);
    step.step = 7;
    ev.push_back(step);
    ev.push_back(memoryEvent(r, EventKind::Alloc, Category::Param, t0 + 5, 1000, 1000));
    Event fwd0 = makeEvent(r, EventKind::Forward, Lane::Compute, t0 + 12345, t0 + 15345);
    fwd0.block = 0;
    fwd0.step = 7;
    fwd0.op = 1;
    ev.push_back(fwd0);
    ev.push_back(memoryEvent(r, EventKind::Alloc, Category::Activation, t0 + 15400, 500, 500));
    Event fwd1 = makeEvent(r, EventKind::Forward, Lane::Compute, t0 + 15345, t0 + 20000);
    fwd1.block = 1;
    fwd1.step = 7;
    ev.push_back(fwd1);
    Event bwd = makeEvent(r, EventKind::Backward, Lane::Compute, t0 + 20000, t0 + 30001);
    bwd.block = 1;
    bwd.step = 7;
    bwd.op = 2;
    ev.push_back(bwd);
    Event grad = makeEvent(r, EventKind::GradReady, Lane::Host, t0 + 30001, t0 + 30001);
    grad.param = 2;
    ev.push_back(grad);
    Event ready = makeEvent(r, EventKind::BucketReady, Lane::Host, t0 + 30002, t0 + 30002);
    ready.bucket = 0;
    ready.step = 7;
    ev.push_back(ready);
    Event ar = makeEvent(r, EventKind::AllReduce, Lane::Comm, t0 + 31000, t0 + 33000);
    ar.bucket = 0;
    ar.bytes = 4'000'000;
    ar.seq = 3;
    ar.group = 0;
    ar.op = 3;
    ar.dep = 2;
    ar.step = 7;
    ev.push_back(ar);
    ev.push_back(memoryEvent(r, EventKind::Free, Category::Activation, t0 + 33500, 500, 0));
    Event ag = makeEvent(r, EventKind::AllGather, Lane::Gather, t0 + 34000, t0 + 34000);  // zero duration
    ag.unit = 1;
    ag.bytes = 64;
    ev.push_back(ag);
    // Every field set, including ones the Chrome format has no column for.
    Event odd = makeEvent(r, EventKind::Copy, Lane::Reduce, 3'600'000'000'123LL, 3'600'000'999'999LL);
    odd.bytes = (int64_t{1} << 40) + 3;
    odd.value = -17;
    odd.step = 2'000'000'000;
    odd.seq = 5;
    odd.op = 9;
    odd.dep = 8;
    odd.block = 32767;
    odd.unit = 4;
    odd.bucket = 1;
    odd.group = 3;
    odd.param = 1;
    odd.category = Category::Bucket;
    odd.flags = 0xA5;
    ev.push_back(odd);
    Event end = makeEvent(r, EventKind::StepEnd, Lane::Host, 3'600'001'000'000LL, 3'600'001'000'000LL);
    end.step = 7;
    ev.push_back(end);
  }
  return trace;
}

std::string writeToString(const RunTrace& trace) {
  std::ostringstream out;
  writeChromeTrace(trace, out);
  return out.str();
}

QJsonObject parseWithQt(const std::string& json) {
  QJsonParseError error{};
  const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(json), &error);
  if (error.error != QJsonParseError::NoError) {
    qWarning("QJsonDocument: %s at offset %d", qPrintable(error.errorString()), error.offset);
  }
  return doc.object();
}

QList<QJsonObject> eventsWhere(const QJsonObject& root, const QString& ph, const QString& name = {}, int pid = -1) {
  QList<QJsonObject> out;
  for (const QJsonValue& v : root.value("traceEvents").toArray()) {
    const QJsonObject e = v.toObject();
    if (e.value("ph").toString() != ph) continue;
    if (!name.isEmpty() && e.value("name").toString() != name) continue;
    if (pid >= 0 && e.value("pid").toInt(-1) != pid) continue;
    out.append(e);
  }
  return out;
}

QString describeEvent(const Event& e) {
  return QString("{kind %1 lane %2 rank %3 t %4..%5 bytes %6 value %7 step %8 seq %9 op %10 dep %11 block %12 unit %13 "
                 "bucket %14 group %15 param %16 category %17 flags %18}")
      .arg(QString::fromUtf8(eventKindName(e.kind).data(), static_cast<qsizetype>(eventKindName(e.kind).size())))
      .arg(static_cast<int>(e.lane))
      .arg(e.rank)
      .arg(e.begin_ns)
      .arg(e.end_ns)
      .arg(e.bytes)
      .arg(e.value)
      .arg(e.step)
      .arg(e.seq)
      .arg(e.op)
      .arg(e.dep)
      .arg(e.block)
      .arg(e.unit)
      .arg(e.bucket)
      .arg(e.group)
      .arg(e.param)
      .arg(static_cast<int>(e.category))
      .arg(e.flags);
}

bool sameEvent(const Event& a, const Event& b) {
  return a.begin_ns == b.begin_ns && a.end_ns == b.end_ns && a.bytes == b.bytes && a.value == b.value && a.step == b.step &&
         a.seq == b.seq && a.op == b.op && a.dep == b.dep && a.rank == b.rank && a.block == b.block && a.unit == b.unit &&
         a.bucket == b.bucket && a.group == b.group && a.param == b.param && a.lane == b.lane && a.kind == b.kind &&
         a.category == b.category && a.flags == b.flags;
}

void compareTraces(const RunTrace& got, const RunTrace& want) {
  QCOMPARE(got.strategy, want.strategy);
  QCOMPARE(got.ranks, want.ranks);
  QCOMPARE(got.params, want.params);
  QCOMPARE(got.config.has_value(), want.config.has_value());
  if (got.config && want.config) QCOMPARE(runArgs(*got.config), runArgs(*want.config));
  QCOMPARE(got.param_names, want.param_names);
  QCOMPARE(got.block_names, want.block_names);
  QCOMPARE(got.buckets.size(), want.buckets.size());
  for (size_t i = 0; i < want.buckets.size(); ++i) {
    QCOMPARE(got.buckets[i].index, want.buckets[i].index);
    QCOMPARE(got.buckets[i].bytes, want.buckets[i].bytes);
    QCOMPARE(got.buckets[i].params, want.buckets[i].params);
  }
  QCOMPARE(got.units.size(), want.units.size());
  for (size_t i = 0; i < want.units.size(); ++i) {
    QCOMPARE(got.units[i].index, want.units[i].index);
    QCOMPARE(got.units[i].blocks, want.units[i].blocks);
    QCOMPARE(got.units[i].params, want.units[i].params);
  }
  QCOMPARE(got.events.size(), want.events.size());
  for (size_t r = 0; r < want.events.size(); ++r) {
    QCOMPARE(got.events[r].size(), want.events[r].size());
    for (size_t i = 0; i < want.events[r].size(); ++i) {
      QVERIFY2(sameEvent(got.events[r][i], want.events[r][i]),
               qPrintable(QString("rank %1 event %2: got %3, want %4")
                              .arg(r)
                              .arg(i)
                              .arg(describeEvent(got.events[r][i]), describeEvent(want.events[r][i]))));
    }
  }
}

// Expects `json` to be rejected with a TraceFormatError whose message contains `needle`.
void expectTraceError(const std::string& json, const QString& needle) {
  try {
    (void)readChromeTrace(json, "bad.trace.json");
  } catch (const TraceFormatError& e) {
    const QString message = QString::fromUtf8(e.what());
    QVERIFY2(message.contains("bad.trace.json"), qPrintable("message does not name the file: " + message));
    QVERIFY2(message.contains(needle), qPrintable("expected '" + needle + "' in: " + message));
    return;
  }
  QFAIL(qPrintable("no TraceFormatError for: " + QString::fromStdString(json.substr(0, 200))));
}

}  // namespace

class TestChromeTrace : public QObject {
  Q_OBJECT

 private slots:
  void writerEmitsValidJsonWithRankAndLaneTracks();
  void writerEmitsPhasesArgsAndMicroseconds();
  void memoryCounterCarriesEveryCategory();
  void roundTripRestoresEventsAndMetadata();
  void roundTripKeepsAwkwardStrings();
  void writerRejectsInconsistentTrace();
  void readerRejectsBadFiles_data();
  void readerRejectsBadFiles();
  void readerReportsMissingFile();
  void readerSurvivesTruncation();
  void jsonWriterFormats();
  void jsonParserRejects_data();
  void jsonParserRejects();
  void jsonParserAccepts();
};

void TestChromeTrace::writerEmitsValidJsonWithRankAndLaneTracks() {
  const RunTrace trace = syntheticTrace();
  const QJsonObject root = parseWithQt(writeToString(trace));
  QVERIFY(root.value("traceEvents").isArray());
  QCOMPARE(root.value("displayTimeUnit").toString(), QString("ns"));

  for (int r = 0; r < 2; ++r) {
    const auto process = eventsWhere(root, "M", "process_name", r);
    QCOMPARE(process.size(), 1);
    QCOMPARE(process[0].value("args").toObject().value("name").toString(), QString("rank %1").arg(r));
    const auto sort = eventsWhere(root, "M", "process_sort_index", r);
    QCOMPARE(sort.size(), 1);
    QCOMPARE(sort[0].value("args").toObject().value("sort_index").toInt(-1), r);

    QMap<int, QString> threads;
    for (const QJsonObject& t : eventsWhere(root, "M", "thread_name", r)) {
      threads[t.value("tid").toInt(-1)] = t.value("args").toObject().value("name").toString();
    }
    // Only lanes the rank used get a track, each named after its lane.
    const QMap<int, QString> want{{0, "host"}, {1, "compute"}, {2, "comm"}, {3, "gather"}, {4, "reduce"}};
    QCOMPARE(threads, want);
    QCOMPARE(eventsWhere(root, "M", "thread_sort_index", r).size(), 5);
  }

  const QJsonObject meta = root.value("metadata").toObject();
  QCOMPARE(meta.value("strategy").toString(), QString("ddp"));
  QCOMPARE(meta.value("ranks").toInt(), 2);
  QCOMPARE(meta.value("params").toInt(), 123456);
  QVERIFY(meta.value("config").isObject());  // embedded as an object, not a string
  QCOMPARE(meta.value("config").toObject().value("bucket_mb").toInt(), 25);
  QCOMPARE(meta.value("buckets").toArray().size(), 2);
  QCOMPARE(meta.value("buckets").toArray()[1].toObject().value("params").toArray()[1].toString(), QString("embed.weight"));
  QCOMPARE(meta.value("units").toArray()[1].toObject().value("blocks").toArray().size(), 2);
  QCOMPARE(meta.value("param_names").toArray().size(), 3);
  QCOMPARE(meta.value("block_names").toArray()[0].toString(), QString("embed"));
}

void TestChromeTrace::writerEmitsPhasesArgsAndMicroseconds() {
  const std::string json = writeToString(syntheticTrace());
  const QJsonObject root = parseWithQt(json);

  // Forward of a named block: X on the compute lane, ts/dur in us with ns precision.
  const auto fwd = eventsWhere(root, "X", "forward embed", 0);
  QCOMPARE(fwd.size(), 1);
  QCOMPARE(fwd[0].value("cat").toString(), QString("forward"));
  QCOMPARE(fwd[0].value("tid").toInt(-1), 1);
  QCOMPARE(fwd[0].value("ts").toDouble(), 12.345);
  QCOMPARE(fwd[0].value("dur").toDouble(), 3.0);
  QCOMPARE(fwd[0].value("args").toObject().value("block").toInt(-2), 0);
  QCOMPARE(fwd[0].value("args").toObject().value("step").toInt(), 7);
  QVERIFY(!fwd[0].value("args").toObject().contains("bucket"));  // unset ids are left out
  QVERIFY(!fwd[0].value("args").toObject().contains("bytes"));
  QVERIFY(json.find("\"ts\":12.345,\"dur\":3.000") != std::string::npos);
  // Unnamed block falls back to "block<N>"; rank 1 is shifted by 1000 ns.
  const auto fwd1 = eventsWhere(root, "X", "forward block1", 1);
  QCOMPARE(fwd1.size(), 1);
  QCOMPARE(fwd1[0].value("ts").toDouble(), 16.345);
  QCOMPARE(eventsWhere(root, "X", "backward block1").size(), 2);

  const auto ar = eventsWhere(root, "X", "all_reduce bucket 0", 1);
  QCOMPARE(ar.size(), 1);
  QCOMPARE(ar[0].value("tid").toInt(-1), 2);
  const QJsonObject ar_args = ar[0].value("args").toObject();
  QCOMPARE(ar_args.value("bytes").toInteger(), qint64(4'000'000));
  QCOMPARE(ar_args.value("bucket").toInt(-1), 0);
  QCOMPARE(ar_args.value("seq").toInt(), 3);
  QCOMPARE(ar_args.value("group").toInt(-1), 0);
  QCOMPARE(ar_args.value("dep").toInt(), 2);
  QCOMPARE(ar_args.value("GB/s").toDouble(), 2000.0);  // 4e6 bytes in 2000 ns
  // A zero-length collective has no bandwidth figure (no division by zero).
  const auto ag = eventsWhere(root, "X", "all_gather unit 1", 0);
  QCOMPARE(ag.size(), 1);
  QVERIFY(!ag[0].value("args").toObject().contains("GB/s"));

  const auto ready = eventsWhere(root, "i", "bucket_ready");
  QCOMPARE(ready.size(), 2);
  for (const QJsonObject& e : ready) {
    QCOMPARE(e.value("s").toString(), QString("t"));
    QCOMPARE(e.value("tid").toInt(-1), 0);
    QVERIFY(!e.contains("dur"));
    QCOMPARE(e.value("args").toObject().value("bucket").toInt(-1), 0);
  }
  QCOMPARE(eventsWhere(root, "i", "grad_ready", 0)[0].value("args").toObject().value("param").toInt(), 2);
  // Large timestamps keep every nanosecond.
  QVERIFY(json.find("\"ts\":3600000000.123,\"dur\":999.876") != std::string::npos);
}

void TestChromeTrace::memoryCounterCarriesEveryCategory() {
  const QJsonObject root = parseWithQt(writeToString(syntheticTrace()));
  for (int r = 0; r < 2; ++r) {
    const auto counters = eventsWhere(root, "C", "memory", r);
    QCOMPARE(counters.size(), 3);  // one per Alloc/Free
    for (const QJsonObject& c : counters) QCOMPARE(c.value("args").toObject().size(), kCategoryCount);
    const QJsonObject first = counters[0].value("args").toObject();
    QCOMPARE(first.value("param").toInteger(), qint64(1000));
    QCOMPARE(first.value("activation").toInteger(), qint64(0));
    const QJsonObject second = counters[1].value("args").toObject();
    QCOMPARE(second.value("param").toInteger(), qint64(1000));  // earlier category still carried
    QCOMPARE(second.value("activation").toInteger(), qint64(500));
    const QJsonObject third = counters[2].value("args").toObject();
    QCOMPARE(third.value("activation").toInteger(), qint64(0));
    QCOMPARE(third.value("param").toInteger(), qint64(1000));
    QCOMPARE(third.value("grad").toInteger(), qint64(0));
    QCOMPARE(counters[1].value("ts").toDouble(), 15.4 + r);

    const auto allocs = eventsWhere(root, "i", "alloc", r);
    QCOMPARE(allocs.size(), 2);
    QCOMPARE(allocs[1].value("args").toObject().value("category").toString(), QString("activation"));
    QCOMPARE(allocs[1].value("args").toObject().value("value").toInteger(), qint64(500));
    // A total of 0 after a free is a real value and is written.
    QCOMPARE(eventsWhere(root, "i", "free", r)[0].value("args").toObject().value("value").toInteger(-1), qint64(0));
  }
}

void TestChromeTrace::roundTripRestoresEventsAndMetadata() {
  const RunTrace trace = syntheticTrace();
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const std::string path = dir.filePath("run.trace.json").toStdString();
  writeChromeTraceFile(trace, path);
  compareTraces(readChromeTraceFile(path), trace);

  // A rank with no events and a trace without config or events survive too.
  RunTrace sparse;
  sparse.strategy = "fsdp";
  sparse.ranks = 3;
  sparse.events.resize(1);
  sparse.events[0].push_back(makeEvent(0, EventKind::Loss, Lane::Compute, 5, 9));
  RunTrace want = sparse;
  want.events.resize(3);
  compareTraces(readChromeTrace(writeToString(sparse), "sparse"), want);
}

void TestChromeTrace::roundTripKeepsAwkwardStrings() {
  RunTrace trace;
  trace.ranks = 1;
  trace.strategy = "zero\"3\" \\path\\ \n\t\r\b\f \x01\x1f end";
  trace.param_names = {"", "ünïcödé.weight", "日本語", "emoji 😀", std::string("nul\0inside", 10), "slash / and \x7f"};
  trace.block_names = {"quote\"block"};
  // A profile path is the config's free text: quotes, backslashes, control characters, non-ASCII.
  trace.config = RunConfig{};
  trace.config->ranks = 1;
  trace.config->batch = 1;
  trace.config->clock = ClockKind::Modeled;
  trace.config->profile = "a\"b\\c\x01" "d\n ü😀.json";
  trace.buckets = {BucketInfo{0, 8, {"tab\there"}}};
  trace.events.resize(1);
  Event fwd = makeEvent(0, EventKind::Forward, Lane::Compute, 0, 10);
  fwd.block = 0;
  trace.events[0].push_back(fwd);

  const std::string json = writeToString(trace);
  const QJsonObject root = parseWithQt(json);
  QCOMPARE(root.value("metadata").toObject().value("strategy").toString(), QString::fromStdString(trace.strategy));
  QCOMPARE(root.value("metadata").toObject().value("param_names").toArray()[3].toString(), QString::fromUtf8("emoji 😀"));
  QCOMPARE(eventsWhere(root, "X", "forward quote\"block").size(), 1);
  compareTraces(readChromeTrace(json, "strings"), trace);

  // Invalid UTF-8 cannot be written as JSON: it becomes U+FFFD, never a broken file.
  RunTrace broken;
  broken.ranks = 0;
  broken.strategy = "bad\xff\xc3(";
  const std::string broken_json = writeToString(broken);
  QVERIFY(!parseWithQt(broken_json).isEmpty());
  QCOMPARE(readChromeTrace(broken_json, "broken").strategy, std::string("bad\xEF\xBF\xBD\xEF\xBF\xBD("));
}

void TestChromeTrace::writerRejectsInconsistentTrace() {
  RunTrace trace = syntheticTrace();
  trace.ranks = 1;
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, writeToString(trace));
  QVERIFY_THROWS_EXCEPTION(std::runtime_error, writeChromeTraceFile(syntheticTrace(), "/nonexistent-dir/x.json"));
}

void TestChromeTrace::readerRejectsBadFiles_data() {
  QTest::addColumn<QString>("json");
  QTest::addColumn<QString>("needle");
  const QString x = R"({"ph":"X","cat":"forward","pid":0,"tid":1,"ts":1.5,"dur":2%1})";
  const auto ev = [](const QString& event) { return QString(R"({"traceEvents":[%1]})").arg(event); };

  QTest::newRow("not json") << "hello" << "not valid JSON";
  QTest::newRow("empty") << "" << "not valid JSON";
  QTest::newRow("array form") << "[]" << "array form";
  QTest::newRow("no traceEvents") << "{}" << "traceEvents: missing";
  QTest::newRow("traceEvents not array") << R"({"traceEvents":5})" << "traceEvents: expected an array";
  QTest::newRow("event not object") << ev("1") << "traceEvents[0]: expected an event object";
  QTest::newRow("missing ph") << ev(R"({"pid":0})") << "traceEvents[0].ph: missing";
  QTest::newRow("unknown ph") << ev(R"({"ph":"B","pid":0})") << "traceEvents[0].ph: \"B\" is not supported";
  QTest::newRow("pid string") << ev(QString(x).arg("").replace("\"pid\":0", "\"pid\":\"0\"")) << "traceEvents[0].pid: expected an integer";
  QTest::newRow("pid negative") << ev(QString(x).arg("").replace("\"pid\":0", "\"pid\":-1")) << "traceEvents[0].pid";
  QTest::newRow("tid not a lane") << ev(QString(x).arg("").replace("\"tid\":1", "\"tid\":9")) << "traceEvents[0].tid: expected an integer in [0, 4]";
  QTest::newRow("ts string") << ev(QString(x).arg("").replace("\"ts\":1.5", "\"ts\":\"now\"")) << "traceEvents[0].ts";
  QTest::newRow("missing dur") << ev(R"({"ph":"X","cat":"forward","pid":0,"tid":1,"ts":1})") << "traceEvents[0].dur: missing";
  QTest::newRow("unknown kind") << ev(QString(x).arg("").replace("forward", "fwd")) << "traceEvents[0].cat: unknown event kind \"fwd\"; allowed: forward, backward";
  QTest::newRow("instant kind as X") << ev(QString(x).arg("").replace("forward", "bucket_ready")) << "traceEvents[0].ph";
  QTest::newRow("block fractional") << ev(x.arg(R"(,"args":{"block":1.5})")) << "traceEvents[0].args.block: expected an integer in [-1, 32767], got 1.5";
  QTest::newRow("block too big") << ev(x.arg(R"(,"args":{"block":40000})")) << "traceEvents[0].args.block";
  QTest::newRow("bytes string") << ev(x.arg(R"(,"args":{"bytes":"many"})")) << "traceEvents[0].args.bytes";
  QTest::newRow("args not object") << ev(x.arg(R"(,"args":[1])")) << "traceEvents[0].args: expected an object";
  QTest::newRow("unknown category") << ev(x.arg(R"(,"args":{"category":"gpu"})")) << "traceEvents[0].args.category: unknown memory category \"gpu\"; allowed: param";
  QTest::newRow("unknown lane name") << ev(R"({"ph":"M","name":"thread_name","pid":0,"tid":2,"args":{"name":"disk"}})")
                                     << "traceEvents[0].args.name: unknown lane \"disk\"; allowed: host, compute, comm, gather, reduce";
  QTest::newRow("lane tid mismatch") << ev(R"({"ph":"M","name":"thread_name","pid":0,"tid":1,"args":{"name":"comm"}})")
                                     << "traceEvents[0].tid: thread \"comm\" must have tid 2";
  QTest::newRow("second event bad") << ev(x.arg("") + "," + QString(x).arg("").replace("\"ts\":1.5", "\"ts\":null")) << "traceEvents[1].ts";
  QTest::newRow("pid beyond ranks") << QString(R"({"traceEvents":[%1],"metadata":{"ranks":1}})").arg(QString(x).arg("").replace("\"pid\":0", "\"pid\":1"))
                                    << "traceEvents[0].pid: rank 1 is outside metadata.ranks = 1";
  QTest::newRow("ranks string") << R"({"traceEvents":[],"metadata":{"ranks":"two"}})" << "metadata.ranks: expected an integer";
  QTest::newRow("bucket bytes negative") << R"({"traceEvents":[],"metadata":{"buckets":[{"index":0,"bytes":-5}]}})" << "metadata.buckets[0].bytes";
  QTest::newRow("block name not string") << R"({"traceEvents":[],"metadata":{"block_names":["a",1]}})" << "metadata.block_names[1]: expected a string";
  QTest::newRow("unit block negative") << R"({"traceEvents":[],"metadata":{"units":[{"index":0,"blocks":[0,-2]}]}})"
                                       << "metadata.units[0].blocks: element 1: expected a block index";
  QTest::newRow("config not object") << R"({"traceEvents":[],"metadata":{"config":"x"}})" << "metadata.config: expected an object";
  QTest::newRow("newer version") << R"({"traceEvents":[],"metadata":{"version":2}})" << "metadata.version";
  QTest::newRow("trailing comma") << R"({"traceEvents":[],})" << "line 1, column 19: expected a string key";
  QTest::newRow("trailing garbage") << R"({"traceEvents":[]} x)" << "expected end of input";
  QTest::newRow("deep nesting") << ev(x.arg(",\"args\":{\"x\":" + QString(5000, '[') + QString(5000, ']') + "}")) << "nesting deeper than";
  QTest::newRow("truncated") << R"({"traceEvents":[{"ph":"X","cat":"forw)" << "unterminated string";
}

void TestChromeTrace::readerRejectsBadFiles() {
  QFETCH(QString, json);
  QFETCH(QString, needle);
  expectTraceError(json.toStdString(), needle);
}

void TestChromeTrace::readerReportsMissingFile() {
  try {
    (void)readChromeTraceFile("/nonexistent/run.trace.json");
    QFAIL("no error for a missing file");
  } catch (const TraceFormatError& e) {
    QVERIFY(QString(e.what()).contains("/nonexistent/run.trace.json"));
    QVERIFY(QString(e.what()).contains("cannot open"));
  }
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  try {
    (void)readChromeTraceFile(dir.path().toStdString());
    QFAIL("no error for a directory");
  } catch (const TraceFormatError& e) {
    QVERIFY(QString(e.what()).contains("is a directory"));
  }
  // It is a ConfigError, so the CLI reports it as bad input (exit code 2).
  QVERIFY((std::is_base_of_v<ConfigError, TraceFormatError>));
}

void TestChromeTrace::readerSurvivesTruncation() {
  const std::string json = writeToString(syntheticTrace());
  const size_t last_brace = json.rfind('}');
  QVERIFY(last_brace != std::string::npos);
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const std::string path = dir.filePath("cut.trace.json").toStdString();
  QRandomGenerator random(20240611);  // fixed seed: failures reproduce
  int rejected = 0;
  for (int i = 0; i < 200; ++i) {
    // Any cut before the closing brace leaves the top-level object open.
    const auto cut = static_cast<size_t>(random.bounded(static_cast<quint64>(last_brace)));
    {
      std::ofstream file(path, std::ios::binary | std::ios::trunc);
      file.write(json.data(), static_cast<std::streamsize>(cut));
    }
    try {
      (void)readChromeTraceFile(path);
    } catch (const TraceFormatError& e) {
      QVERIFY2(QString(e.what()).contains(QString::fromStdString(path)), e.what());
      ++rejected;
      continue;
    }
    QFAIL(qPrintable(QString("a file cut at byte %1 of %2 was accepted").arg(cut).arg(json.size())));
  }
  QCOMPARE(rejected, 200);
}

void TestChromeTrace::jsonWriterFormats() {
  std::ostringstream compact;
  {
    JsonWriter w(compact);
    w.beginObject();
    w.member("s", "a\"b\\c\n\x01");
    w.member("i", int64_t{-42});
    w.member("u", uint64_t{18446744073709551615ULL});
    w.member("d", 0.1);
    w.member("nan", std::numeric_limits<double>::quiet_NaN());
    w.member("b", true);
    w.key("n").null();
    w.key("us").decimal(-1500, 3);
    w.key("small").decimal(5, 3);
    w.key("f").fixed(2.0 / 3.0, 2);
    w.key("raw").raw("[1,2]");
    w.key("e").beginArray().endArray();
    w.endObject();
    QVERIFY(w.complete());
  }
  QCOMPARE(compact.str(),
           std::string(R"({"s":"a\"b\\c\n\u0001","i":-42,"u":18446744073709551615,"d":0.1,"nan":null,"b":true,"n":null,)"
                       R"("us":-1.500,"small":0.005,"f":0.67,"raw":[1,2],"e":[]})"));

  std::ostringstream pretty;
  {
    JsonWriter w(pretty, 2);
    w.beginObject().key("a").beginArray().value(1).value(2).endArray().key("b").beginObject().endObject().endObject();
  }
  QCOMPARE(pretty.str(), std::string("{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}"));

  std::ostringstream misuse;
  JsonWriter w(misuse);
  w.beginObject();
  QVERIFY_THROWS_EXCEPTION(std::logic_error, w.value(1));  // value without key
  QVERIFY_THROWS_EXCEPTION(std::logic_error, w.endArray());
}

void TestChromeTrace::jsonParserRejects_data() {
  QTest::addColumn<QString>("text");
  QTest::newRow("empty") << "";
  QTest::newRow("leading zero") << "01";
  QTest::newRow("bare point") << "1.";
  QTest::newRow("no int part") << ".5";
  QTest::newRow("trailing comma array") << "[1,]";
  QTest::newRow("trailing comma object") << R"({"a":1,})";
  QTest::newRow("single quotes") << "'x'";
  QTest::newRow("bad escape") << R"("\x")";
  QTest::newRow("raw newline in string") << "\"a\nb\"";
  QTest::newRow("NaN") << "NaN";
  QTest::newRow("overflow") << "1e400";
  QTest::newRow("lone surrogate") << R"("\ud800")";
  QTest::newRow("low surrogate first") << R"("\udc00\ud800")";
  QTest::newRow("two values") << "{} {}";
  QTest::newRow("unclosed") << "[";
  QTest::newRow("key not string") << "{1:2}";
  QTest::newRow("comment") << "[1 /* x */]";
  QTest::newRow("truncated literal") << "tru";
  QTest::newRow("short unicode escape") << R"("\u12")";
}

void TestChromeTrace::jsonParserRejects() {
  QFETCH(QString, text);
  QVERIFY_THROWS_EXCEPTION(JsonSyntaxError, parseJsonTree(text.toStdString()));
  // Invalid UTF-8 bytes inside a string (QString cannot carry them).
  QVERIFY_THROWS_EXCEPTION(JsonSyntaxError, parseJsonTree("\"\xff\""));
  QVERIFY_THROWS_EXCEPTION(JsonSyntaxError, parseJsonTree("\"\xed\xa0\x80\""));  // UTF-8 encoded surrogate
  // The trace reader's own parse rejects the same text as a member's value.
  expectTraceError(R"({"traceEvents":[],"x":)" + text.toStdString() + "}", "not valid JSON");
  expectTraceError("{\"traceEvents\":[],\"x\":\"\xff\"}", "not valid JSON");
}

void TestChromeTrace::jsonParserAccepts() {
  std::vector<std::string> repeated;
  const Json v = parseJsonTree(
      " {\"a\": [1, -0, 2.0, 1e3, 9223372036854775807, 9223372036854775808, -1.5e-3], \"s\": \"\\ud83d\\ude00\\u00fc\\/\", "
      "\"t\": true, \"n\": null, \"a\": 2} ",
      [&repeated](const std::string& path) { repeated.push_back(path); });
  QVERIFY(v.is_object());
  QCOMPARE(v.size(), size_t(4));  // a repeated key is reported, its first value kept
  QCOMPARE(repeated, std::vector<std::string>{"a"});
  QCOMPARE(v.begin().key(), std::string("a"));  // in document order
  const auto& a = v.find("a").value();  // first match
  const auto integer = [](const Json& n) {
    int64_t out = 0;
    if (!jsonInteger(n, out)) throw std::logic_error("not an integer: " + n.dump());
    return out;
  };
  int64_t unused = 0;
  QCOMPARE(integer(a[0]), int64_t{1});
  QVERIFY(jsonInteger(a[1], unused));
  QVERIFY(jsonInteger(a[2], unused));
  QCOMPARE(integer(a[3]), int64_t{1000});
  QCOMPARE(integer(a[4]), int64_t{9223372036854775807LL});
  QVERIFY(a[5].is_number() && !jsonInteger(a[5], unused));
  QCOMPARE(a[6].get<double>(), -0.0015);
  QCOMPARE(v.find("s")->get<std::string>(), std::string("\xF0\x9F\x98\x80\xC3\xBC/"));
  QVERIFY(v.find("t")->get<bool>());
  QVERIFY(v.find("n")->is_null());
  QVERIFY(v.find("missing") == v.end());
  QVERIFY_THROWS_EXCEPTION(nlohmann::json::exception, v.find("t")->get<std::string>());
  QCOMPARE(parseJsonTree(v.dump()), v);

  try {
    parseJsonTree("{\n  \"a\": tru\n}");
    QFAIL("accepted 'tru'");
  } catch (const JsonSyntaxError& e) {
    QCOMPARE(e.line(), 2);
    QCOMPARE(e.column(), 8);
    QVERIFY(QString(e.what()).startsWith("line 2, column 8: expected a value"));
  }
}

QTEST_APPLESS_MAIN(TestChromeTrace)
#include "test_chrome_trace.moc"
