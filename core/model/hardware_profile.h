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

#include "rank/hardware_profile.h"

namespace shardscope {

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
