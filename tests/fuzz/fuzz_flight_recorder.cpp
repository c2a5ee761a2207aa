// A job's flight-recorder dumps as `shardscope-cli analyze DIR` diagnoses
// them: the input holds one dump per rank (pickle or JSON), separated by the
// line "\n=RANK=\n"; each is read, the readable ones are matched across ranks.
// A bad dump must end in one ConfigError; a mismatch must name ranks that were read.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>

#include "common/errors.h"
#include "postmortem/flight_recorder.h"
#include "postmortem/pickle_reader.h"
#include "postmortem/postmortem_report.h"

using namespace shardscope;
using namespace shardscope::postmortem;

namespace {

[[noreturn]] void frFinding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_flight_recorder: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  constexpr std::string_view kSeparator = "\n=RANK=\n";
  std::vector<FrRankDump> dumps;
  size_t begin = 0;
  for (int rank = 0; begin <= all.size() && rank < 16; ++rank) {
    size_t end = all.find(kSeparator, begin);
    if (end == std::string_view::npos) end = all.size();
    try {
      dumps.push_back(parseFlightRecorderDump(readPostmortemDocument(all.substr(begin, end - begin)), rank, "fuzz"));
    } catch (const ConfigError&) {
      // this rank's dump is refused by name; the others are still diagnosed
    }
    begin = end + kSeparator.size();
  }
  const FrDiagnosis d = diagnoseFlightRecorder(dumps);
  if (d.first_mismatch) {
    const std::set<int> read(d.ranks.begin(), d.ranks.end());
    for (const int r : d.first_mismatch->ranks)
      if (read.count(r) == 0) frFinding("a culprit that has no dump", std::to_string(r));
    for (const int r : d.first_mismatch->waiting_ranks)
      if (read.count(r) == 0) frFinding("a waiting rank that has no dump", std::to_string(r));
    if (d.first_mismatch->ranks.empty()) frFinding("a mismatch with no culprit", d.first_mismatch->kind);
    (void)frMismatchSentence(*d.first_mismatch);
  }
  std::ostringstream text;
  printFlightRecorderText(d, text);
  (void)flightRecorderJson(d).dump(-1, ' ', false, Json::error_handler_t::replace);
  return 0;
}
