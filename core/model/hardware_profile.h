// Hardware profiles: the device and link figures a modeled clock prices work
// with, read from user-editable resources/profiles/<name>.json. The JSON uses
// human units (TFLOPS, GB/s, GB, us; G = 1e9); the struct holds SI units only.
// Loading is strict: a missing, mistyped, out-of-range or unknown key is one
// ConfigError naming the file and the field path, never a silent default.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace shardscope {

struct HardwareProfile {
  std::string name;         // equals the file's stem ("h100-sxm")
  std::string description;  // what the figures assume, in words

  struct Device {
    double bf16_flops = 0;          // FLOP/s, dense (no sparsity), peak
    double mem_bandwidth = 0;       // bytes/s, reads + writes together
    double mem_capacity = 0;        // bytes
    double compute_efficiency = 0;  // achievable fraction of bf16_flops for GEMMs, (0, 1]
  } device;

  struct Link {
    double bandwidth = 0;  // bytes/s per direction per GPU
    double latency = 0;    // seconds per message (one ring step)
  } intra_node, inter_node;

  int gpus_per_node = 1;
  std::vector<std::string> sources;  // datasheet citations, or how it was measured
};

// The profile named `name_or_path`: a path when it ends in ".json", else a name
// looked up in profilesDir(); "this-cpu" reads the calibration cache, measuring
// this machine first when there is none (see model/cpu_calibration.h).
// Throws ConfigError (unknown name, unreadable file, bad JSON, bad field).
HardwareProfile loadProfile(const std::string& name_or_path);

// Parses and validates one profile document; `file` names it in errors and its
// stem must equal the "name" field.
HardwareProfile parseProfile(const std::string& json_text, const std::string& file);

// Names of the shipped/user profiles in profilesDir() (sorted) plus "this-cpu".
std::vector<std::string> listProfiles();

// $SHARDSCOPE_RESOURCES/profiles when that variable is set, else the source
// tree's resources/profiles compiled in at build time.
std::string profilesDir();

// The profile as a document parseProfile accepts (human units), indented.
void writeProfileJson(const HardwareProfile& profile, std::ostream& out);
// The same document as a value, to embed in a larger one.
nlohmann::ordered_json profileJson(const HardwareProfile& profile);

}  // namespace shardscope
