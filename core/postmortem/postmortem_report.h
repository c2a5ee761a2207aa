// What `shardscope-cli analyze` prints for a memory snapshot or a set of
// flight-recorder dumps: a short text for people and JSON with stable keys
// (memory_snapshot.devices[] with largest_at_peak[], flight_recorder.first_mismatch).
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_tree.h"
#include "common/units.h"
#include "postmortem/flight_recorder.h"
#include "postmortem/memory_snapshot.h"

namespace shardscope::postmortem {

// Which post-mortem file a file's first stored bytes (4 KiB are enough) begin:
// a pickle (0x80, or protocol 0/1 to be refused by name) by the keys it names,
// or JSON naming a snapshot's or a dump's keys near its start. Only
// input/input_detect.cpp asks, on behalf of every front end.
enum class PostmortemInput { None, MemorySnapshot, FlightRecorder };
PostmortemInput postmortemKindOfHead(std::string_view head);

Json memorySnapshotJson(const MemorySnapshot& s, const std::string& path);
void printMemorySnapshotText(const MemorySnapshot& s, const std::string& path, std::ostream& out);

Json flightRecorderJson(const FrDiagnosis& d);
void printFlightRecorderText(const FrDiagnosis& d, std::ostream& out);

// A snapshot's sizes as analyze and the snapshot view write them, to a tenth:
// "1.5 GiB", "512.0 MiB", "12 bytes" (common/units.h's bytesText).
inline std::string snapshotBytesText(int64_t bytes) { return bytesText(static_cast<double>(bytes), 1); }

// How many of the largest live allocations at the peak analyze reports (text and JSON).
inline constexpr size_t kSnapshotLargestReported = 10;
// An allocation's user frame as "file:line name" (SnapshotAllocation::user_frame),
// or why there is none.
std::string snapshotUserFrameText(const SnapshotAllocation& a);

}  // namespace shardscope::postmortem
