#include "model/hardware_profile.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <sstream>

#include "common/errors.h"
#include "common/input_file.h"
#include "model/cpu_calibration.h"
#include "common/json_tree.h"

#ifndef SHARDSCOPE_RESOURCE_DIR
#define SHARDSCOPE_RESOURCE_DIR "resources"
#endif

namespace shardscope {

namespace {

namespace fs = std::filesystem;

constexpr double kTera = 1e12, kGiga = 1e9, kMicro = 1e-6;

// One numeric leaf of the document: where it sits, its unit (for messages and
// for the SI conversion) and the accepted range. The bounds are far outside
// any real part (a slow CPU core included), so they only catch a value
// written in the wrong unit, or nonsense such as 1e-300 TFLOPS that would
// price one op at longer than the modeled clock can count.
struct NumberField {
  const char* key;
  const char* unit;  // as it reads after "must be a number in (lo, hi]"
  double scale;      // JSON unit -> SI
  double lo;
  bool lo_inclusive;
  double hi;
  double least;  // plausible minimum: (lo, least) is refused too; == lo when any value above lo is
};

const NumberField kDeviceFields[] = {
    {"bf16_tflops", "TFLOPS, dense BF16 peak", kTera, 0, false, 1e5, 1e-4},
    {"mem_bandwidth_gb_per_s", "GB/s, 1 GB = 1e9 bytes", kGiga, 0, false, 1e6, 1e-2},
    {"mem_capacity_gb", "GB, 1 GB = 1e9 bytes", kGiga, 0, false, 1e5, 1e-3},
    {"compute_efficiency", "fraction of peak reached by GEMMs", 1.0, 0, false, 1.0, 1e-2},
};
const NumberField kLinkFields[] = {
    {"bandwidth_gb_per_s", "GB/s per direction per GPU", kGiga, 0, false, 1e5, 1e-4},
    {"latency_us", "microseconds per message", kMicro, 0, true, 1e6, 0},
};
const NumberField kHostFields[] = {
    {"kernel_launch_us", "microseconds of host time per kernel launch", kMicro, 0, true, 1e6, 0},
    {"unit_hook_us", "microseconds of host time per FSDP unit hook", kMicro, 0, true, 1e6, 0},
};
// Optional: the shape-aware cost model's constants (rank/hardware_profile.h's
// Calibration); each profile's "sources" says where each comes from.
const NumberField kCalibrationFields[] = {
    {"gemm_efficiency", "fraction of bf16_tflops a large GEMM reaches", 1.0, 0, false, 1.0, 1e-2},
    {"gemm_tile_m", "output rows per GEMM thread block", 1.0, 0, false, 1024, 1},
    {"gemm_tile_n", "output columns per GEMM thread block", 1.0, 0, false, 1024, 1},
    {"sms", "streaming multiprocessors", 1.0, 0, false, 10000, 1},
    {"hbm_efficiency", "fraction of mem_bandwidth_gb_per_s memory-bound kernels reach", 1.0, 0, false, 1.0, 1e-2},
    {"intra_node_busbw_gb_per_s", "GB/s, nccl-tests all_reduce busbw inside a node", kGiga, 0, false, 1e5, 1e-4},
    {"inter_node_busbw_gb_per_s", "GB/s per GPU, nccl-tests all_reduce busbw across nodes", kGiga, 0, false, 1e5, 1e-4},
};
// Optional inside "calibration" (Calibration::elementwise_bandwidth).
const NumberField kElementwiseField = {"elementwise_gb_per_s",
                                       "GB/s a block's memory-bound ops reach per byte of their traffic", kGiga, 0,
                                       false, 1e6, 1e-4};
const NumberField kWeightConvertField = {"weight_convert_ns_per_param",
                                         "ns per parameter per step to widen a block's weights and narrow its gradients",
                                         1e-9, 0, false, 1e6, 1e-6};
const std::vector<std::string> kRootKeys = {"name",       "description",   "device",  "intra_node",  "inter_node",
                                            "gpus_per_node", "sources", "host", "calibration"};
constexpr int kMaxGpusPerNode = 4096;

// Levenshtein distance, to suggest the key a typo meant.
size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string describe(const Json& v) {
  std::string text = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  if (v.is_number()) return text;
  return text + " (" + std::string(jsonTypeName(v)) + ")";
}

class ProfileReader {
 public:
  explicit ProfileReader(std::string file) : m_file(std::move(file)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError("profile " + m_file + ": " + what);
  }

