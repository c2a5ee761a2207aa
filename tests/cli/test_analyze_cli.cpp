// `shardscope-cli analyze`: per-rank text and --json on a folder of traces,
// --rank-of for a trace without distributedInfo, and one line with exit
// code 2 for a bad flag or a bad trace.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>

#include "cli/analyze_command.h"

using namespace shardscope;

namespace {

const std::string kData = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/";

struct Result {
  int code;
  std::string out, err;
};

Result analyze(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = commandAnalyze(args, out, err);
  return {code, out.str(), err.str()};
}

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

class TestAnalyzeCli : public QObject {
  Q_OBJECT

 private slots:
  void folderOfRanks() {
    QTemporaryDir dir;
    const std::string json = dir.filePath("hta.json").toStdString();
    const Result r = analyze({kData + "two_ranks", "--json", json});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.find("rank 0") != std::string::npos, r.out.c_str());
    QVERIFY(r.out.find("idle 9.52 %   compute 61.90 %   non-compute 28.57 %") != std::string::npos);
    QVERIFY(r.out.find("comm/comp overlap: 50.00 %") != std::string::npos);
    QVERIFY(r.out.find("comm/comp overlap: 49.15 %") != std::string::npos);
    QVERIFY(r.out.find("HTA leaves the last step out") != std::string::npos);
    QVERIFY(r.out.find("all_reduce") != std::string::npos);
    QVERIFY(r.err.empty());  // progress lines only for big inputs
    std::ifstream f(json);
    const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    QVERIFY(text.find("\"overlap_pct\": 50.00") != std::string::npos);
  }

  void wholeTrace() {
    const Result r = analyze({kData + "two_ranks", "--whole-trace"});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.find("idle 20.00 %") != std::string::npos);
  }

  void rankOfGivesTheRank() {
    // One rank-less file is the job's rank 0, as in the window; it says so.
    const Result lone = analyze({kData + "no_rank.json"});
    QCOMPARE(lone.code, 0);
    QVERIFY(lone.out.find("rank 0") != std::string::npos);
    QVERIFY2(lone.err.find("no distributedInfo.rank: read as rank 0") != std::string::npos, lone.err.c_str());
    // Among several files a rank-less one is refused, naming --rank-of.
    const Result missing = analyze({kData + "no_rank.json", kData + "rank1_of_2.json"});
    QCOMPARE(missing.code, 2);
    QCOMPARE(lines(missing.err), 1);
    QVERIFY(missing.err.find("--rank-of") != std::string::npos);
    const Result given = analyze({kData + "no_rank.json", "--rank-of", kData + "no_rank.json=5"});
    QCOMPARE(given.code, 0);
    QVERIFY(given.out.find("rank 5") != std::string::npos);
  }

  void badFlagsOneLineExitTwo() {
    for (const auto& args : std::vector<std::vector<std::string>>{
             {kData + "two_ranks", "--frobnicate"}, {}, {kData + "two_ranks", "--json"},
             {kData + "no_rank.json", "--rank-of", "no_rank.json"}, {kData + "truncated.json.gz"}}) {
      const Result r = analyze(args);
      QCOMPARE(r.code, 2);
      QVERIFY2(r.err.rfind("error: ", 0) == 0, r.err.c_str());
      QCOMPARE(lines(r.err.substr(r.err.find("error: "))), 1);
    }
  }

  // A file no reader takes is refused by the one door (input/input_detect.h)
  // before any reader runs: what was seen and what analyze opens, one line.
  void unknownInputSaysWhatWasSeen() {
    QTemporaryDir dir;
    const std::string notes = dir.filePath("notes.txt").toStdString();
    std::ofstream(notes) << "step times by hand\n";
    const Result r = analyze({kData + "two_ranks", notes});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.rfind("error: " + notes + ": starts with 's': neither JSON", 0) == 0, r.err.c_str());
    QVERIFY2(r.err.find("ShardScope opens PyTorch profiler traces") != std::string::npos, r.err.c_str());
    QCOMPARE(lines(r.err), 1);
    QVERIFY(r.out.empty());
  }
};

QTEST_GUILESS_MAIN(TestAnalyzeCli)
#include "test_analyze_cli.moc"
