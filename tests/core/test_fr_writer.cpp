// ShardScope's own flight-recorder dumps: the pickle writer reads back through
// readPickle (every kind, batches past 1000 items, ints past 64 bits) and
// through Python's pickle.load (when /usr/bin/python3 exists); the
// rank-dependent-hang preset run with its dumps gives the diagnosis its own
// hang report gives (culprit rank, op, seq, waiting ranks); the ladder model
// marks the fixtures' first mismatch at the right (group, seq, rank).
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <regex>

#include "config/preset_file.h"
#include "engine/run.h"
#include "postmortem/flight_recorder.h"
#include "postmortem/fr_dump_writer.h"
#include "postmortem/fr_ladder.h"
#include "postmortem/pickle_reader.h"
#include "postmortem/pickle_writer.h"

using namespace shardscope;
using namespace shardscope::postmortem;

namespace {

const std::string kData = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/postmortem/";

Value intValue(int64_t i) {
  Value v;
  v.kind = ValueKind::Int;
  v.i = i;
  return v;
}

// "0, 2 and 3" -> {0, 2, 3}
std::vector<int> rankList(const std::string& text) {
  std::vector<int> out;
  const std::regex num("\\d+");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), num); it != std::sregex_iterator(); ++it)
    out.push_back(std::stoi(it->str()));
  return out;
}

struct HangRun {
  RunTrace trace;
  std::string error;
};

HangRun runHangPreset() {
  const PresetFile preset = readPresetFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/resources/presets/rank-dependent-hang.json");
  HangRun out;
  Run run(preset.runs.at(0).config);
  try {
    run.execute();
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  out.trace = run.trace();
  return out;
}

// One run for every test that needs it (it waits out the preset's 1.5 s timeout; slower under sanitizers).
const HangRun& hangRun() {
  static const HangRun run = runHangPreset();
  return run;
}

}  // namespace

class TestFrWriter : public QObject {
  Q_OBJECT

 private slots:
  void pickleRoundTrip() {
    ValueTree t;
    t.root = t.addContainer(ValueKind::Dict);
    auto put = [&](std::string_view key, const Value& v) {
      const Value k = t.addText(ValueKind::Str, key);
      t.container(t.root).items.push_back(k);
      t.container(t.root).items.push_back(v);
    };
    for (const int64_t i : {int64_t(0), int64_t(255), int64_t(256), int64_t(65535), int64_t(65536), int64_t(-1),
                            int64_t(INT32_MIN), int64_t(INT32_MAX) + 1, INT64_MIN, INT64_MAX})
      put("int " + std::to_string(i), intValue(i));
    put("big", t.addText(ValueKind::BigInt, "-123456789012345678901234567890"));
    Value f;
    f.kind = ValueKind::Float;
    f.f = -1.25e-7;
    put("float", f);
    Value b;
    b.kind = ValueKind::Bool;
    b.i = 1;
    put("true", b);
    put("none", Value{});
    put("text", t.addText(ValueKind::Str, "backward of block 3 \xc2\xb7 bucket 2"));
    put("empty tuple", t.addContainer(ValueKind::Tuple));
    const Value pair = t.addContainer(ValueKind::Tuple);
    t.container(pair).items = {t.addText(ValueKind::Str, "0"), t.addText(ValueKind::Str, "default_pg")};
    put("pair", pair);
    const Value many = t.addContainer(ValueKind::List);  // past one APPENDS batch of 1000
    for (int i = 0; i < 2500; ++i) t.container(many).items.push_back(intValue(i));
    put("many", many);
    const Value wide = t.addContainer(ValueKind::Dict);  // past one SETITEMS batch
    for (int i = 0; i < 1200; ++i) {
      t.container(wide).items.push_back(t.addText(ValueKind::Str, "k" + std::to_string(i)));
      t.container(wide).items.push_back(intValue(i));
    }
    put("wide", wide);
    const std::string bytes = writePickle(t);
    QCOMPARE(static_cast<unsigned char>(bytes[0]), 0x80u);
    QCOMPARE(int(bytes[1]), 2);  // no bytes values: protocol 2, as torch's own pickler
    const ValueTree back = readPickle(bytes);
    QCOMPARE(back.toJson(back.root, 64, 100000), t.toJson(t.root, 64, 100000));
    QCOMPARE(back.at(*back.get(back.root, "many"), 2499).i, int64_t(2499));
    QCOMPARE(back.get(back.root, "pair")->kind, ValueKind::Tuple);
    QCOMPARE(back.get(back.root, "int -9223372036854775808")->i, INT64_MIN);
    QCOMPARE(std::string(back.text(*back.get(back.root, "big"))), std::string("-123456789012345678901234567890"));

    t.container(t.root).items.push_back(t.addText(ValueKind::Str, "raw"));
    t.container(t.root).items.push_back(t.addText(ValueKind::Bytes, std::string("\x00\x01", 2)));
    const std::string with_bytes = writePickle(t);
    QCOMPARE(int(with_bytes[1]), 3);  // BINBYTES needs protocol 3
    const ValueTree back3 = readPickle(with_bytes);
    QCOMPARE(back3.get(back3.root, "raw")->kind, ValueKind::Bytes);
  }