  // Rejects unknown keys of `object` (at `path`, "" for the root); parseProfile rejects repeated ones.
  void checkKeys(const Json& object, const std::string& path, const std::vector<std::string>& allowed) const {
    for (const auto& [key, value] : object.items()) {
      const std::string where = path.empty() ? key : path + "." + key;
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      std::string best;
      size_t best_distance = std::max<size_t>(2, key.size() / 3) + 1;  // suggest only near misses
      std::string list;
      for (const std::string& k : allowed) {
        list += (list.empty() ? "" : ", ") + k;
        const size_t d = editDistance(key, k);
        if (d < best_distance) {
          best_distance = d;
          best = k;
        }
      }
      fail("unknown key '" + where + "'" + (best.empty() ? "" : " (did you mean '" + best + "'?)") +
           "; allowed keys" + (path.empty() ? "" : " in " + path) + ": " + list);
    }
  }

  const Json& require(const Json& object, const std::string& path, const std::string& key, const char* what) const {
    const auto it = object.find(key);
    if (it == object.end()) fail(join(path, key) + " is missing (" + what + ")");
    return *it;
  }

  const Json& requireObject(const Json& root, const std::string& key, const char* what) const {
    const Json& v = require(root, "", key, what);
    if (!v.is_object()) fail(key + " must be an object (" + what + "), got " + describe(v));
    return v;
  }

  double number(const Json& object, const std::string& path, const NumberField& f) const {
    const Json& v = require(object, path, f.key, f.unit);
    const std::string where = join(path, f.key);
    const std::string range = std::string(f.lo_inclusive ? "[" : "(") + format(f.lo) + ", " + format(f.hi) + "]";
    if (!v.is_number()) fail(where + " must be a number in " + range + " (" + f.unit + "), got " + describe(v));
    const double x = v.get<double>();
    const bool low = f.lo_inclusive ? x < f.lo : x <= f.lo;
    if (low && f.lo == 0 && !f.lo_inclusive)
      fail(where + " must be a positive number (" + f.unit + "), got " + describe(v));
    if (low || x > f.hi)
      fail(where + " must be a number in " + range + " (" + f.unit + "), got " + describe(v) +
           (x > f.hi ? "; check the unit" : ""));
    if (x < f.least)
      fail(where + " must be at least " + format(f.least) + " (" + f.unit + "; up to " + format(f.hi) + "), got " +
           describe(v) + ": no real part is that slow or small; check the unit");
    return x * f.scale;
  }

  std::string string(const Json& root, const std::string& key, bool non_empty) const {
    const Json& v = require(root, "", key, "text");
    if (!v.is_string()) fail(key + " must be a string, got " + describe(v));
    const auto& text = v.get_ref<const std::string&>();
    if (non_empty && text.empty()) fail(key + " must not be empty");
    return text;
  }

 private:
  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }
  static std::string format(double x) {
    std::ostringstream os;
    os << x;
    return os.str();
  }

