// A preset file as Open preset and `shardscope-cli preset` read it: the strict
// reader, whose every run config goes through the CLI's flag parser. A bad
// preset must end in one ConfigError naming the field. A preset that loads
// must write out (presetFileJson, what Save preset writes) to a document that
// loads again as the same experiment: same title, text, view, run labels
// and configs.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/errors.h"
#include "config/config_json.h"
#include "config/preset_file.h"

using namespace shardscope;

namespace {

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_preset: %s: %s\n", what, detail.c_str());
  std::abort();
}

void requireSame(const PresetFile& a, const PresetFile& b) {
  if (a.title != b.title || a.text != b.text || a.view != b.view || a.expect_error != b.expect_error)
    finding("a written preset reads back with another title, text, view or expect_error", a.title + " / " + b.title);
  if (a.runs.size() != b.runs.size())
    finding("a written preset reads back with another number of runs",
            std::to_string(a.runs.size()) + " vs " + std::to_string(b.runs.size()));
  for (size_t i = 0; i < a.runs.size(); ++i) {
    if (a.runs[i].label != b.runs[i].label)
      finding("a written preset's run reads back with another label", a.runs[i].label + " / " + b.runs[i].label);
    const std::string x = configJsonText(a.runs[i].config), y = configJsonText(b.runs[i].config);
    if (x != y) finding("a written preset's run reads back as another config", "runs[" + std::to_string(i) + "]: " + x + " vs " + y);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string json(reinterpret_cast<const char*>(data), size);
  PresetFile preset;
  try {
    preset = parsePresetJson(json, "fuzz-preset.json");
  } catch (const ConfigError&) {
    return 0;
  }
  const std::string written = presetFileJson(preset);
  try {
    requireSame(preset, parsePresetJson(written, "fuzz-preset.json"));
  } catch (const ConfigError& e) {
    finding("a loaded preset, written out, does not load again", e.what());
  }
  return 0;
}
