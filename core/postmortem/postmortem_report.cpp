// Text and JSON reports of the post-mortem readers. Strings from the files
// (file names in frames) go into JSON with invalid UTF-8 replaced.
#include "postmortem/postmortem_report.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ostream>

#include "postmortem/pickle_reader.h"

namespace shardscope::postmortem {

namespace {

Json frameJson(const FrFrame& f) {
  Json j = Json::object();
  j["filename"] = f.filename;
  j["line"] = f.line;
  j["name"] = f.name;
  return j;
}

}  // namespace

PostmortemInput postmortemKindOfHead(std::string_view head) {
  // A pickle (one of protocol 0 or 1 too, to be refused by name): which kind
  // needs its keys; both kinds name theirs early.
  if ((!head.empty() && static_cast<uint8_t>(head[0]) == 0x80) || looksLikeOldPickle(head)) {
    if (head.find("device_traces") != std::string_view::npos || head.find("segments") != std::string_view::npos)
      return PostmortemInput::MemorySnapshot;
    return PostmortemInput::FlightRecorder;
  }
  const size_t first = head.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || head[first] != '{') return PostmortemInput::None;
  if (head.find("\"device_traces\"") != std::string_view::npos || head.find("\"segments\"") != std::string_view::npos)
    return PostmortemInput::MemorySnapshot;
  // A profiler trace's distributedInfo has a pg_config too (PyTorch 2.2 on): a trace is none.
  if (head.find("\"traceEvents\"") != std::string_view::npos || head.find("\"distributedInfo\"") != std::string_view::npos)
    return PostmortemInput::None;
  if (head.find("\"pg_config\"") != std::string_view::npos || head.find("\"pg_status\"") != std::string_view::npos ||
      head.find("\"comm_lib_version\"") != std::string_view::npos)
    return PostmortemInput::FlightRecorder;
  return PostmortemInput::None;
}


std::string snapshotUserFrameText(const SnapshotAllocation& a) {
  if (a.user_frame < 0 || static_cast<size_t>(a.user_frame) >= a.frames.size())
    return a.frames_omitted > 0 ? "(only the unwinder's frames recorded)" : "(no stack recorded)";
  const SnapshotFrame& f = a.frames[static_cast<size_t>(a.user_frame)];
  return f.filename + ":" + std::to_string(f.line) + " " + f.name;
}

Json memorySnapshotJson(const MemorySnapshot& s, const std::string& path) {
  Json devices = Json::array();
  for (const SnapshotDevice& d : s.devices) {
    Json j = Json::object();
    j["device"] = d.device;
    j["peak_allocated_bytes"] = d.peak_allocated;
    j["peak_reserved_bytes"] = d.peak_reserved;
    j["final_allocated_bytes"] = d.final_allocated;
    j["final_reserved_bytes"] = d.final_reserved;
    j["initial_allocated_bytes"] = d.initial_allocated;
    j["initial_reserved_bytes"] = d.initial_reserved;
    j["trace_entries"] = d.entries();
    j["has_time"] = d.hasTime();
    j["peak_allocated_entry"] = d.peak_allocated_index;
    if (d.hasTime() && d.peak_allocated_index >= 0) j["peak_allocated_time_us"] = d.time_us[static_cast<size_t>(d.peak_allocated_index)];
    Json cats = Json::object();
    int64_t attributed = 0;
    for (int c = 0; c < kSnapshotCategoryCount; ++c) {
      const auto cat = static_cast<SnapshotCategory>(c);
      cats[std::string(snapshotCategoryKey(cat))] = d.peak_by_category[static_cast<size_t>(c)];
      if (cat != SnapshotCategory::Other) attributed += d.peak_by_category[static_cast<size_t>(c)];
    }
    j["by_category"] = cats;  // live bytes at the allocated peak
    j["unattributed_bytes"] = d.peak_allocated - attributed;
    j["unattributed_share"] = d.peak_allocated > 0 ? static_cast<double>(d.peak_allocated - attributed) / static_cast<double>(d.peak_allocated) : 0.0;
    j["no_stack_bytes"] = d.peak_no_stack_bytes;
    j["before_trace_bytes"] = d.peak_before_trace_bytes;
    j["inconsistent_entries"] = d.inconsistent_entries;
    Json ooms = Json::array();
    for (const SnapshotOom& o : d.ooms) {
      Json oj = Json::object();
      oj["entry"] = o.index;
      oj["requested_bytes"] = o.requested_bytes;
      oj["device_free_bytes"] = o.device_free_bytes;
      oj["allocated_bytes"] = d.allocatedAt(static_cast<int64_t>(o.index));
      oj["reserved_bytes"] = d.reservedAt(static_cast<int64_t>(o.index));
      if (o.time_us >= 0) oj["time_us"] = o.time_us;
      ooms.push_back(oj);
    }
    j["oom"] = ooms;
    // The largest live allocations at the allocated peak, each with its user frame.
    j["live_allocations_at_peak"] = d.peak_live_allocations;
    Json largest = Json::array();
    for (size_t k = 0; k < d.peak_largest.size() && k < kSnapshotLargestReported; ++k) {
      const SnapshotAllocation& a = d.peak_largest[k];
      Json aj = Json::object();
      aj["bytes"] = a.size;
      aj["category"] = std::string(snapshotCategoryKey(a.category));
      aj["entry"] = a.entry;
      aj["addr"] = a.addr;
      aj["frame"] = snapshotUserFrameText(a);
      aj["frames"] = a.frames.size();
      aj["frames_omitted"] = a.frames_omitted;
      largest.push_back(aj);
    }
    j["largest_at_peak"] = largest;
    devices.push_back(j);
  }
  Json out = Json::object();
  out["file"] = path;
  out["devices"] = devices;
  return out;
}