  std::string m_file;
};

template <size_t N>
std::vector<std::string> keysOf(const NumberField (&fields)[N]) {
  std::vector<std::string> keys;
  for (const NumberField& f : fields) keys.push_back(f.key);
  return keys;
}

HardwareProfile::Link readLink(const ProfileReader& r, const Json& root, const std::string& key, const char* what) {
  const Json& link = r.requireObject(root, key, what);
  r.checkKeys(link, key, keysOf(kLinkFields));
  HardwareProfile::Link out;
  out.bandwidth = r.number(link, key, kLinkFields[0]);
  out.latency = r.number(link, key, kLinkFields[1]);
  return out;
}

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The rule every reader shares (regular files only, SHARDSCOPE_MAX_PROFILE_MB),
// in the profile reader's words for a file that is not there.
std::string readFile(const std::string& path) {
  try {
    return readInputFile(path, profileFileRule());
  } catch (const InputFileError& e) {
    constexpr std::string_view kCannotOpen = "cannot open: ";
    if (e.reason().rfind(kCannotOpen, 0) != 0) throw;
    throw ConfigError("profile " + path + ": cannot be opened (" + e.reason().substr(kCannotOpen.size()) + ")");
  }
}

bool validName(const std::string& name) {
  if (name.empty() || name.size() > 100) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

std::vector<std::string> fileProfiles() {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(profilesDir(), ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path p = it->path();
    if (p.extension() == ".json" && p.stem() != kThisCpuProfile) names.push_back(p.stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

HardwareProfile parseProfile(const std::string& json_text, const std::string& file) {
  const ProfileReader r(file);
  Json root;
  try {
    root = parseJsonTree(json_text, [&r](const std::string& path) { r.fail(path + " appears twice"); });
  } catch (const JsonSyntaxError& e) {
    throw ConfigError("profile " + file + ":" + std::to_string(e.line()) + ":" + std::to_string(e.column()) +
                      ": " + e.what());
  }
  if (!root.is_object()) r.fail("the document must be a JSON object, got " + describe(root));
  r.checkKeys(root, "", kRootKeys);

  HardwareProfile p;
  p.name = r.string(root, "name", true);
  if (!validName(p.name)) r.fail("name must use only letters, digits, '-', '_' and '.', got '" + p.name + "'");
  if (endsWith(file, ".json")) {
    const std::string stem = fs::path(file).stem().string();
    if (stem != p.name)
      r.fail("name is '" + p.name + "' but the file is " + stem + ".json; rename one so they match");
  }
  p.description = r.string(root, "description", false);

  const Json& device = r.requireObject(root, "device", "the accelerator's figures");
  r.checkKeys(device, "device", keysOf(kDeviceFields));
  p.device.bf16_flops = r.number(device, "device", kDeviceFields[0]);
  p.device.mem_bandwidth = r.number(device, "device", kDeviceFields[1]);
  p.device.mem_capacity = r.number(device, "device", kDeviceFields[2]);
  p.device.compute_efficiency = r.number(device, "device", kDeviceFields[3]);

  p.intra_node = readLink(r, root, "intra_node", "the link between GPUs of one node");
  p.inter_node = readLink(r, root, "inter_node", "the link between nodes");

  // Optional: a profile without it issues work for free on the host.
  if (const auto host = root.find("host"); host != root.end()) {
    if (!host->is_object()) r.fail("host must be an object (the CPU side of each launch), got " + describe(*host));
    r.checkKeys(*host, "host", keysOf(kHostFields));
    p.host.kernel_launch = r.number(*host, "host", kHostFields[0]);
    p.host.unit_hook = r.number(*host, "host", kHostFields[1]);
  }

  // Optional: without it the cost model keeps one GEMM efficiency and the wire bandwidths.
  if (const auto cal = root.find("calibration"); cal != root.end()) {
    if (!cal->is_object())
      r.fail("calibration must be an object (the cost model's fitted constants), got " + describe(*cal));
    std::vector<std::string> cal_keys = keysOf(kCalibrationFields);
    cal_keys.push_back(kElementwiseField.key);
    cal_keys.push_back(kWeightConvertField.key);
    r.checkKeys(*cal, "calibration", cal_keys);
    HardwareProfile::Calibration c;
    const auto count = [&](const NumberField& f) {
      const double x = r.number(*cal, "calibration", f);
      if (x != std::floor(x)) r.fail("calibration." + std::string(f.key) + " must be a whole number (" + f.unit + "), got " + describe((*cal)[f.key]));
      return static_cast<int>(x);
    };
    c.gemm_efficiency = r.number(*cal, "calibration", kCalibrationFields[0]);
    c.gemm_tile_m = count(kCalibrationFields[1]);
    c.gemm_tile_n = count(kCalibrationFields[2]);
    c.sms = count(kCalibrationFields[3]);
    c.hbm_efficiency = r.number(*cal, "calibration", kCalibrationFields[4]);
    c.intra_node_busbw = r.number(*cal, "calibration", kCalibrationFields[5]);
    c.inter_node_busbw = r.number(*cal, "calibration", kCalibrationFields[6]);
    if (cal->contains(kElementwiseField.key)) c.elementwise_bandwidth = r.number(*cal, "calibration", kElementwiseField);
    if (cal->contains(kWeightConvertField.key)) c.weight_convert = r.number(*cal, "calibration", kWeightConvertField);
    p.calibration = c;
  }

  const Json& gpus = r.require(root, "", "gpus_per_node", "an integer");
  int64_t gpus_per_node = 0;
  if (!jsonInteger(gpus, gpus_per_node) || gpus_per_node < 1 || gpus_per_node > kMaxGpusPerNode)
    r.fail("gpus_per_node must be an integer in 1.." + std::to_string(kMaxGpusPerNode) + ", got " + describe(gpus));
  p.gpus_per_node = static_cast<int>(gpus_per_node);

  const Json& sources = r.require(root, "", "sources", "an array of citations");
  if (!sources.is_array()) r.fail("sources must be an array of strings (citations), got " + describe(sources));
  for (size_t i = 0; i < sources.size(); ++i) {
    const Json& s = sources[i];
    if (!s.is_string() || s.get_ref<const std::string&>().empty())
      r.fail("sources[" + std::to_string(i) + "] must be a non-empty string, got " + describe(s));
    p.sources.push_back(s.get<std::string>());
  }
  return p;
}

std::string profilesDir() {
  const char* env = std::getenv("SHARDSCOPE_RESOURCES");
  if (env && *env) return (fs::path(env) / "profiles").string();
  // Installed (the .deb: /usr/bin and /usr/share/shardscope, or that tree
  // extracted anywhere): next to the program. A build tree has no such folder
  // and uses the source tree's resources.
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "shardscope" / "profiles";
    if (fs::is_directory(installed, ec)) return installed.string();
  }
  return (fs::path(SHARDSCOPE_RESOURCE_DIR) / "profiles").string();
}

std::vector<std::string> listProfiles() {
  std::vector<std::string> names = fileProfiles();
  names.push_back(kThisCpuProfile);
  return names;
}

HardwareProfile loadProfile(const std::string& name_or_path) {
  if (endsWith(name_or_path, ".json")) return parseProfile(readFile(name_or_path), name_or_path);
  if (name_or_path == kThisCpuProfile) return loadOrCalibrateThisCpu();
  const std::string path = (fs::path(profilesDir()) / (name_or_path + ".json")).string();
  std::error_code ec;
  if (!validName(name_or_path) || !fs::is_regular_file(path, ec)) {
    std::string list;
    for (const std::string& n : listProfiles()) list += (list.empty() ? "" : ", ") + n;
    throw ConfigError("unknown profile '" + name_or_path + "'; available: " + list + " (from " + profilesDir() +
                      "; set SHARDSCOPE_RESOURCES to use another resources folder, or give a path ending in .json)");
  }
  return parseProfile(readFile(path), path);
}

Json profileJson(const HardwareProfile& p) {
  Json j;
  j["name"] = p.name;
  j["description"] = p.description;
  Json& device = j["device"];
  device[kDeviceFields[0].key] = p.device.bf16_flops / kTera;
  device[kDeviceFields[1].key] = p.device.mem_bandwidth / kGiga;
  device[kDeviceFields[2].key] = p.device.mem_capacity / kGiga;
  device[kDeviceFields[3].key] = p.device.compute_efficiency;
  for (const auto& [key, link] : {std::pair{"intra_node", &p.intra_node}, std::pair{"inter_node", &p.inter_node}}) {
    Json& l = j[key];
    l[kLinkFields[0].key] = link->bandwidth / kGiga;
    l[kLinkFields[1].key] = link->latency / kMicro;
  }
  if (p.host.kernel_launch > 0 || p.host.unit_hook > 0) {
    Json& h = j["host"];
    h[kHostFields[0].key] = p.host.kernel_launch / kMicro;
    h[kHostFields[1].key] = p.host.unit_hook / kMicro;
  }
  if (const auto& c = p.calibration) {
    Json& cal = j["calibration"];
    cal[kCalibrationFields[0].key] = c->gemm_efficiency;
    cal[kCalibrationFields[1].key] = c->gemm_tile_m;
    cal[kCalibrationFields[2].key] = c->gemm_tile_n;
    cal[kCalibrationFields[3].key] = c->sms;
    cal[kCalibrationFields[4].key] = c->hbm_efficiency;
    cal[kCalibrationFields[5].key] = c->intra_node_busbw / kGiga;
    cal[kCalibrationFields[6].key] = c->inter_node_busbw / kGiga;
    if (c->elementwise_bandwidth > 0) cal[kElementwiseField.key] = c->elementwise_bandwidth / kGiga;
    if (c->weight_convert > 0) cal[kWeightConvertField.key] = c->weight_convert / 1e-9;
  }
  j["gpus_per_node"] = p.gpus_per_node;
  j["sources"] = p.sources;
  return j;
}

void writeProfileJson(const HardwareProfile& p, std::ostream& out) {
  out << profileJson(p).dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
}

}  // namespace shardscope
