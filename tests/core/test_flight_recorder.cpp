// Flight-recorder dumps diagnosed across ranks: each fixture set of
// tests/data/postmortem/make_fixtures.py (missing rank, size, dtype and op
// mismatches, p2p entries, a pipeline's unmatched send, a truncated ring,
// pickle protocols 2/4/5 and JSON) with its culprit, waiting ranks and frames
// worked by hand there.
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <string>

#include "postmortem/flight_recorder.h"
#include "postmortem/fr_ladder.h"
#include "postmortem/fr_p2p_match.h"
#include "postmortem/pickle_reader.h"

using namespace shardscope;
using namespace shardscope::postmortem;

namespace {

const std::string kData = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/postmortem/";

FrDiagnosis diagnose(const std::string& set) { return diagnoseFlightRecorder(readFlightRecorderDumps({kData + set})); }

}  // namespace

class TestFlightRecorder : public QObject {
  Q_OBJECT

 private slots:
  void missingRank() {
    const FrDiagnosis d = diagnose("fr_missing_rank");
    QCOMPARE(d.ranks, (std::vector<int>{0, 1, 2, 3}));
    QVERIFY(d.first_mismatch.has_value());
    const FrMismatch& m = *d.first_mismatch;
    QCOMPARE(m.pg, std::string("0"));  // PyTorch's name for the group
    QCOMPARE(m.pg_desc, std::string("default_pg"));
    QCOMPARE(m.seq, int64_t(4));
    QCOMPARE(m.op, std::string("all_reduce"));
    QCOMPARE(m.kind, std::string("missing_ranks"));
    QCOMPARE(m.ranks, std::vector<int>{2});
    QCOMPARE(m.waiting_ranks, (std::vector<int>{0, 1, 3}));
    QCOMPARE(m.frames_by_rank.at(2).filename, std::string("train.py"));
    QCOMPARE(m.frames_by_rank.at(2).line, int64_t(88));
    QCOMPARE(m.since_ns, int64_t(1700000004001000003));
    QCOMPARE(frMismatchSentence(m),
             std::string("rank 2 never joined all_reduce #4 of pg 0 (default_pg); ranks 0, 1 and 3 are waiting in it since "
                         "2023-11-14 22:13:24 UTC; rank 2 last ran train.py:88 (train_step)"));
  }

  void sizeMismatchJson() {
    const FrMismatch m = *diagnose("fr_size_mismatch").first_mismatch;
    QCOMPARE(m.kind, std::string("size"));
    QCOMPARE(m.seq, int64_t(2));
    QCOMPARE(m.ranks, std::vector<int>{1});
    QCOMPARE(m.waiting_ranks, (std::vector<int>{0, 2}));
    QVERIFY2(m.detail.find("[[2048]]") != std::string::npos, m.detail.c_str());
  }

  void dtypeMismatchProtocol2() {
    const FrMismatch m = *diagnose("fr_dtype_mismatch").first_mismatch;
    QCOMPARE(m.kind, std::string("dtype"));
    QCOMPARE(m.op, std::string("broadcast"));
    QCOMPARE(m.seq, int64_t(3));
    QCOMPARE(m.ranks, std::vector<int>{1});
    QVERIFY2(m.detail.find("BFloat16") != std::string::npos, m.detail.c_str());
  }

  void opMismatchIsTheRankDependentBranch() {
    const FrMismatch m = *diagnose("fr_op_mismatch").first_mismatch;
    QCOMPARE(m.kind, std::string("op"));
    QCOMPARE(m.seq, int64_t(5));
    QCOMPARE(m.op, std::string("all_reduce"));
    QCOMPARE(m.ranks, std::vector<int>{2});
    QCOMPARE(m.waiting_ranks, (std::vector<int>{0, 1, 3}));
    QCOMPARE(m.frames_by_rank.at(2).line, int64_t(91));
    QVERIFY2(m.detail.find("_allgather_base") != std::string::npos, m.detail.c_str());
  }

  void p2pEntriesAreNotCollectives() {
    const FrMismatch m = *diagnose("fr_p2p").first_mismatch;
    QCOMPARE(m.kind, std::string("missing_ranks"));
    QCOMPARE(m.seq, int64_t(2));  // not #1, which the send/recv pair also carries
    QCOMPARE(m.ranks, std::vector<int>{1});
    QCOMPARE(m.waiting_ranks, std::vector<int>{0});
  }

  void p2pNamesAsPyTorchWritesThem() {
    const auto send = frP2pOp("nccl:send 0->1");
    QVERIFY(send && send->send && send->self == 0 && send->peer == 1);
    const auto recv = frP2pOp("nccl:recv 3<-12");
    QVERIFY(recv && !recv->send && recv->self == 3 && recv->peer == 12);
    QVERIFY(!frP2pOp("nccl:all_reduce"));
    QVERIFY(!frP2pOp("nccl:send 0->"));
    QVERIFY(!frP2pOp("nccl:recv 1->0"));
  }

