// Hardware profiles: every shipped file loads with its datasheet figures in SI
// units; each bad field (missing, mistyped, out of range, unknown) is one
// ConfigError naming the file and the field path; the resources folder can be
// overridden; this-cpu is measured once, cached, and read back from the cache.
#include <QtTest>

#include <QTemporaryDir>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/errors.h"
#include "model/cpu_calibration.h"
#include "model/hardware_profile.h"
#include "common/json_tree.h"
#include "rank/cost_model.h"

using namespace shardscope;

namespace {

const char* const kValid = R"({
  "name": "test-gpu",
  "description": "a valid profile the bad-field cases start from",
  "device": {"bf16_tflops": 100, "mem_bandwidth_gb_per_s": 2000, "mem_capacity_gb": 40, "compute_efficiency": 0.5},
  "intra_node": {"bandwidth_gb_per_s": 300, "latency_us": 2},
  "inter_node": {"bandwidth_gb_per_s": 25, "latency_us": 8},
  "gpus_per_node": 8,
  "sources": ["made up for the test"]
})";

// Runs `f`, which must throw ConfigError; returns its message ("" if it did not throw).
template <typename F>
QString configErrorOf(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

// Applies one edit to the document: set the member at `path` ("a.b") to
// `value_json`, delete it ("<delete>"), or rename its key ("<rename>NEWKEY").
std::string mutate(const std::string& path, const std::string& edit) {
  Json doc = Json::parse(kValid);
  Json* parent = &doc;
  std::string key = path;
  if (const size_t dot = path.find('.'); dot != std::string::npos) {
    for (auto& [k, v] : doc.items())
      if (k == path.substr(0, dot)) parent = &v;
    key = path.substr(dot + 1);
  }
  Json& members = *parent;
  if (members.contains(key)) {
    if (edit == "<delete>") {
      members.erase(key);
    } else if (edit.rfind("<rename>", 0) == 0) {  // in place: the key keeps its position
      Json renamed = Json::object();
      for (auto& [k, v] : members.items()) renamed[k == key ? edit.substr(8) : k] = v;
      members = std::move(renamed);
    } else {
      members[key] = Json::parse(edit);
    }
    return doc.dump();
  }
  members[key] = Json::parse(edit);  // a key the document lacks
  return doc.dump();
}

class EnvGuard {  // restores an environment variable when the test ends
 public:
  EnvGuard(const char* name, const QByteArray& value) : m_name(name), m_old(qgetenv(name)), m_had(qEnvironmentVariableIsSet(name)) {
    qputenv(name, value);
  }
  ~EnvGuard() {
    if (m_had) qputenv(m_name, m_old);
    else qunsetenv(m_name);
  }

 private:
  const char* m_name;
  QByteArray m_old;
  bool m_had;
};

void writeText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

class TestHardwareProfile : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    // The source tree's profiles, whatever the environment says.
    qputenv("SHARDSCOPE_RESOURCES", QByteArray(SHARDSCOPE_SOURCE_DIR "/resources"));
  }

  void shippedProfiles_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<double>("tflops");
    QTest::addColumn<double>("memGbPerS");
    QTest::addColumn<double>("capacityGb");
    QTest::addColumn<int>("gpusPerNode");
    QTest::addColumn<double>("intraGbPerS");
    QTest::addColumn<double>("interGbPerS");
    QTest::newRow("h100-sxm") << "h100-sxm" << 989.0 << 3350.0 << 80.0 << 8 << 450.0 << 50.0;
    QTest::newRow("h200") << "h200" << 989.0 << 4800.0 << 141.0 << 8 << 450.0 << 50.0;
    QTest::newRow("a100-40gb-pcie") << "a100-40gb-pcie" << 312.0 << 1555.0 << 40.0 << 4 << 32.0 << 6.25;
    QTest::newRow("rtx4090-pcie") << "rtx4090-pcie" << 165.2 << 1008.0 << 24.0 << 4 << 25.0 << 3.125;
    QTest::newRow("cluster-25gbe") << "cluster-25gbe" << 312.0 << 1555.0 << 40.0 << 1 << 32.0 << 3.125;
    QTest::newRow("a100-sxm4-80gb-selene") << "a100-sxm4-80gb-selene" << 312.0 << 2039.0 << 80.0 << 8 << 300.0 << 25.0;
  }

  // The datasheet figures, converted to SI: a wrong unit factor fails here.
  void shippedProfiles() {
    QFETCH(QString, name);
    QFETCH(double, tflops);
    QFETCH(double, memGbPerS);
    QFETCH(double, capacityGb);
    QFETCH(int, gpusPerNode);
    QFETCH(double, intraGbPerS);
    QFETCH(double, interGbPerS);
    const HardwareProfile p = loadProfile(name.toStdString());
    QCOMPARE(QString::fromStdString(p.name), name);
    QCOMPARE(p.device.bf16_flops, tflops * 1e12);
    QCOMPARE(p.device.mem_bandwidth, memGbPerS * 1e9);
    QCOMPARE(p.device.mem_capacity, capacityGb * 1e9);
    QVERIFY(p.device.compute_efficiency > 0 && p.device.compute_efficiency <= 1);
    QCOMPARE(p.gpus_per_node, gpusPerNode);
    QCOMPARE(p.intra_node.bandwidth, intraGbPerS * 1e9);
    QCOMPARE(p.inter_node.bandwidth, interGbPerS * 1e9);
    QVERIFY(p.intra_node.latency > 0 && p.intra_node.latency < 1e-4);  // seconds, not microseconds
    QVERIFY(p.inter_node.latency > 0 && p.inter_node.latency < 1e-4);
    QVERIFY(!p.sources.empty());
    QVERIFY(!p.description.empty());
  }

  void everyListedProfileLoads() {
    const std::vector<std::string> names = listProfiles();
    for (const char* shipped : {"a100-40gb-pcie", "a100-sxm4-80gb-selene", "cluster-25gbe", "h100-sxm", "h200",
                                "rtx4090-pcie", "this-cpu"})
      QVERIFY2(std::find(names.begin(), names.end(), shipped) != names.end(), shipped);
    for (const std::string& n : names) {
      if (n == kThisCpuProfile) continue;  // measured; see thisCpuCalibration
      const HardwareProfile p = loadProfile(n);
      QCOMPARE(p.name, n);
    }
  }

  // Write, read back: the human units convert both ways without loss.
  void writeReadRoundTrip() {
    const HardwareProfile a = loadProfile("rtx4090-pcie");
    std::ostringstream text;
    writeProfileJson(a, text);
    const HardwareProfile b = parseProfile(text.str(), "rtx4090-pcie.json");
    QCOMPARE(b.device.bf16_flops, a.device.bf16_flops);
    QCOMPARE(b.device.mem_bandwidth, a.device.mem_bandwidth);
    QCOMPARE(b.inter_node.bandwidth, a.inter_node.bandwidth);
    QCOMPARE(b.inter_node.latency, a.inter_node.latency);
    QCOMPARE(b.sources, a.sources);
    QCOMPARE(b.description, a.description);
  }

  // The cost model's constants: optional (an old profile has none), read in
  // the file's units, written back the same.
  void calibrationReadAndWritten() {
    QVERIFY(!parseProfile(kValid, "test-gpu.json").calibration.has_value());
    const HardwareProfile selene = loadProfile("a100-sxm4-80gb-selene");
    QVERIFY(selene.calibration.has_value());
    const HardwareProfile::Calibration& c = *selene.calibration;
    QCOMPARE(c.sms, 108);
    QCOMPARE(c.gemm_tile_m, 128);
    QCOMPARE(c.gemm_tile_n, 256);
    QCOMPARE(c.intra_node_busbw, 210e9);
    QCOMPARE(c.inter_node_busbw, 23e9);
    QVERIFY(c.gemm_efficiency > 0.5 && c.gemm_efficiency <= 1);
    std::ostringstream text;
    writeProfileJson(selene, text);
    const HardwareProfile back = parseProfile(text.str(), "a100-sxm4-80gb-selene.json");
    QVERIFY(back.calibration.has_value());
    QCOMPARE(back.calibration->gemm_efficiency, c.gemm_efficiency);
    QCOMPARE(back.calibration->inter_node_busbw, c.inter_node_busbw);
    QCOMPARE(back.calibration->sms, c.sms);
  }

  void badCalibration_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("expected");
    QTest::newRow("efficiency above 1") << "gemm_efficiency" << "1.2" << "calibration.gemm_efficiency must be a number in (0, 1]";
    QTest::newRow("efficiency missing") << "gemm_efficiency" << "<delete>" << "calibration.gemm_efficiency is missing";
    QTest::newRow("tile fractional") << "gemm_tile_m" << "127.5" << "calibration.gemm_tile_m must be a whole number";
    QTest::newRow("sms zero") << "sms" << "0" << "calibration.sms must be a positive number";
    QTest::newRow("busbw string") << "intra_node_busbw_gb_per_s" << "\"210\"" << "calibration.intra_node_busbw_gb_per_s must be a number";
    QTest::newRow("hbm zero") << "hbm_efficiency" << "0" << "calibration.hbm_efficiency must be a positive number";
    QTest::newRow("unknown key") << "gemm_tile" << "[128, 256]" << "unknown key 'calibration.gemm_tile'";
  }

  void badCalibration() {
    QFETCH(QString, key);
    QFETCH(QString, value);
    QFETCH(QString, expected);
    Json doc = Json::parse(kValid);
    Json cal = {{"gemm_efficiency", 0.8}, {"gemm_tile_m", 128}, {"gemm_tile_n", 256}, {"sms", 108},
                {"hbm_efficiency", 0.85}, {"intra_node_busbw_gb_per_s", 210}, {"inter_node_busbw_gb_per_s", 23}};
    if (value == "<delete>") cal.erase(key.toStdString());
    else cal[key.toStdString()] = Json::parse(value.toStdString());
    doc["calibration"] = cal;
    const QString error = configErrorOf([&] { parseProfile(doc.dump(), "test-gpu.json"); });
    QVERIFY2(error.startsWith("profile test-gpu.json: "), qPrintable(error));
    QVERIFY2(error.contains(expected), qPrintable(error));
    doc["calibration"] = 5;
    QVERIFY(configErrorOf([&] { parseProfile(doc.dump(), "test-gpu.json"); }).contains("calibration must be an object"));
  }

  // A calibrated profile prices a GEMM by its shape: a full wave of whole
  // tiles runs at the plateau, a skinny one pays for its padded tiles, one
  // with a tiny k is bound by HBM; collectives run at nccl-tests' busbw and an
  // all-reduce across nodes takes NCCL's tree when its latency is lower.
  void calibratedPricing() {
    const CostModel cost(loadProfile("a100-sxm4-80gb-selene"));
    const HardwareProfile::Calibration& c = *cost.profile().calibration;
    const double plateau = 312e12 * c.gemm_efficiency;
    // 108 x 8 tiles of 128 x 256: exactly 8 full waves.
    const GemmShape full{108 * 128, 8 * 256, 4096};
    QVERIFY(std::fabs(cost.gemmSeconds(full) - full.flops() / plateau) < 1e-9 * cost.gemmSeconds(full) + 1e-15);
    // One tile more: a ninth wave for it alone.
    const GemmShape spill{108 * 128, 8 * 256 + 1, 4096};
    QVERIFY(cost.gemmSeconds(spill) > 1.1 * cost.gemmSeconds(full));
    // n = 64 fills at most half of a tile's narrower side (128, the tile
    // turned whichever way wastes less): at most half the plateau.
    const GemmShape skinny{16384, 64, 8192};
    QVERIFY(skinny.flops() / cost.gemmSeconds(skinny) <= 0.5 * plateau * 1.0001);
    // A batched GEMM's tiles share the waves: 32 small GEMMs of 128 tiles
    // each fill 38 waves, not 32 x 2.
    const GemmShape batched{2048, 2048, 1024, 32};
    QVERIFY(cost.gemmSeconds(batched) < 0.65 * 32 * cost.gemmSeconds({2048, 2048, 1024}));
    // k = 16: HBM traffic (bf16 in and out) outweighs the math.
    const GemmShape shallow{8192, 8192, 16};
    const double bytes = 2.0 * (8192.0 * 16 * 2 + 8192.0 * 8192);
    QCOMPARE(cost.gemmSeconds(shallow), bytes / (2039e9 * c.hbm_efficiency));
    // The same inside a fused kernel (flash attention): compute alone, 64 x 32
    // tiles in 19 waves.
    const GemmShape fused{8192, 8192, 16, 1, false};
    QCOMPARE(cost.gemmSeconds(fused), 2.0 * 19 * 108 * 128 * 256 * 16 / (312e12 * c.gemm_efficiency));
    QVERIFY(cost.gemmSeconds(fused) < 0.2 * cost.gemmSeconds(shallow));
    // A block's rate: its FLOPs over its time, below the plateau.
    BlockWork work;
    work.gemms = {full, skinny};
    work.memory_bytes = 1e9;
    work.flops = full.flops() + skinny.flops();
    CostModel priced(loadProfile("a100-sxm4-80gb-selene"));
    priced.priceComputeBy(work);
    QCOMPARE(priced.computeRate(), work.flops / priced.workSeconds(work));
    QVERIFY(priced.computeRate() < plateau);
    // 1 GB all-reduce in one node: the ring's 14 latencies plus bytes at busbw.
    const std::vector<int> node{0, 1, 2, 3, 4, 5, 6, 7};
    const double sent = 1e9 * 2 * 7 / 8;
    QCOMPARE(cost.collectiveNs(EventKind::AllReduce, sent, node), int64_t(std::llround((14 * 3e-6 + sent / 210e9) * 1e9)));
    // 64 ranks on 8 nodes: tree, 2 log2(64) = 12 steps, not the ring's 126.
    std::vector<int> world(64);
    for (int r = 0; r < 64; ++r) world[r] = r;
    QCOMPARE(cost.latencyNs(EventKind::AllReduce, world), int64_t(std::llround(12 * 6e-6 * 1e9)));
    QCOMPARE(cost.latencyNs(EventKind::AllGather, world), int64_t(std::llround(63 * 6e-6 * 1e9)));
    // A profile without calibration keeps the flat formula and the wire bandwidth.
    const CostModel flat(loadProfile("h100-sxm"));
    QCOMPARE(flat.computeNs(989e12 * 0.6, 0), int64_t(1000000000));
    QCOMPARE(flat.collectiveNs(EventKind::AllReduce, 450e9, node), int64_t(std::llround((14 * 3e-6 + 1.0) * 1e9)));
  }

  void validBaseParses() {
    const HardwareProfile p = parseProfile(kValid, "test-gpu.json");
    QCOMPARE(p.device.bf16_flops, 100e12);
    QCOMPARE(p.intra_node.latency, 2e-6);
    QCOMPARE(p.device.compute_efficiency, 0.5);
  }

  void badField_data() {
    QTest::addColumn<QString>("path");
    QTest::addColumn<QString>("edit");
    QTest::addColumn<QString>("expected");
    auto row = [](const char* tag, const char* path, const char* edit, const char* expected) {
      QTest::newRow(tag) << path << edit << expected;
    };
    row("tflops missing", "device.bf16_tflops", "<delete>", "device.bf16_tflops is missing");
    row("tflops string", "device.bf16_tflops", R"("989")", "device.bf16_tflops must be a number");
    row("tflops negative", "device.bf16_tflops", "-1", "device.bf16_tflops must be a positive number");
    row("tflops zero", "device.bf16_tflops", "0", "device.bf16_tflops must be a positive number");
    row("tflops in FLOP/s", "device.bf16_tflops", "9.89e14", "check the unit");
    row("mem bandwidth null", "device.mem_bandwidth_gb_per_s", "null", "device.mem_bandwidth_gb_per_s must be a number");
    row("capacity negative", "device.mem_capacity_gb", "-80", "device.mem_capacity_gb must be a positive number");
    row("efficiency above 1", "device.compute_efficiency", "1.5", "device.compute_efficiency must be a number in (0, 1]");
    row("efficiency zero", "device.compute_efficiency", "0", "device.compute_efficiency must be a positive number");
    row("intra bandwidth negative", "intra_node.bandwidth_gb_per_s", "-3",
        "intra_node.bandwidth_gb_per_s must be a positive number (GB/s per direction per GPU), got -3");
    row("intra latency negative", "intra_node.latency_us", "-1", "intra_node.latency_us must be a number in [0,");
    row("inter latency bool", "inter_node.latency_us", "true", "inter_node.latency_us must be a number");
    row("inter bandwidth missing", "inter_node.bandwidth_gb_per_s", "<delete>", "inter_node.bandwidth_gb_per_s is missing");
    row("inter_node missing", "inter_node", "<delete>", "inter_node is missing");
    row("inter_node a number", "inter_node", "5", "inter_node must be an object");
    row("device missing", "device", "<delete>", "device is missing");
    row("gpus zero", "gpus_per_node", "0", "gpus_per_node must be an integer in 1..");
    row("gpus fractional", "gpus_per_node", "2.5", "gpus_per_node must be an integer");
    row("gpus string", "gpus_per_node", R"("8")", "gpus_per_node must be an integer");
    row("name a number", "name", "5", "name must be a string");
    row("name not the file's", "name", R"("other-gpu")", "name is 'other-gpu' but the file is test-gpu.json");
    row("name with a slash", "name", R"("../x")", "name must use only");
    row("description missing", "description", "<delete>", "description is missing");
    row("sources a string", "sources", R"("datasheet")", "sources must be an array");
    row("sources holds a number", "sources", "[1]", "sources[0] must be a non-empty string");
    row("unknown root key", "gpus_per_node", "<rename>gpus_per_nodes",
        "unknown key 'gpus_per_nodes' (did you mean 'gpus_per_node'?)");
    row("unknown device key", "device.bf16_tflops", "<rename>bf16_tflop", "unknown key 'device.bf16_tflop'");
    row("unknown link key", "intra_node.bandwidth_gb_per_s", "<rename>bandwidth_gbps",
        "unknown key 'intra_node.bandwidth_gbps' (did you mean 'bandwidth_gb_per_s'?)");
    row("extra root key", "comment", R"("hi")", "unknown key 'comment'");
  }

  void badField() {
    QFETCH(QString, path);
    QFETCH(QString, edit);
    QFETCH(QString, expected);
    const std::string doc = mutate(path.toStdString(), edit.toStdString());
    const QString error = configErrorOf([&] { parseProfile(doc, "test-gpu.json"); });
    QVERIFY2(error.startsWith("profile test-gpu.json: "), qPrintable(error));
    QVERIFY2(error.contains(expected), qPrintable(error));
  }

  void duplicateKeyRejected() {
    std::string doc = kValid;
    doc.insert(doc.find("\"gpus_per_node\""), "\"gpus_per_node\": 4, ");
    QVERIFY(configErrorOf([&] { parseProfile(doc, "test-gpu.json"); }).contains("gpus_per_node appears twice"));
  }

  void badJsonNamesLineAndColumn() {
    std::string doc = kValid;
    doc.insert(doc.find("\n  \"gpus_per_node\""), ",");  // a trailing comma on line 6
    const QString error = configErrorOf([&] { parseProfile(doc, "test-gpu.json"); });
    QVERIFY2(error.startsWith("profile test-gpu.json:6:"), qPrintable(error));
    QVERIFY(configErrorOf([] { parseProfile("[1, 2]", "test-gpu.json"); }).contains("must be a JSON object"));
  }

  void unknownNameListsAvailable() {
    const QString error = configErrorOf([] { loadProfile("h100-pcie"); });
    QVERIFY2(error.contains("unknown profile 'h100-pcie'"), qPrintable(error));
    QVERIFY(error.contains("h100-sxm") && error.contains("this-cpu"));
    QVERIFY(configErrorOf([] { loadProfile("../profiles/h100-sxm"); }).contains("unknown profile"));
    QVERIFY(configErrorOf([] { loadProfile("/nonexistent/x.json"); }).contains("cannot be opened"));
  }

  void loadByPath() {
    const HardwareProfile p = loadProfile(SHARDSCOPE_SOURCE_DIR "/resources/profiles/h200.json");
    QCOMPARE(p.device.mem_capacity, 141e9);
  }

  // SHARDSCOPE_RESOURCES replaces the compiled-in folder for lookups and listing.
  void resourcesOverride() {
    QTemporaryDir dir;
    std::filesystem::create_directories(dir.filePath("profiles").toStdString());
    writeText(dir.filePath("profiles/test-gpu.json").toStdString(), kValid);
    EnvGuard env("SHARDSCOPE_RESOURCES", dir.path().toUtf8());
    QCOMPARE(listProfiles(), (std::vector<std::string>{"test-gpu", "this-cpu"}));
    QCOMPARE(loadProfile("test-gpu").gpus_per_node, 8);
    QVERIFY(configErrorOf([] { loadProfile("h100-sxm"); }).contains("unknown profile 'h100-sxm'"));
    // A bad user file names its full path, so the user knows which file to fix.
    writeText(dir.filePath("profiles/test-gpu.json").toStdString(), mutate("inter_node.latency_us", "-5"));
    const QString error = configErrorOf([] { loadProfile("test-gpu"); });
    QVERIFY2(error.contains(dir.filePath("profiles/test-gpu.json")) && error.contains("inter_node.latency_us"),
             qPrintable(error));
  }

  // One calibration: positive finite figures, written to the cache; the next
  // load reads the cache (an edit to it shows up), and a broken cache is an
  // error that says how to fix it.
  void thisCpuCalibration() {
    QTemporaryDir cache;
    EnvGuard env("XDG_CACHE_HOME", cache.path().toUtf8());
    const std::string path = thisCpuCachePath();
    QCOMPARE(QString::fromStdString(path), cache.filePath("shardscope/this-cpu.json"));
    QVERIFY(!std::filesystem::exists(path));

    const HardwareProfile p = loadProfile("this-cpu");
    for (double x : {p.device.bf16_flops, p.device.mem_bandwidth, p.device.mem_capacity, p.intra_node.bandwidth,
                     p.intra_node.latency, p.inter_node.bandwidth, p.inter_node.latency}) {
      QVERIFY2(std::isfinite(x) && x > 0, qPrintable(QString::number(x)));
    }
    QCOMPARE(p.device.compute_efficiency, 1.0);
    QCOMPARE(p.gpus_per_node, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    // The CPU pricing: a rank's GEMMs, element-wise ops and weight conversions, measured.
    QVERIFY(p.calibration);
    for (double x : {p.calibration->gemm_efficiency, p.calibration->hbm_efficiency, p.calibration->intra_node_busbw,
                     p.calibration->elementwise_bandwidth, p.calibration->weight_convert})
      QVERIFY2(std::isfinite(x) && x > 0, qPrintable(QString::number(x)));
    QCOMPARE(p.calibration->sms, 1);
    qInfo("this-cpu: sgemm %.1f GFLOP/s, memcpy %.1f GB/s, loopback %.2f GB/s, %.1f us/step",
          p.device.bf16_flops / 1e9, p.device.mem_bandwidth / 1e9, p.intra_node.bandwidth / 1e9,
          p.intra_node.latency * 1e6);
    QVERIFY(std::filesystem::is_regular_file(path));

    std::string text = readText(path);
    const size_t at = text.find("\"bf16_tflops\"");
    QVERIFY(at != std::string::npos);
    text.replace(at, text.find(',', at) - at, "\"bf16_tflops\": 123");
    writeText(path, text);
    QCOMPARE(loadProfile("this-cpu").device.bf16_flops, 123e12);

    writeText(path, mutate("name", R"("this-cpu")").replace(0, 1, "{\"typo\": 1, "));
    const QString error = configErrorOf([] { loadProfile("this-cpu"); });
    QVERIFY2(error.contains("unknown key 'typo'") && error.contains("profiles --calibrate"), qPrintable(error));
  }
};

QTEST_APPLESS_MAIN(TestHardwareProfile)
#include "test_hardware_profile.moc"
