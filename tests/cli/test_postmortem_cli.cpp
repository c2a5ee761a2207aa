// `shardscope-cli analyze` on post-mortem files: a memory snapshot (pickle and
// JSON) gives memory_snapshot.devices[] with the hand-worked figures of
// tests/data/postmortem/make_fixtures.py; a folder of flight-recorder dumps
// gives flight_recorder.first_mismatch and the sentence; bad input exits 2
// with one line.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/analyze_command.h"

using namespace shardscope;

namespace {

const std::string kData = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/postmortem/";

struct Result {
  int code;
  std::string out, err;
};

Result analyze(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = commandAnalyze(args, out, err);
  return {code, out.str(), err.str()};
}

nlohmann::json readJson(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

}  // namespace

class TestPostmortemCli : public QObject {
  Q_OBJECT

 private slots:
  void snapshotJson() {
    QTemporaryDir dir;
    const std::string json = dir.filePath("m.json").toStdString();
    const Result r = analyze({kData + "snapshot_two_devices.pickle", "--json", json});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.find("device 1: 2 trace entries") != std::string::npos, r.out.c_str());
    QVERIFY2(r.out.find("unattributed: 66.7 % of the peak") != std::string::npos, r.out.c_str());
    const nlohmann::json j = readJson(json);
    const auto& devices = j.at("memory_snapshot").at("devices");
    QCOMPARE(devices.size(), size_t(2));
    QCOMPARE(devices[0].at("device").get<int>(), 0);
    QCOMPARE(devices[0].at("peak_allocated_bytes").get<int64_t>(), int64_t(1800000));
    QCOMPARE(devices[0].at("peak_reserved_bytes").get<int64_t>(), int64_t(3 << 20));
    QCOMPARE(devices[0].at("final_allocated_bytes").get<int64_t>(), int64_t(1000000));
    QCOMPARE(devices[0].at("final_reserved_bytes").get<int64_t>(), int64_t(2 << 20));
    QCOMPARE(devices[0].at("trace_entries").get<int>(), 10);
    QCOMPARE(devices[0].at("by_category").at("optimizer").get<int64_t>(), int64_t(1000000));
    QCOMPARE(devices[0].at("by_category").at("activation").get<int64_t>(), int64_t(500000));
    QCOMPARE(devices[0].at("by_category").at("gathered").get<int64_t>(), int64_t(300000));
    QCOMPARE(devices[1].at("by_category").at("grad").get<int64_t>(), int64_t(1 << 20));
    QCOMPARE(devices[1].at("unattributed_bytes").get<int64_t>(), int64_t(2 << 20));
  }

  void snapshotAsJsonAndOom() {
    QCOMPARE(analyze({kData + "snapshot_no_time.json"}).code, 0);
    const Result r = analyze({kData + "snapshot_oom.pickle"});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.find("OOM at entry 2: asked for 16.0 MiB, CUDA had 1.0 MiB free") != std::string::npos, r.out.c_str());
  }

  void flightRecorderFolder() {
    QTemporaryDir dir;
    const std::string json = dir.filePath("fr.json").toStdString();
    const Result r = analyze({kData + "fr_op_mismatch", "--json", json});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.find("rank 2 ran something else as #5 of pg 0 (default_pg)") != std::string::npos, r.out.c_str());
    const nlohmann::json m = readJson(json).at("flight_recorder").at("first_mismatch");
    QCOMPARE(m.at("pg").get<std::string>(), std::string("0"));
    QCOMPARE(m.at("pg_desc").get<std::string>(), std::string("default_pg"));
    QCOMPARE(m.at("seq").get<int>(), 5);
    QCOMPARE(m.at("op").get<std::string>(), std::string("all_reduce"));
    QCOMPARE(m.at("kind").get<std::string>(), std::string("op"));
    QCOMPARE(m.at("ranks"), nlohmann::json({2}));
    QCOMPARE(m.at("waiting_ranks"), nlohmann::json({0, 1, 3}));
    QCOMPARE(m.at("frames_by_rank").at("2").at("line").get<int>(), 91);
  }

  void missingRankSentence() {
    const Result r = analyze({kData + "fr_missing_rank"});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.find("rank 2 never joined all_reduce #4 of pg 0 (default_pg); ranks 0, 1 and 3 are waiting in it since "
                        "2023-11-14 22:13:24 UTC; rank 2 last ran train.py:88") != std::string::npos,
             r.out.c_str());
  }

  void badPickleIsOneLine() {
    const Result r = analyze({kData + "refused_object.pickle"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.find("refused opcode STACK_GLOBAL") != std::string::npos, r.err.c_str());
    QCOMPARE(std::count(r.err.begin(), r.err.end(), '\n'), 1l);
    QTemporaryDir dir;
    const std::string cut = dir.filePath("cut.pickle").toStdString();
    {
      std::ifstream in(kData + "snapshot_one_device.pickle", std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    }
    const Result t = analyze({cut});
    QCOMPARE(t.code, 2);
    QVERIFY2(t.err.find("byte ") != std::string::npos, t.err.c_str());
  }

  void mixedInputsAreRefused() {
    const Result r = analyze({kData + "snapshot_oom.pickle",
                              std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/kineto/no_rank.json"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.find("not both at once") != std::string::npos, r.err.c_str());
  }
};

QTEST_GUILESS_MAIN(TestPostmortemCli)
#include "test_postmortem_cli.moc"
