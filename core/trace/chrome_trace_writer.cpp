#include "trace/chrome_trace_writer.h"

#include "common/output_file.h"

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <ostream>
#include <stdexcept>

#include "common/json_tree.h"
#include "config/config_json.h"
#include "trace/json_writer.h"
#include "trace/ordered_json_writer.h"

namespace shardscope {

namespace {

constexpr int kTimeDecimals = 3;  // ns -> us with 3 decimals keeps every ns

bool isMemory(EventKind kind) { return kind == EventKind::Alloc || kind == EventKind::Free; }

void appendInt(std::string& out, int64_t number) {
  char digits[24];
  out.append(digits, static_cast<size_t>(std::to_chars(digits, digits + sizeof digits, number).ptr - digits));
}

// Writes one rank's events; keeps the per-category memory totals for the counters.
class RankWriter {
 public:
  RankWriter(JsonWriter& out, const RunTrace& trace, int rank) : m_out(out), m_trace(trace), m_rank(rank) {
    m_name.reserve(64);
  }

  void writeMetadata(uint32_t used_lanes) {
    m_name.assign("rank ");
    appendInt(m_name, m_rank);
    metadata("process_name", -1).key("name").value(m_name).endObject().endObject();
    metadata("process_sort_index", -1).key("sort_index").value(m_rank).endObject().endObject();
    for (int lane = 0; lane < kLaneCount; ++lane) {
      if (!(used_lanes & (1u << lane))) continue;
      metadata("thread_name", lane).key("name").value(laneName(static_cast<Lane>(lane))).endObject().endObject();
      metadata("thread_sort_index", lane).key("sort_index").value(lane).endObject().endObject();
    }
  }

  void writeEvent(const Event& e) {
    const bool instant = isInstant(e.kind);
    m_out.beginObject();
    m_out.key("ph").value(instant ? "i" : "X");
    eventName(e);
    m_out.key("name").value(m_name);
    m_out.key("cat").value(eventKindName(e.kind));
    m_out.key("pid").value(m_rank);
    m_out.key("tid").value(static_cast<int>(e.lane));
    m_out.key("ts").decimal(e.begin_ns, kTimeDecimals);
    if (instant) m_out.key("s").value("t");
    else m_out.key("dur").decimal(e.end_ns - e.begin_ns, kTimeDecimals);
    writeArgs(e);
    m_out.endObject();

    if (isMemory(e.kind) && static_cast<int>(e.category) < kCategoryCount) {
      m_memory[static_cast<size_t>(e.category)] = e.value;
      m_out.beginObject();
      m_out.key("ph").value("C");
      m_out.key("name").value("memory");
      m_out.key("pid").value(m_rank);
      m_out.key("ts").decimal(e.begin_ns, kTimeDecimals);
      m_out.key("args").beginObject();
      for (int c = 0; c < kCategoryCount; ++c) {
        m_out.key(categoryName(static_cast<Category>(c))).value(m_memory[static_cast<size_t>(c)]);
      }
      m_out.endObject();
      m_out.endObject();
    }
  }

 private:
  JsonWriter& metadata(std::string_view name, int tid) {
    m_out.beginObject();
    m_out.key("ph").value("M");
    m_out.key("name").value(name);
    m_out.key("pid").value(m_rank);
    if (tid >= 0) m_out.key("tid").value(tid);
    return m_out.key("args").beginObject();
  }

  // "forward block3" (or the block's name), "all_reduce bucket 2", "all_gather unit 1", else the kind.
  void eventName(const Event& e) {
    m_name.assign(eventKindName(e.kind));
    if ((e.kind == EventKind::Forward || e.kind == EventKind::Backward) && e.block >= 0) {
      m_name += ' ';
      const auto block = static_cast<size_t>(e.block);
      if (block < m_trace.block_names.size() && !m_trace.block_names[block].empty()) {
        m_name += m_trace.block_names[block];
      } else {
        m_name += "block";
        appendInt(m_name, e.block);
      }
    } else if (isCollective(e.kind) && e.bucket >= 0) {
      m_name += " bucket ";
      appendInt(m_name, e.bucket);
    } else if (isCollective(e.kind) && e.unit >= 0) {
      m_name += " unit ";
      appendInt(m_name, e.unit);
    }
    if (e.kind == EventKind::Send || e.kind == EventKind::Recv) m_name += (e.flags & kEventGradient) ? " gradient" : " activations";
    if (microbatchOf(e) >= 0) {  // a pipelined run's pass or transfer: "forward block3 mb 2"
      m_name += " mb ";
      appendInt(m_name, microbatchOf(e));
    }
  }

