// `shardscope-cli run` flags as the parser takes them: the input is split at
// NUL bytes into argv. A bad command line must end in one ConfigError naming
// the flag. A config that parses must give back flags (runArgs: what traces
// record so a run can be repeated) that parse to the same config, and its
// config JSON (traces and summaries) must read back to the same flags.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "common/errors.h"
#include "config/config_json.h"
#include "config/run_config.h"

using namespace shardscope;

namespace {

[[noreturn]] void finding(const char* what, const std::vector<std::string>& args) {
  std::string line;
  for (const std::string& a : args) line += " '" + a + "'";
  std::fprintf(stderr, "fuzz_run_args: %s:%s\n", what, line.c_str());
  std::abort();
}

std::vector<std::string> splitAtNul(std::string_view input) {
  std::vector<std::string> args;
  while (!input.empty()) {
    const size_t nul = input.find('\0');
    args.emplace_back(input.substr(0, nul));
    if (nul == std::string_view::npos) break;
    input.remove_prefix(nul + 1);
  }
  return args;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> args = splitAtNul({reinterpret_cast<const char*>(data), size});
  RunConfig config;
  bool help = false;
  try {
    config = parseRunArgs(args, &help);
  } catch (const ConfigError&) {
    return 0;
  }
  if (help) return 0;
  (void)runCommandLine(config);

  const std::vector<std::string> given = runArgs(config);
  std::vector<std::string> again;
  try {
    again = runArgs(parseRunArgs(given));
  } catch (const ConfigError& e) {
    finding(("runArgs of a valid config does not parse: " + std::string(e.what())).c_str(), given);
  }
  if (again != given) finding("runArgs does not give back the same config", given);

  std::vector<std::string> from_json;
  try {
    from_json = runArgs(configFromJson(configToJson(config)));
  } catch (const ConfigError& e) {
    finding(("the config JSON of a valid config does not read back: " + std::string(e.what())).c_str(), given);
  }
  if (from_json != given) finding("the config JSON does not give back the same config", given);
  return 0;
}
