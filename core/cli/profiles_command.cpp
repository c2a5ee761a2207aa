#include "cli/profiles_command.h"

#include <filesystem>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>

#include "common/exit_codes.h"
#include "common/errors.h"
#include "model/cpu_calibration.h"
#include "model/hardware_profile.h"
#include "common/json_tree.h"

namespace shardscope {

namespace {

const char* const kProfilesUsage = R"(usage: shardscope-cli profiles [--json] [--calibrate]
Hardware profiles for modeled timelines: resources/profiles/*.json (set
SHARDSCOPE_RESOURCES to use another resources folder) and this-cpu, measured
on this machine and cached.
  --json        print one JSON object (figures in the files' units)
  --calibrate   measure this machine again (about a second) and rewrite the cache
  --help        this text
exit codes: 0 ok, 2 a bad flag or a profile that fails validation
)";

struct Entry {
  std::string name;
  std::optional<HardwareProfile> profile;
  std::string error;  // when the profile did not load
};

std::string fig(double x) {  // 4 significant digits: 989, 3350, 0.0812
  std::ostringstream os;
  os << std::setprecision(4) << x;
  return os.str();
}

bool cacheExists() {
  std::error_code ec;
  const std::string path = thisCpuCachePath();
  return !path.empty() && std::filesystem::is_regular_file(path, ec);
}

// this-cpu is loaded only when cached: listing never measures.
std::vector<Entry> loadAll() {
  std::vector<Entry> entries;
  for (const std::string& name : listProfiles()) {
    Entry e{name, std::nullopt, ""};
    if (name != kThisCpuProfile || cacheExists()) {
      try {
        e.profile = loadProfile(name);
      } catch (const ConfigError& error) {
        e.error = error.what();
      }
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

// Column widths shared by the header and the rows.
constexpr int kName = 16, kCol = 9, kWide = 12;

void printRow(const HardwareProfile& p, std::ostream& out) {
  out << std::left << std::setw(kName) << p.name << std::right << std::setw(kCol) << fig(p.device.bf16_flops / 1e12)
      << std::setw(6) << fig(p.device.compute_efficiency) << std::setw(kCol) << fig(p.device.mem_bandwidth / 1e9)
      << std::setw(kCol) << fig(p.device.mem_capacity / 1e9) << std::setw(6) << p.gpus_per_node << std::setw(kWide)
      << fig(p.intra_node.bandwidth / 1e9) << std::setw(kCol) << fig(p.intra_node.latency * 1e6) << std::setw(kWide)
      << fig(p.inter_node.bandwidth / 1e9) << std::setw(kCol) << fig(p.inter_node.latency * 1e6) << "\n";
}

void printHeader(std::ostream& out) {
  out << std::left << std::setw(kName) << "name" << std::right << std::setw(kCol) << "TFLOPS" << std::setw(6) << "eff"
      << std::setw(kCol) << "mem GB/s" << std::setw(kCol) << "mem GB" << std::setw(6) << "/node" << std::setw(kWide)
      << "intra GB/s" << std::setw(kCol) << "intra us" << std::setw(kWide) << "inter GB/s" << std::setw(kCol)
      << "inter us" << "\n";
}

int calibrate(bool json, std::ostream& out, std::ostream& err) {
  const HardwareProfile p = calibrateThisCpu();
  std::string path;
  try {
    path = writeThisCpuCache(p);
  } catch (const ConfigError& e) {
    err << "error: " << e.what() << "\n";
    return kExitBadInput;
  }
  if (json) {
    writeProfileJson(p, out);
    return kExitOk;
  }
  printHeader(out);
  printRow(p, out);
  if (const auto& c = p.calibration)
    out << "CPU ranks, every core busy: GEMMs at " << fig(c->gemm_efficiency) << " of the single-thread peak, "
        << "element-wise ops " << fig(c->elementwise_bandwidth / 1e9) << " GB/s, weight conversions "
        << fig(c->weight_convert * 1e9) << " ns/param, optimizer " << fig(c->hbm_efficiency) << " of one quiet core's memcpy, "
        << "loopback all-reduce busbw " << fig(c->intra_node_busbw / 1e9) << " GB/s\n";
  out << "this-cpu measured and written to " << path << "\n";
  return kExitOk;
}

}  // namespace

int commandProfiles(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  bool json = false, recalibrate = false;
  for (const std::string& a : args) {
    if (a == "--json") {
      json = true;
    } else if (a == "--calibrate") {
      recalibrate = true;
    } else if (a == "--help" || a == "-h") {
      out << kProfilesUsage;
      return kExitOk;
    } else {
      err << "error: profiles takes --json, --calibrate or --help, got '" << a << "'\n";
      return kExitBadInput;
    }
  }
  if (recalibrate) return calibrate(json, out, err);

  const std::vector<Entry> entries = loadAll();
  bool failed = false;
  if (json) {
    Json j;
    j["profiles_dir"] = profilesDir();
    j["this_cpu_cache"] = thisCpuCachePath();
    Json& profiles = j["profiles"] = Json::array();
    for (const Entry& e : entries)
      if (e.profile) profiles.push_back(profileJson(*e.profile));
    Json& not_calibrated = j["not_calibrated"] = Json::array();
    for (const Entry& e : entries)
      if (!e.profile && e.error.empty()) not_calibrated.push_back(e.name);
    Json& errors = j["errors"] = Json::array();
    for (const Entry& e : entries) {
      if (e.error.empty()) continue;
      errors.push_back(Json{{"name", e.name}, {"error", e.error}});
    }
    out << j.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
    for (const Entry& e : entries) failed |= !e.error.empty();
    return failed ? kExitBadInput : kExitOk;
  }

  out << "profiles in " << profilesDir() << " (TFLOPS dense bf16 peak; eff = fraction of it GEMMs reach;\n"
      << "GB = 1e9 bytes; link GB/s per direction per GPU, us per message)\n";
  printHeader(out);
  for (const Entry& e : entries) {
    if (e.profile) {
      printRow(*e.profile, out);
    } else if (e.error.empty()) {
      out << std::left << std::setw(kName) << e.name << "not measured yet: run `shardscope-cli profiles --calibrate`"
          << " (or any use of it measures it, about a second)\n";
    } else {
      out << std::left << std::setw(kName) << e.name << "INVALID (see below)\n";
      err << "error: " << e.error << "\n";
      failed = true;
    }
  }
  return failed ? kExitBadInput : kExitOk;
}

}  // namespace shardscope
