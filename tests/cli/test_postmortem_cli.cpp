// `shardscope-cli analyze` on post-mortem files: a memory snapshot (pickle and
// JSON) gives memory_snapshot.devices[] with the hand-worked figures of
// tests/data/postmortem/make_fixtures.py; a folder of flight-recorder dumps
// gives flight_recorder.first_mismatch and the sentence; bad input exits 2
// with one line.
#include <QDir>
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

  // A key given twice in a snapshot's or a dump's JSON is refused by name
  // (the JSON path kept the first value: "segments" twice reported the wrong
  // memory), one line, exit 2.
  void repeatedJsonKeysAreRefused() {
    QTemporaryDir dir;
    std::string snapshot;
    {
      std::ifstream in(kData + "snapshot_no_time.json", std::ios::binary);
      snapshot.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
    QVERIFY(snapshot.rfind("{\"segments\": [", 0) == 0);
    const std::string twice = dir.filePath("twice.json").toStdString();
    std::ofstream(twice, std::ios::binary) << "{\"segments\": [], " << snapshot.substr(1);
    const Result r = analyze({twice});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.find(twice + ": JSON key \"segments\" appears twice in one object") != std::string::npos,
             r.err.c_str());
    QCOMPARE(std::count(r.err.begin(), r.err.end(), '\n'), 1l);

    const QString fr = dir.filePath("fr");
    QVERIFY(QDir().mkpath(fr));
    for (int rank = 0; rank < 2; ++rank) {
      std::ofstream(fr.toStdString() + "/nccl_trace_rank_" + std::to_string(rank))
          << "{\"version\": \"2.4\", \"rank\": " << rank << ", \"pg_config\": {}, \"entries\": []"
          << (rank == 1 ? ", \"pg_config\": {\"0\": {\"name\": \"0\", \"desc\": \"x\", \"ranks\": \"[0, 1]\"}}" : "")
          << "}";
    }
    const Result f = analyze({fr.toStdString()});
    QCOMPARE(f.code, 2);
    QVERIFY2(f.err.find("nccl_trace_rank_1: JSON key \"pg_config\" appears twice in one object") != std::string::npos,
             f.err.c_str());
    QCOMPARE(std::count(f.err.begin(), f.err.end(), '\n'), 1l);
  }

  // An empty file says it is empty (a .json.gz: after decompression), and a
  // pickle of protocol 0 or 1 is named as one, not as "not JSON".
  void emptyFilesAndOldPicklesSaySo() {
    QTemporaryDir dir;
    const std::string gz = dir.filePath("empty.json.gz").toStdString();
    {
      const unsigned char empty_gzip[] = {0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0x02, 0x03, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0};
      std::ofstream(gz, std::ios::binary).write(reinterpret_cast<const char*>(empty_gzip), sizeof empty_gzip);
    }
    const Result r = analyze({gz});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.find(gz + ": is empty after decompression") != std::string::npos, r.err.c_str());
    QVERIFY2(r.err.find("UTF-8") == std::string::npos, r.err.c_str());

    const std::string blank = dir.filePath("blank.pickle").toStdString();
    std::ofstream(blank) << "\n";
    const Result b = analyze({blank});
    QCOMPARE(b.code, 2);
    QVERIFY2(b.err.find("is empty") != std::string::npos, b.err.c_str());

    const std::string p0 = dir.filePath("p0.pickle").toStdString(), p1 = dir.filePath("p1.pickle").toStdString();
    std::ofstream(p0, std::ios::binary) << std::string("(dp0\nVsegments\np1\n(lp2\ns.");
    std::ofstream(p1, std::ios::binary) << std::string("}q\0X\x08\0\0\0segmentsq\x01]q\x02s.", 23);
    for (const std::string& path : {p0, p1}) {
      const Result o = analyze({path});
      QCOMPARE(o.code, 2);
      QVERIFY2(o.err.find(path + ": a pickle of protocol 0 or 1") != std::string::npos, o.err.c_str());
      QVERIFY2(o.err.find("protocol 2 or newer") != std::string::npos, o.err.c_str());
      QVERIFY2(o.err.find("JSON") == std::string::npos, o.err.c_str());
      QCOMPARE(std::count(o.err.begin(), o.err.end(), '\n'), 1l);
    }
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
