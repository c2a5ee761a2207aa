// `shardscope-cli analyze` on a job with a planted straggler
// (tests/data/kineto/straggler_job: rank 2 starts every collective 5 ms late):
// the text's straggler section, --json's collective_skew, --collectives-csv,
// and that flag refused without a FILE or on post-mortem inputs.
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

std::string readText(const std::string& path) {
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace

class TestStragglerCli : public QObject {
  Q_OBJECT

 private slots:
  void stragglerReported() {
    QTemporaryDir dir;
    const std::string json = dir.filePath("a.json").toStdString();
    const std::string csv = dir.filePath("c.csv").toStdString();
    const Result r = analyze({kData + "straggler_job", "--json", json, "--collectives-csv", csv});
    QVERIFY2(r.code == 0, r.err.c_str());
    QVERIFY2(r.out.find("stragglers: 8 collectives matched across ranks in 1 process group") != std::string::npos,
             r.out.c_str());
    QVERIFY2(r.out.find("rank 2 arrived last in 100.0 % of collectives (8 of 8), 4.970 ms median wait imposed") !=
                 std::string::npos, r.out.c_str());
    QVERIFY2(r.out.find("collectives written to " + csv) != std::string::npos, r.out.c_str());
    const std::string j = readText(json);
    QVERIFY2(j.find("\"collective_skew\": {") != std::string::npos, j.c_str());
    QVERIFY2(j.find("\"last_rank\": 2, \"wait_us_by_rank\": {\"0\": 5000.000, \"1\": 4990.000, \"2\": 0.000, "
                    "\"3\": 4970.000}") != std::string::npos, j.c_str());
    QVERIFY2(j.find("\"stragglers\": [") != std::string::npos, j.c_str());
    const std::string c = readText(csv);
    QVERIFY2(c.rfind("index,pg,seq,kind,bytes,group_size,", 0) == 0, c.c_str());
    QCOMPARE(std::count(c.begin(), c.end(), '\n'), 9L);  // the header and 8 collectives
    QVERIFY2(c.find("\n0,0,1,all_reduce,4194304,4,4,1000.000,400.000,10.486,15.729,5000.000,2,") != std::string::npos,
             c.c_str());
  }

  void csvFlagNeedsAFile() {
    const Result r = analyze({kData + "straggler_job", "--collectives-csv"});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, std::string("error: --collectives-csv needs a FILE to write\n"));
  }

  void csvUnwritableIsOneError() {
    const Result r = analyze({kData + "straggler_job", "--collectives-csv", "/nonexistent-dir/c.csv"});
    QCOMPARE(r.code, 4);  // kExitOutputFailed
    QVERIFY2(r.err.rfind("error: --collectives-csv ", 0) == 0, r.err.c_str());
    QCOMPARE(std::count(r.err.begin(), r.err.end(), '\n'), 1L);
  }
};

QTEST_APPLESS_MAIN(TestStragglerCli)
#include "test_straggler_cli.moc"