  void pipelineSendNobodyReceived() {
    // fr_p2p_hang: rank 0's third "send 0->1" is started; rank 1 posted two
    // "recv 1<-0" and went on to all-reduce #2, which rank 0 never reached.
    // The send (created at BASE + 1 s + 12 ns) precedes the all-reduce (BASE + 2 s): it is the hang.
    const FrDiagnosis d = diagnose("fr_p2p_hang");
    QVERIFY(d.first_mismatch.has_value());
    const FrMismatch& m = *d.first_mismatch;
    QCOMPARE(m.kind, std::string("p2p"));
    QCOMPARE(m.op, std::string("send"));
    QCOMPARE(m.seq, int64_t(3));
    QCOMPARE(m.pg, std::string("0"));
    QCOMPARE(m.ranks, std::vector<int>{1});
    QCOMPARE(m.waiting_ranks, std::vector<int>{0});
    QCOMPARE(m.since_ns, int64_t(1700000001001000012));
    QCOMPARE(frMismatchSentence(m),
             std::string("rank 1 never posted the recv matching rank 0's send #3 to it in pg 0 (default_pg); rank 0 "
                         "is waiting in it since 2023-11-14 22:13:21 UTC; rank 1 last ran train.py:88 (train_step)"));
    // Matched pairs are no finding: fr_p2p's one send and one recv agree.
    std::vector<std::string> notes;
    QVERIFY(matchFrP2p(readFlightRecorderDumps({kData + "fr_p2p"}), notes).empty());
    // Nor is a completed send whose recv the peer's (earlier) dump lacks: the recv did run.
    std::vector<FrRankDump> dumps = readFlightRecorderDumps({kData + "fr_p2p_hang"});
    dumps[0].entries.back().state = FrState::Completed;
    QVERIFY(matchFrP2p(dumps, notes).empty());
  }

  void pickleAndJsonOfOneRankReadOnce() {
    // A folder holding a rank's dump both ways: the pickle is read, not refused as a second dump.
    QTemporaryDir dir;
    for (const char* f : {"nccl_trace_rank_0", "nccl_trace_rank_1"}) {
      QVERIFY(QFile::copy(QString::fromStdString(kData + "fr_p2p/" + f), dir.filePath(f)));
      QVERIFY(QFile::copy(QString::fromStdString(kData + "fr_all_complete/" + f + ".json"),
                          dir.filePath(QString(f) + ".json")));
    }
    const std::vector<FrRankDump> dumps = readFlightRecorderDumps({dir.path().toStdString()});
    QCOMPARE(dumps.size(), size_t(2));
    QCOMPARE(dumps[0].path, dir.filePath("nccl_trace_rank_0").toStdString());
  }

  void truncatedRingIsNotAMismatch() {
    const FrDiagnosis d = diagnose("fr_truncated_ring");
    const FrMismatch m = *d.first_mismatch;
    QCOMPARE(m.seq, int64_t(7));
    QCOMPARE(m.kind, std::string("missing_ranks"));
    QCOMPARE(m.ranks, std::vector<int>{1});
    // Both rings are full (3 entries each) and start above record 0: both wrapped.
    QCOMPARE(d.notes.size(), size_t(2));
    QVERIFY2(d.notes[0].find("rank 0's ring starts at record 4 (older entries were overwritten") != std::string::npos,
             d.notes[0].c_str());
    QVERIFY2(d.notes[1].find("rank 1's ring starts at record 3 (older entries were overwritten") != std::string::npos,
             d.notes[1].c_str());
  }

  void ringNotFullWasNotOverwritten() {
    // Rank 1's dump starts at record 2 with 2 entries where rank 0's holds 5: its
    // ring never filled, so "overwritten" would be false; the miss in #5 stands.
    const std::vector<FrRankDump> dumps = readFlightRecorderDumps({kData + "fr_ring_not_full"});
    QVERIFY(!frRingWrapped(dumps[1], dumps));
    QVERIFY(!frRingWrapped(dumps[0], dumps));  // starts at record 0
    const FrDiagnosis d = diagnoseFlightRecorder(dumps);
    QCOMPARE(d.first_mismatch->seq, int64_t(5));
    QCOMPARE(d.first_mismatch->ranks, std::vector<int>{1});
    QCOMPARE(d.notes.size(), size_t(1));
    QVERIFY2(d.notes[0].find("overwritten") == std::string::npos || d.notes[0].find("nothing was overwritten") != std::string::npos,
             d.notes[0].c_str());
    QVERIFY2(d.notes[0].find("rank 1's dump starts at record 2") != std::string::npos, d.notes[0].c_str());
    // On the ladder: rank 1's #1 and #2 are not in its dump, not overwritten; #5 is missing.
    const FrLadder l = buildFrLadder(dumps);
    QCOMPARE(l.cell(l.rowOf("0", 1), 1).state, FrCell::NotInDump);
    QCOMPARE(frCellName(FrCell::NotInDump), std::string_view("not in the dump"));
    QCOMPARE(l.cell(l.rowOf("0", 5), 1).state, FrCell::Missing);
    // A gap in the record ids (an only-active dump) is not a wrapped ring either, even when full.
    std::vector<FrRankDump> gap = readFlightRecorderDumps({kData + "fr_truncated_ring"});
    QVERIFY(frRingWrapped(gap[1], gap));
    gap[1].entries.back().record_id += 7;
    QVERIFY(!frRingWrapped(gap[1], gap));
  }

