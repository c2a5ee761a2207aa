// A post-mortem file as `shardscope-cli analyze` reads it: the pickle reader
// (or JSON), then the memory-snapshot model and its reports, or a
// flight-recorder dump diagnosed against itself as a second rank. A bad
// document must end in one ConfigError; a model that reads must keep its
// invariants (one total per entry, the peak at least every total).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "common/errors.h"
#include "postmortem/flight_recorder.h"
#include "postmortem/memory_snapshot.h"
#include "postmortem/pickle_reader.h"
#include "postmortem/postmortem_report.h"

using namespace shardscope;
using namespace shardscope::postmortem;

namespace {

[[noreturn]] void pickleFinding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_pickle: %s: %s\n", what, detail.c_str());
  std::abort();
}

void checkSnapshot(const ValueTree& tree) {
  MemorySnapshot s;
  try {
    s = buildMemorySnapshot(tree);
  } catch (const ConfigError&) {
    return;
  }
  for (const SnapshotDevice& d : s.devices) {
    if (d.allocated.size() != d.entries() || d.reserved.size() != d.entries() || d.categories.size() != d.entries())
      pickleFinding("a device's totals do not have one value per entry", std::to_string(d.device));
    for (size_t i = 0; i < d.entries(); ++i)
      if (d.allocated[i] > d.peak_allocated || d.reserved[i] > d.peak_reserved)
        pickleFinding("a total above its peak", std::to_string(i));
    if (d.initial_allocated > d.peak_allocated || d.final_allocated > d.peak_allocated)
      pickleFinding("the first or last allocated total above the peak", std::to_string(d.device));
  }
  std::ostringstream text;
  printMemorySnapshotText(s, "fuzz.pickle", text);
  (void)memorySnapshotJson(s, "fuzz.pickle").dump(-1, ' ', false, Json::error_handler_t::replace);
}

void checkDump(const ValueTree& tree) {
  std::vector<FrRankDump> dumps;
  try {
    dumps.push_back(parseFlightRecorderDump(tree, 0, "fuzz_rank_0"));
    dumps.push_back(parseFlightRecorderDump(tree, 1, "fuzz_rank_1"));
  } catch (const ConfigError&) {
    return;
  }
  // Rank 1 one collective short: the same dump without its last entry.
  if (!dumps[1].entries.empty()) dumps[1].entries.pop_back();
  const FrDiagnosis d = diagnoseFlightRecorder(dumps);
  if (d.first_mismatch) (void)frMismatchSentence(*d.first_mismatch);
  std::ostringstream text;
  printFlightRecorderText(d, text);
  (void)flightRecorderJson(d).dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  ValueTree tree;
  try {
    tree = readPostmortemDocument(bytes);
  } catch (const ConfigError&) {
    return 0;  // refused with one clear error
  }
  (void)tree.toJson(tree.root).dump(-1, ' ', false, Json::error_handler_t::replace);
  checkSnapshot(tree);
  checkDump(tree);
  return 0;
}