  void aContainerInsideItselfIsRefused() {
    ValueTree t;
    t.root = t.addContainer(ValueKind::List);
    t.container(t.root).items.push_back(t.root);
    QVERIFY_THROWS_EXCEPTION(PostmortemFormatError, writePickle(t));
  }

  // The hang preset's run: its dumps say what its own hang report says.
  void hangPresetDiagnosis() {
    const HangRun& hang = hangRun();
    QVERIFY2(!hang.error.empty(), "the hang preset's run did not stop");
    // "... ranks 0, 2 and 3 are stuck in all_reduce of bucket 2 (N bytes, seq S), waiting for rank 1."
    const std::regex stuck("ranks? ([0-9, and]+) (?:are|is) stuck in (\\w+) .*?seq (\\d+)\\), waiting for ranks? ([0-9, and]+)\\.");
    std::smatch m;
    QVERIFY2(std::regex_search(hang.error, m, stuck), hang.error.c_str());
    const std::vector<int> waiting = rankList(m[1].str()), culprits = rankList(m[4].str());
    const std::string op = m[2].str();
    const int64_t seq = std::stoll(m[3].str());

    QTemporaryDir dir;
    const std::vector<std::string> paths = writeFlightRecorderDumps(hang.trace, dir.path().toStdString());
    QCOMPARE(paths.size(), size_t(4));
    QVERIFY(std::filesystem::path(paths[0]).filename() == "nccl_trace_rank_0");
    const std::vector<FrRankDump> dumps = readFlightRecorderDumps({dir.path().toStdString()});
    QCOMPARE(dumps.size(), size_t(4));
    QCOMPARE(dumps[2].version, std::string("2.10"));
    const FrDiagnosis d = diagnoseFlightRecorder(dumps);
    QVERIFY2(d.first_mismatch.has_value(), "the dumps of a hung run show no mismatch");
    const FrMismatch& fm = *d.first_mismatch;
    QCOMPARE(fm.kind, std::string("missing_ranks"));
    QCOMPARE(fm.ranks, culprits);
    QCOMPARE(fm.waiting_ranks, waiting);
    QCOMPARE(fm.op, op);
    QCOMPARE(fm.seq, seq);
    QCOMPARE(fm.pg, std::string("0"));
    QCOMPARE(fm.pg_desc, std::string("default_pg"));
    const std::string sentence = frMismatchSentence(fm);
    QVERIFY2(sentence.find("rank 1 never joined " + op + " #" + std::to_string(seq) + " of pg 0 (default_pg)") == 0,
             sentence.c_str());
    QVERIFY2(sentence.find("ddp_strategy.cpp") != std::string::npos, sentence.c_str());
    // The waiting ranks' entry is started, every earlier one completed.
    for (const FrRankDump& r : dumps) {
      for (const FrEntry& e : r.entries) {
        if (e.collective_seq_id < seq) QVERIFY2(e.state == FrState::Completed, e.profiling_name.c_str());
        if (e.collective_seq_id == seq) QCOMPARE(e.state, FrState::Started);
      }
    }
    // The ladder marks the culprit's cell in that row.
    const FrLadder l = buildFrLadder(dumps);
    QVERIFY(l.mismatch_row >= 0);
    QCOMPARE(l.rows[l.mismatch_row].seq, seq);
    QCOMPARE(l.cell(l.mismatch_row, 1).state, FrCell::Missing);
    QVERIFY(l.cell(l.mismatch_row, 1).culprit);
    QCOMPARE(l.cell(l.mismatch_row, 0).state, FrCell::Started);
    QCOMPARE(l.sentence, sentence);
  }