void printMemorySnapshotText(const MemorySnapshot& s, const std::string& path, std::ostream& out) {
  out << "memory snapshot " << path << ": " << s.devices.size() << (s.devices.size() == 1 ? " device" : " devices") << "\n";
  for (const SnapshotDevice& d : s.devices) {
    out << "device " << d.device << ": " << d.entries() << " trace entries"
        << (d.hasTime() ? "" : " (no time_us: event order)") << "\n";
    out << "  allocated  peak " << snapshotBytesText(d.peak_allocated) << "   final " << snapshotBytesText(d.final_allocated)
        << "   before the trace " << snapshotBytesText(d.initial_allocated) << "\n";
    out << "  reserved   peak " << snapshotBytesText(d.peak_reserved) << "   final " << snapshotBytesText(d.final_reserved)
        << "   before the trace " << snapshotBytesText(d.initial_reserved) << "\n";
    out << "  at the allocated peak (entry " << d.peak_allocated_index << "):";
    int64_t attributed = 0;
    for (int c = 0; c < kSnapshotCategoryCount; ++c) {
      const auto cat = static_cast<SnapshotCategory>(c);
      const int64_t b = d.peak_by_category[static_cast<size_t>(c)];
      if (cat != SnapshotCategory::Other) attributed += b;
      out << (c == 0 ? " " : ", ") << snapshotCategoryLabel(cat) << " " << snapshotBytesText(b);
    }
    out << "\n";
    if (d.peak_allocated > 0) {
      char pct[16];
      std::snprintf(pct, sizeof pct, "%.1f",
                    100.0 * static_cast<double>(d.peak_allocated - attributed) / static_cast<double>(d.peak_allocated));
      out << "  unattributed: " << pct << " % of the peak (" << snapshotBytesText(d.peak_no_stack_bytes)
          << " with no stack recorded, " << snapshotBytesText(d.peak_before_trace_bytes) << " allocated before the trace)\n";
    }
    if (!d.peak_largest.empty()) {
      out << "  largest live allocations at the peak (" << std::min(d.peak_largest.size(), kSnapshotLargestReported)
          << " of " << d.peak_live_allocations << "; the first frame memory_viz shows that is Python, else its first):\n";
      for (size_t k = 0; k < d.peak_largest.size() && k < kSnapshotLargestReported; ++k) {
        const SnapshotAllocation& a = d.peak_largest[k];
        out << "    " << snapshotBytesText(a.size) << "  " << snapshotCategoryLabel(a.category) << "  "
            << snapshotUserFrameText(a) << "\n";
      }
    }
    for (const SnapshotOom& o : d.ooms)
      out << "  OOM at entry " << o.index << ": asked for " << snapshotBytesText(o.requested_bytes) << ", CUDA had "
          << snapshotBytesText(o.device_free_bytes) << " free, " << snapshotBytesText(d.reservedAt(static_cast<int64_t>(o.index)))
          << " reserved\n";
    if (d.inconsistent_entries > 0)
      out << "  warning: the trace and the final segments disagree (" << d.inconsistent_entries
          << " entries rebuild to below zero bytes); totals follow the segments\n";
  }
}

Json flightRecorderJson(const FrDiagnosis& d) {
  Json out = Json::object();
  out["ranks"] = d.ranks;
  out["entries"] = d.entries;
  if (d.first_mismatch) {
    const FrMismatch& m = *d.first_mismatch;
    Json j = Json::object();
    j["pg"] = m.pg;
    j["pg_desc"] = m.pg_desc;
    j["pg_name"] = m.pg_name;
    j["seq"] = m.seq;
    j["op"] = m.op;
    j["kind"] = m.kind;
    j["ranks"] = m.ranks;
    j["waiting_ranks"] = m.waiting_ranks;
    Json frames = Json::object();
    for (const auto& [rank, f] : m.frames_by_rank) frames[std::to_string(rank)] = frameJson(f);
    j["frames_by_rank"] = frames;
    j["since_ns"] = m.since_ns;
    j["detail"] = m.detail;
    j["sentence"] = frMismatchSentence(m);
    out["first_mismatch"] = j;
  } else {
    out["first_mismatch"] = nullptr;
  }
  out["notes"] = d.notes;
  return out;
}

void printFlightRecorderText(const FrDiagnosis& d, std::ostream& out) {
  out << "flight recorder: " << d.ranks.size() << (d.ranks.size() == 1 ? " rank, " : " ranks, ") << d.entries << " entries\n";
  if (d.first_mismatch) out << frMismatchSentence(*d.first_mismatch) << "\n";
  else out << "no collective where the ranks disagree\n";
  for (const std::string& n : d.notes) out << "note: " << n << "\n";
}

}  // namespace shardscope::postmortem
