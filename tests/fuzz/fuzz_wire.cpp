// A rank process's message as the collector receives it, or an inspector's
// and a served run's (attach/), or a rank's and its gate relay's: the first 32 bytes are the header, the rest
// the payload (launch/wire_format.h). A bad message must end in one WireError
// naming the field; a good one must decode to what re-encodes to the same
// bytes, and a result's JSON must read back as itself.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "launch/rank_result_json.h"
#include "launch/wire_format.h"

using namespace shardscope;

namespace {
constexpr uint64_t kRunId = 0x1122334455667788ull;  // the corpus's run id
constexpr int kRanks = 8;

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz_wire: %s\n", what);
  std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const size_t header_bytes = std::min(size, sizeof(WireHeader));
  const std::span<const uint8_t> header(data, header_bytes), payload(data + header_bytes, size - header_bytes);
  WireMessage m;
  try {
    m = decodeWireMessage(header, payload, kRunId, kRanks);
  } catch (const WireError&) {
    return 0;
  }
  const bool of_the_run = isAttachKind(m.kind);  // the attach protocol's: rank -1 allowed
  if (m.rank < (of_the_run ? -1 : 0) || m.rank >= kRanks) finding("a decoded rank outside the run");
  if (m.kind == WireKind::Command && commandPayload(m.command) != std::vector<uint8_t>(payload.begin(), payload.end()))
    finding("a command does not re-encode to its bytes");
  if (m.kind == WireKind::GateState && gateStatePayload(m.gate) != std::vector<uint8_t>(payload.begin(), payload.end()))
    finding("a gate state does not re-encode to its bytes");
  if (m.kind == WireKind::GateArrived && gateArrivalPayload(m.arrival) != std::vector<uint8_t>(payload.begin(), payload.end()))
    finding("a gate arrival does not re-encode to its bytes");
  if (m.kind == WireKind::GateLedger && gateLedgerPayload(m.arrival) != std::vector<uint8_t>(payload.begin(), payload.end()))
    finding("a gate ledger does not re-encode to its bytes");
  if (m.kind == WireKind::Events) {
    if (m.events.size() * sizeof(Event) != payload.size()) finding("events decoded from a payload of another size");
    if (!m.events.empty() && std::memcmp(m.events.data(), payload.data(), payload.size()) != 0)
      finding("events changed in decoding");
  }
  if (m.kind == WireKind::Master && 8 + m.master.size() * sizeof(float) != payload.size())
    finding("master weights decoded from a payload of another size");
  if (m.kind == WireKind::Result) {
    int64_t padding = 0;
    RankResult r;
    try {
      r = parseRankResultJson(m.text, &padding);
    } catch (const WireError&) {
      return 0;
    }
    int64_t again = 0;
    const RankResult back = parseRankResultJson(rankResultJson(r, padding), &again);
    if (again != padding || rankResultJson(back, again) != rankResultJson(r, padding))
      finding("a result does not read back as itself");
  }
  return 0;
}