  void coalescedGroupIsOneCollective() {
    // Coalesced group #2 (three all-reduces, then nccl:coalesced) on both ranks, all completed.
    const FrDiagnosis d = diagnose("fr_coalesced");
    QVERIFY(!d.first_mismatch.has_value());
    QVERIFY(d.notes.empty());
    const FrLadder l = buildFrLadder(readFlightRecorderDumps({kData + "fr_coalesced"}));
    QCOMPARE(l.rows.size(), size_t(3));  // #1, the coalesced #2, #3
    QCOMPARE(l.rows[1].op, std::string("coalesced"));
    QCOMPARE(l.cell(1, 0).state, FrCell::Completed);
  }

  void coalescedMembersAreCompared() {
    // Rank 1's second member has 3072 elements where ranks 0 and 2 have 2048; the
    // coalesced entries (no tensors) agree, so only the members tell.
    const FrDiagnosis d = diagnose("fr_coalesced_size_mismatch");
    QVERIFY(d.first_mismatch.has_value());
    const FrMismatch& m = *d.first_mismatch;
    QCOMPARE(m.kind, std::string("size"));
    QCOMPARE(m.seq, int64_t(2));
    QCOMPARE(m.ranks, std::vector<int>{1});
    QCOMPARE(m.op, std::string("coalesced(all_reduce, all_reduce, all_reduce)"));
    QVERIFY2(m.detail.find("3072") != std::string::npos && m.detail.find("2048") != std::string::npos, m.detail.c_str());
    QCOMPARE(m.waiting_ranks, (std::vector<int>{0, 2}));
  }

  void allCompleteHasNoMismatch() { QVERIFY(!diagnose("fr_all_complete").first_mismatch.has_value()); }

  void rankFromFileName() {
    QCOMPARE(frRankFromPath("/tmp/nccl_trace_rank_12"), 12);
    QCOMPARE(frRankFromPath("dump_rank3.json"), 3);
    QCOMPARE(frRankFromPath("dump.json"), -1);
  }

  void badDumpsAreNamed_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("expected");
    QTest::newRow("version") << R"({"version": "1.5", "entries": []})" << "version '1.5' is not read; ShardScope reads versions 2.x";
    QTest::newRow("no version") << R"({"entries": []})" << "version must be a string";
    QTest::newRow("seq") << R"({"version": "2.4", "entries": [{"record_id": 0, "pg_id": 0, "profiling_name": "nccl:all_reduce", "state": "started"}]})"
                         << "entries[0].collective_seq_id must be an integer, it is missing";
    QTest::newRow("state") << R"({"version": "2.4", "entries": [{"record_id": 0, "pg_id": 0, "collective_seq_id": 1, "profiling_name": "x", "state": "lost"}]})"
                           << "entries[0].state 'lost' is none of scheduled, started, completed";
  }
  void badDumpsAreNamed() {
    QFETCH(QString, json);
    QFETCH(QString, expected);
    std::string error;
    try {
      (void)parseFlightRecorderDump(readPostmortemDocument(json.toStdString()), 0, "r0.json");
    } catch (const PostmortemFormatError& e) {
      error = e.what();
    }
    QVERIFY2(error.find(expected.toStdString()) != std::string::npos, error.c_str());
  }

  void twoDumpsOfOneRankAreRefused() {
    QTemporaryDir dir;
    for (const char* name : {"a_rank_1.json", "b_rank_1.json"}) {
      std::ofstream f(dir.filePath(name).toStdString());
      f << R"({"version": "2.10", "pg_config": {}})";
    }
    try {
      (void)readFlightRecorderDumps({dir.path().toStdString()});
      QFAIL("read two dumps of rank 1");
    } catch (const PostmortemFormatError& e) {
      QVERIFY2(std::string(e.what()).find("rank 1 has two dumps") != std::string::npos, e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestFlightRecorder)
#include "test_flight_recorder.moc"