  // A ring shorter than the run: the oldest entries go, record ids keep counting, the diagnosis stands.
  void aShortRingStartsAboveRecordZero() {
    const HangRun& hang = hangRun();
    FrWriteOptions options;
    options.ring = 2;
    options.epoch_ns = 0;
    const std::vector<FrRankDump> dumps = flightRecorderDumps(hang.trace, options);
    QCOMPARE(dumps.size(), size_t(4));
    QCOMPARE(dumps[0].entries.size(), size_t(2));
    QVERIFY(dumps[0].entries.front().record_id > 0);
    const FrDiagnosis d = diagnoseFlightRecorder(dumps);
    QVERIFY(d.first_mismatch.has_value());
    QCOMPARE(d.first_mismatch->ranks, std::vector<int>{1});
    QVERIFY(!d.notes.empty());  // the cut rings are noted
    QVERIFY2(frMismatchSentence(*d.first_mismatch).find("ms into the run") != std::string::npos,
             frMismatchSentence(*d.first_mismatch).c_str());
  }

  // Python's own pickle reads the dumps with the types PyTorch's have.
  void pythonLoadsTheDumps() {
    if (!QFile::exists("/usr/bin/python3")) QSKIP("no /usr/bin/python3: Python's pickle.load not checked");
    const HangRun& hang = hangRun();
    QTemporaryDir dir;
    writeFlightRecorderDumps(hang.trace, dir.path().toStdString());
    const char* script = R"(
import pickle, sys
d = pickle.load(open(sys.argv[1], 'rb'))
assert d['version'] == '2.10', d['version']
assert isinstance(d['pg_config']['0']['ranks'], str)
assert set(d['pg_status']['0']) == {'last_enqueued_collective', 'last_started_collective', 'last_completed_collective'}
e = d['entries'][-1]
assert isinstance(e['process_group'], tuple) and e['process_group'] == ('0', 'default_pg'), e['process_group']
for k in ('record_id', 'pg_id', 'collective_seq_id', 'p2p_seq_id', 'time_created_ns', 'time_discovered_started_ns'):
    assert isinstance(e[k], int), k
assert e['profiling_name'].startswith('nccl:'), e['profiling_name']
assert e['state'] in ('scheduled', 'started', 'completed')
assert isinstance(e['input_sizes'], list) and isinstance(e['input_sizes'][0], list)
assert e['input_dtypes'] == ['BFloat16'], e['input_dtypes']
assert e['is_p2p'] is False and isinstance(e['retired'], bool)
done = [x for x in d['entries'] if x['state'] == 'completed']
assert done and isinstance(done[0]['duration_ms'], float) and isinstance(done[0]['time_discovered_completed_ns'], int)
f = e['frames'][0]
assert set(f) == {'name', 'filename', 'line'} and isinstance(f['line'], int)
print(len(d['entries']), e['state'], e['collective_seq_id'], f['filename'])
)";
    QProcess p;
    p.start("/usr/bin/python3", {"-c", script, dir.filePath("nccl_trace_rank_0")});
    QVERIFY(p.waitForFinished(30000));
    const QString out = QString::fromUtf8(p.readAllStandardOutput()), err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(p.exitCode() == 0, qPrintable(err));
    QVERIFY2(out.contains(" started ") && out.contains("core/parallel/ddp_strategy.cpp"), qPrintable(out));
  }

  void ladderOfTheFixtures_data() {
    QTest::addColumn<QString>("set");
    QTest::addColumn<int>("seq");
    QTest::addColumn<int>("rank");
    QTest::addColumn<int>("state");
    QTest::newRow("missing rank") << "fr_missing_rank" << 4 << 2 << int(FrCell::Missing);
    QTest::newRow("size") << "fr_size_mismatch" << 2 << 1 << int(FrCell::Started);
    QTest::newRow("dtype") << "fr_dtype_mismatch" << 3 << 1 << int(FrCell::Started);
    QTest::newRow("op") << "fr_op_mismatch" << 5 << 2 << int(FrCell::Started);
    QTest::newRow("p2p") << "fr_p2p" << 2 << 1 << int(FrCell::Missing);
    QTest::newRow("truncated ring") << "fr_truncated_ring" << 7 << 1 << int(FrCell::Missing);
  }
  void ladderOfTheFixtures() {
    QFETCH(QString, set);
    QFETCH(int, seq);
    QFETCH(int, rank);
    QFETCH(int, state);
    const std::vector<FrRankDump> dumps = readFlightRecorderDumps({kData + set.toStdString()});
    const FrLadder l = buildFrLadder(dumps);
    QVERIFY(l.mismatch_row >= 0);
    QCOMPARE(l.rows[l.mismatch_row].seq, int64_t(seq));
    QCOMPARE(l.rows[l.mismatch_row].pg, std::string("default_pg"));
    QVERIFY(!l.rows[l.mismatch_row].p2p);
    const int col = l.column(rank);
    QVERIFY(col >= 0);
    QCOMPARE(int(l.cell(l.mismatch_row, col).state), state);
    for (size_t c = 0; c < l.ranks.size(); ++c)
      QCOMPARE(l.cell(l.mismatch_row, static_cast<int>(c)).culprit, int(c) == col);
    QCOMPARE(l.sentence, frMismatchSentence(*diagnoseFlightRecorder(dumps).first_mismatch));
    const std::string detail = frLadderRowDetail(l, dumps, l.mismatch_row);
    QVERIFY2(detail.find("rank " + std::to_string(rank) + ": ") != std::string::npos, detail.c_str());
    QVERIFY2(detail.find("train.py:") != std::string::npos, detail.c_str());  // the stacks
  }

  void ladderOfATruncatedRingAndP2p() {
    // Both rings hold 3 entries and wrapped: rank 0's lost #1..#4, rank 1's #1..#3.
    // #4 is rank 1's oldest: overwritten on rank 0, not missing.
    const std::vector<FrRankDump> cut = readFlightRecorderDumps({kData + "fr_truncated_ring"});
    const FrLadder l = buildFrLadder(cut);
    const int row4 = l.rowOf("0", 4);
    QVERIFY(row4 >= 0);
    QCOMPARE(l.cell(row4, 0).state, FrCell::Overwritten);
    QCOMPARE(l.cell(row4, 1).state, FrCell::Completed);
    // The send/recv pair has its own p2p row, not collective #1's.
    const std::vector<FrRankDump> p2p = readFlightRecorderDumps({kData + "fr_p2p"});
    const FrLadder lp = buildFrLadder(p2p);
    int p2p_rows = 0;
    for (const FrLadderRow& r : lp.rows) p2p_rows += r.p2p ? 1 : 0;
    QCOMPARE(p2p_rows, 1);
    const FrLadder none = buildFrLadder(readFlightRecorderDumps({kData + "fr_all_complete"}));
    QCOMPARE(none.mismatch_row, -1);
    QVERIFY(none.sentence.find("no mismatch") == 0);
  }
};

QTEST_GUILESS_MAIN(TestFrWriter)
#include "test_fr_writer.moc"