  // Only fields that are set; category/value always for Alloc/Free (0 bytes is a real total).
  void writeArgs(const Event& e) {
    bool open = false;
    const auto arg = [&](std::string_view name) -> JsonWriter& {
      if (!open) {
        m_out.key("args").beginObject();
        open = true;
      }
      return m_out.key(name);
    };
    if (e.block != -1) arg("block").value(e.block);
    if (e.unit != -1) arg("unit").value(e.unit);
    if (e.bucket != -1) arg("bucket").value(e.bucket);
    if (e.bytes != 0) arg("bytes").value(e.bytes);
    if (e.step != -1) arg("step").value(e.step);
    if (e.seq != -1) arg("seq").value(e.seq);
    if (e.group != -1) arg("group").value(e.group);
    if (e.op != -1) arg("op").value(e.op);
    if (e.dep != -1) arg("dep").value(e.dep);
    if (microbatchOf(e) >= 0) arg("microbatch").value(e.param);
    else if (e.param != -1) arg("param").value(e.param);
    const bool memory = isMemory(e.kind);
    if (memory || e.category != Category::Workspace) arg("category").value(categoryName(e.category));
    if (memory || e.value != 0) arg("value").value(e.value);
    if (e.flags != 0) arg("flags").value(static_cast<int>(e.flags));
    // A collective's `value` is the part of it spent waiting for peers; the
    // rate is over the transfer. bytes per ns == 10^9 bytes per s: algbw in GB/s
    // (nccl-tests convention).
    const int64_t transfer = e.end_ns - e.begin_ns - (isCollective(e.kind) ? e.value : 0);
    if (isCollective(e.kind) && transfer > 0)
      arg("GB/s").fixed(static_cast<double>(e.bytes) / static_cast<double>(transfer), 3);
    if (open) m_out.endObject();
  }

  JsonWriter& m_out;
  const RunTrace& m_trace;
  int m_rank;
  std::string m_name;  // reused for every event name: no per-event allocation
  std::array<int64_t, kCategoryCount> m_memory{};
};

void writeStringArray(JsonWriter& out, const std::vector<std::string>& items) {
  out.beginArray();
  for (const std::string& item : items) out.value(item);
  out.endArray();
}

void writeMetadata(JsonWriter& out, const RunTrace& trace) {
  out.key("metadata").beginObject();
  out.key("format").value("shardscope-trace");
  out.key("version").value(1);
  out.key("strategy").value(trace.strategy);
  out.key("ranks").value(trace.ranks);
  out.key("params").value(trace.params);
  // Groups are not written: a reader derives them from the config (meshGroups).
  if (trace.config) {
    out.key("config");
    writeJson(out, configToJson(*trace.config));
  }
  out.key("buckets").beginArray();
  for (const BucketInfo& bucket : trace.buckets) {
    out.beginObject();
    out.key("index").value(bucket.index);
    out.key("bytes").value(bucket.bytes);
    out.key("params");
    writeStringArray(out, bucket.params);
    out.endObject();
  }
  out.endArray();
  out.key("units").beginArray();
  for (const UnitInfo& unit : trace.units) {
    out.beginObject();
    out.key("index").value(unit.index);
    out.key("blocks").beginArray();
    for (int block : unit.blocks) out.value(block);
    out.endArray();
    out.key("params").value(unit.params);
    out.endObject();
  }
  out.endArray();
  out.key("param_names");
  writeStringArray(out, trace.param_names);
  out.key("block_names");
  writeStringArray(out, trace.block_names);
  // Only runs that have losses write them, so other traces keep their bytes.
  if (!trace.losses.empty()) {
    out.key("losses").beginArray();
    for (double loss : trace.losses) out.value(loss);
    out.endArray();
  }
  if (trace.interrupted_by) {
    out.key("interrupted").beginObject();
    out.key("by").value(*trace.interrupted_by);
    out.key("at_step").value(trace.interrupted_at_step);
    out.endObject();
  }
  if (!trace.node_clocks.empty()) {
    out.key("node_clocks").beginArray();
    for (const RunTrace::NodeClock& n : trace.node_clocks) {
      out.beginObject();
      out.key("node").value(n.node);
      out.key("first_rank").value(n.first_rank);
      out.key("ranks").value(n.ranks);
      out.key("uncertainty_ns").value(n.uncertainty_ns);
      out.key("pings").value(n.pings);
      out.endObject();
    }
    out.endArray();
  }
  out.endObject();
}

}  // namespace

void writeChromeTrace(const RunTrace& trace, std::ostream& stream) {
  if (trace.events.size() > static_cast<size_t>(trace.ranks < 0 ? 0 : trace.ranks)) {
    throw std::invalid_argument("RunTrace has events for " + std::to_string(trace.events.size()) +
                                " ranks but ranks = " + std::to_string(trace.ranks) + "; ranks must cover every events[r]");
  }
  JsonWriter out(stream);
  out.beginObject();
  out.key("traceEvents").beginArray(JsonWriter::Wrap::Lines);
  for (int rank = 0; rank < trace.ranks; ++rank) {
    RankWriter writer(out, trace, rank);
    // A copied rank is written from its source's events, one at a time.
    const int source = trace.copies.sourceOf(rank);
    const std::vector<Event>* events = source >= 0 && static_cast<size_t>(source) < trace.events.size()
                                           ? &trace.events[static_cast<size_t>(source)]
                                           : nullptr;
    uint32_t used_lanes = 0;
    if (events) {
      for (const Event& e : *events) used_lanes |= 1u << (static_cast<unsigned>(e.lane) & 31u);
    }
    writer.writeMetadata(used_lanes);
    if (events && source == rank) {
      for (const Event& e : *events) writer.writeEvent(e);
    } else if (events) {
      for (const Event& e : *events) writer.writeEvent(trace.copies.eventFor(rank, e));
    }
  }
  out.endArray();
  out.key("displayTimeUnit").value("ns");
  writeMetadata(out, trace);
  out.endObject();
  out.flush();
  stream.put('\n');
}

void writeChromeTraceFile(const RunTrace& trace, const std::string& path) {
  // Whole or not at all (common/output_file.h): never half a trace under its name.
  writeOutputFile(path, [&](std::ostream& out) { writeChromeTrace(trace, out); });
}

}  // namespace shardscope
