// `shardscope-cli analyze` with the critical path (tests/data/kineto/critical_path/late_rank:
// rank 1 starts the all-reduce 30 us after rank 0, worked out in tests/core/test_critical_path.cpp):
// the text section, --json's critical_path key, --critical-path-step / --critical-path-rank,
// and each bad value refused with one error naming the flag and what it takes.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/analyze_command.h"
#include "common/exit_codes.h"

using namespace shardscope;

namespace {

const std::string kJob = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/critical_path/late_rank";

struct Result {
  int code;
  std::string out, err;
};

Result analyze(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = commandAnalyze(args, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace

class TestCriticalPathCli : public QObject {
  Q_OBJECT

 private slots:
  void textAndJson() {
    QTemporaryDir dir;
    const std::string json = dir.filePath("a.json").toStdString();
    const Result r = analyze({kJob, "--json", json});
    QVERIFY2(r.code == kExitOk, r.err.c_str());
    for (const char* line :
         {"critical path of ProfilerStep#1 (the last step every rank analysed), rank 0 (its step ends last): 100.000 "
          "us from the step's start to its end or its GPU work's, whichever is later\n",
          "  compute                 20.000 us   20.00 %\n", "  communication           20.000 us   20.00 %\n",
          "  launch_cpu              28.000 us   28.00 %\n", "  idle                     2.000 us    2.00 %\n",
          "  waiting_for_rank        30.000 us   30.00 %\n",
          "  by rank (step us; waiting for another rank us):  0: 100.000; 30.000  1: 100.000; 0.000\n",
          "  longest of its 9 segments (dur us / start us / category / kind / name):\n",
          "        30.000        30.000  waiting_for_rank  kernel  ncclDevKernel_AllReduce_Sum_f32_RING_LL (rank 1 "
          "started it last)\n",
          "        20.000         8.000  compute  kernel  gemm_kernel\n"})
      QVERIFY2(r.out.find(line) != std::string::npos, (std::string("missing: ") + line + "\n" + r.out).c_str());
    std::ifstream f(json);
    const nlohmann::json j = nlohmann::json::parse(f);
    const nlohmann::json& cp = j.at("critical_path");
    QCOMPARE(cp.at("rank").get<int>(), 0);
    QCOMPARE(cp.at("total_us").get<double>(), 100.0);
    QCOMPARE(cp.at("by_category").at("waiting_for_rank").get<double>(), 30.0);
    // The other keys are still there.
    QVERIFY(j.contains("collective_skew"));
    QVERIFY(j.contains("ranks"));
  }

  void chosenStepAndRank() {
    QTemporaryDir dir;
    const std::string json = dir.filePath("a.json").toStdString();
    const Result r = analyze({kJob, "--critical-path-rank", "1", "--critical-path-step", "1", "--json", json});
    QVERIFY2(r.code == kExitOk, r.err.c_str());
    QVERIFY2(r.out.find("critical path of ProfilerStep#1, rank 1: 100.000 us") != std::string::npos, r.out.c_str());
    QVERIFY2(r.out.find("  waiting_for_rank         0.000 us    0.00 %\n") != std::string::npos, r.out.c_str());
    std::ifstream f(json);
    const nlohmann::json cp = nlohmann::json::parse(f).at("critical_path");
    QCOMPARE(cp.at("rank").get<int>(), 1);
    QCOMPARE(cp.at("rank_chosen").get<bool>(), true);
    QCOMPARE(cp.at("step_chosen").get<bool>(), true);
    QCOMPARE(cp.at("by_category").at("compute").get<double>(), 50.0);
  }

  void badValuesRefused() {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{kJob, "--critical-path-step", "x"},
         "error: --critical-path-step takes a non-negative integer (a ProfilerStep number), got 'x'\n"},
        {{kJob, "--critical-path-step"},
         "error: --critical-path-step takes a non-negative integer (a ProfilerStep number), got ''\n"},
        {{kJob, "--critical-path-rank", "-1"}, "error: --critical-path-rank takes a non-negative integer (a rank), got '-1'\n"},
        {{kJob, "--critical-path-step", "9"},
         "error: --critical-path-step 9: no rank's trace has ProfilerStep#9; choose one of 1, 2\n"},
        {{kJob, "--critical-path-rank", "4"},
         "error: --critical-path-rank 4: no trace of that rank was loaded; the ranks loaded are 0, 1\n"},
    };
    for (const auto& [args, message] : cases) {
      const Result r = analyze(args);
      QCOMPARE(r.code, kExitBadInput);
      QVERIFY2(r.err.size() >= message.size() && r.err.compare(r.err.size() - message.size(), message.size(), message) == 0,
               r.err.c_str());
    }
  }
};

QTEST_GUILESS_MAIN(TestCriticalPathCli)
#include "test_critical_path_cli.moc"
