// The one door (core/input/input_detect.h): every fixture kind ShardScope
// opens goes through detectInput, with gzip under both names, truncated and
// empty files, folders, files that are not regular, and unknown content whose
// reason names what was seen and what is accepted.
#include <QTemporaryDir>
#include <QtTest>
#include <sys/stat.h>
#include <zlib.h>

#include <fstream>
#include <iterator>

#include "input/input_detect.h"

using namespace shardscope;

namespace {

const std::string kData = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/";

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

void writeGzip(const std::string& path, const std::string& bytes) {
  gzFile gz = gzopen(path.c_str(), "wb");
  QVERIFY(gz);
  if (!bytes.empty()) QCOMPARE(gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  gzclose(gz);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

class TestInputDetect : public QObject {
  Q_OBJECT

 private slots:
  void everyFixtureKind_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<int>("kind");
    QTest::addColumn<bool>("gzip");
    const auto row = [](const char* name, const std::string& rel, InputKind kind, bool gzip) {
      QTest::newRow(name) << QString::fromStdString(kData + rel) << int(kind) << gzip;
    };
    row("kineto json", "kineto/rank1_of_2.json", InputKind::KinetoTrace, false);
    row("kineto pids over 32767", "kineto/pid_over_32767.json", InputKind::KinetoTrace, false);
    row("kineto json.gz", "kineto/torch_ddp_gloo_rank1.json.gz", InputKind::KinetoTrace, true);
    row("kineto truncated json.gz", "kineto/truncated.json.gz", InputKind::KinetoTrace, true);
    row("kineto job folder", "kineto/fsdp_job", InputKind::KinetoFolder, false);
    row("memory timeline raw.json.gz", "kineto/memory_timeline/run.raw.json.gz", InputKind::MemoryTimeline, true);
    row("memory timeline json", "kineto/memory_timeline/run.json", InputKind::MemoryTimeline, false);
    row("snapshot pickle", "postmortem/snapshot_oom.pickle", InputKind::MemorySnapshot, false);
    row("snapshot json", "postmortem/snapshot_no_time.json", InputKind::MemorySnapshot, false);
    row("dump pickle", "postmortem/fr_missing_rank/nccl_trace_rank_0", InputKind::FlightRecorderDump, false);
    row("dump json", "postmortem/fr_all_complete/nccl_trace_rank_0.json", InputKind::FlightRecorderDump, false);
    row("dump folder (pickles)", "postmortem/fr_missing_rank", InputKind::FlightRecorderFolder, false);
    row("dump folder (json)", "postmortem/fr_all_complete", InputKind::FlightRecorderFolder, false);
    row("shardscope trace", "golden/ddp.trace.json", InputKind::ShardScopeTrace, false);
  }

  void everyFixtureKind() {
    QFETCH(QString, path);
    QFETCH(int, kind);
    QFETCH(bool, gzip);
    const DetectedInput d = detectInput(path.toStdString());
    QCOMPARE(int(d.kind), kind);
    QCOMPARE(d.gzip, gzip);
    QVERIFY2(d.reason.empty(), d.reason.c_str());
    QVERIFY(!inputKindText(d.kind).empty());
  }

  // Content decides, not the name: gzip under a .json name, a snapshot named
  // .json, a protocol 0/1 pickle (to be refused by name by its reader).
  void contentNotName() {
    QTemporaryDir dir;
    const std::string kineto_gz = dir.filePath("rank0.json").toStdString();
    writeGzip(kineto_gz, readAll(kData + "kineto/two_ranks/rank0_int_ts.json"));
    const DetectedInput k = detectInput(kineto_gz);
    QCOMPARE(k.kind, InputKind::KinetoTrace);
    QVERIFY(k.gzip);

    const std::string snapshot_as_json = dir.filePath("snap.json").toStdString();
    writeFile(snapshot_as_json, readAll(kData + "postmortem/snapshot_oom.pickle"));
    QCOMPARE(detectInput(snapshot_as_json).kind, InputKind::MemorySnapshot);

    const std::string p0 = dir.filePath("p0.pickle").toStdString(), p1 = dir.filePath("p1.pickle").toStdString();
    writeFile(p0, "(dp0\nVsegments\np1\n(lp2\ns.");
    writeFile(p1, std::string("}q\0X\x08\0\0\0segmentsq\x01]q\x02s.", 23));
    QCOMPARE(detectInput(p0).kind, InputKind::MemorySnapshot);
    QCOMPARE(detectInput(p1).kind, InputKind::MemorySnapshot);

    // A profiler trace's distributedInfo names pg_config too: a trace, not a dump.
    const std::string pg = dir.filePath("pg.json").toStdString();
    writeFile(pg, R"({"distributedInfo": {"rank": 0, "pg_config": {}}, "traceEvents": []})");
    QCOMPARE(detectInput(pg).kind, InputKind::KinetoTrace);

    // A memory timeline needs its name: "[[" elsewhere is the profiler's bare array.
    const std::string lists = dir.filePath("lists.txt").toStdString();
    writeFile(lists, "[[1, 2], [3, 4]]");
    QCOMPARE(detectInput(lists).kind, InputKind::KinetoTrace);
  }

  // Empty and truncated files: a .gz name goes to the profiler reader, which
  // says "is empty after decompression" or names the cut; others say so here.
  void emptyAndTruncated() {
    QTemporaryDir dir;
    const std::string empty_gz = dir.filePath("empty.json.gz").toStdString();
    writeGzip(empty_gz, "");
    QCOMPARE(detectInput(empty_gz).kind, InputKind::KinetoTrace);
    QVERIFY(detectInput(empty_gz).gzip);

    const std::string zero = dir.filePath("zero.json").toStdString();
    writeFile(zero, "");
    const DetectedInput z = detectInput(zero);
    QCOMPARE(z.kind, InputKind::Unknown);
    QVERIFY2(has(z.reason, zero + ": is empty;"), z.reason.c_str());

    const std::string blank = dir.filePath("blank.pickle").toStdString();
    writeFile(blank, "\n  \n");
    QVERIFY2(has(detectInput(blank).reason, "is empty (only white space)"), detectInput(blank).reason.c_str());

    const std::string empty_gz_json = dir.filePath("empty.json").toStdString();
    writeGzip(empty_gz_json, "");
    QVERIFY2(has(detectInput(empty_gz_json).reason, "is empty after decompression"), detectInput(empty_gz_json).reason.c_str());

    // Half a pickle is still a pickle: its reader names the byte where it ends.
    const std::string cut = dir.filePath("cut.pickle").toStdString();
    const std::string bytes = readAll(kData + "postmortem/snapshot_one_device.pickle");
    writeFile(cut, bytes.substr(0, bytes.size() / 2));
    QCOMPARE(detectInput(cut).kind, InputKind::MemorySnapshot);
  }

  void foldersAndNonRegularFiles() {
    QTemporaryDir dir;
    // An empty folder is a profiler job whose reader says it has no traces.
    QCOMPARE(detectInput(dir.path().toStdString()).kind, InputKind::KinetoFolder);
    const std::string snaps = dir.filePath("snaps").toStdString();
    QVERIFY(QDir().mkpath(QString::fromStdString(snaps)));
    writeFile(snaps + "/rank0.pickle", readAll(kData + "postmortem/snapshot_oom.pickle"));
    const DetectedInput s = detectInput(snaps);
    QCOMPARE(s.kind, InputKind::Unknown);
    QVERIFY2(has(s.reason, "a folder of memory snapshots") && has(s.reason, "rank0.pickle"), s.reason.c_str());

    const std::string fifo = dir.filePath("pipe.json").toStdString();
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    const DetectedInput f = detectInput(fifo);  // never opened: it would block
    QCOMPARE(f.kind, InputKind::Unknown);
    QVERIFY2(has(f.reason, fifo + ": not a regular file"), f.reason.c_str());

    const std::string missing = dir.filePath("missing.json").toStdString();
    QVERIFY2(has(detectInput(missing).reason, missing + ": no such file or folder"), detectInput(missing).reason.c_str());
  }

  // Unknown content: one line naming what was seen and what is accepted.
  void unknownSaysWhatWasSeenAndWhatIsAccepted() {
    QTemporaryDir dir;
    const std::string text = dir.filePath("notes.txt").toStdString();
    writeFile(text, "hello\n");
    const DetectedInput t = detectInput(text);
    QCOMPARE(t.kind, InputKind::Unknown);
    QVERIFY2(has(t.reason, text + ": starts with 'h': neither JSON ('{' or '[') nor a pickle (0x80)"), t.reason.c_str());
    QVERIFY2(has(t.reason, "ShardScope opens PyTorch profiler traces") && has(t.reason, "memory snapshots") &&
                 has(t.reason, "flight-recorder dumps") && has(t.reason, "memory timeline") && has(t.reason, "its own traces"),
             t.reason.c_str());
    QVERIFY(!has(t.reason, "\n"));

    const std::string binary = dir.filePath("blob.bin").toStdString();
    writeFile(binary, std::string("\x01\x02\x03", 3));
    QVERIFY2(has(detectInput(binary).reason, "starts with byte 0x01"), detectInput(binary).reason.c_str());

    // gzip whose JSON shows no Kineto marks, under a name without .gz: not read as a ShardScope trace.
    const std::string gz_object = dir.filePath("object.json").toStdString();
    writeGzip(gz_object, R"({"traceEvents": [{"ph": "X", "cat": "forward"}]})");
    const DetectedInput g = detectInput(gz_object);
    QCOMPARE(g.kind, InputKind::Unknown);
    QVERIFY(g.gzip);
    QVERIFY2(has(g.reason, "gzip data holding no profiler trace"), g.reason.c_str());
  }
};

QTEST_GUILESS_MAIN(TestInputDetect)
#include "test_input_detect.moc"
