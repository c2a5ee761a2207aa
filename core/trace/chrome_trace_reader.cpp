#include "trace/chrome_trace_reader.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "config/config_json.h"
#include "trace/json_value.h"

namespace shardscope {

namespace {

constexpr size_t kNoIndex = static_cast<size_t>(-1);
constexpr int64_t kMaxRank = std::numeric_limits<int16_t>::max();
constexpr int64_t kInt16Max = std::numeric_limits<int16_t>::max();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
// |ts| in us beyond this does not fit int64 ns.
constexpr double kMaxMicros = 9.0e15;

std::string allowedNames(std::string_view (*name_of)(int), int count) {
  std::string out;
  for (int i = 0; i < count; ++i) {
    if (i > 0) out += ", ";
    out += name_of(i);
  }
  return out;
}

std::string_view laneNameAt(int i) { return laneName(static_cast<Lane>(i)); }
std::string_view kindNameAt(int i) { return eventKindName(static_cast<EventKind>(i)); }
std::string_view categoryNameAt(int i) { return categoryName(static_cast<Category>(i)); }

// Short description of a value for error messages: 1.5, "abc", an array, ...
std::string describe(const JsonValue& v) {
  switch (v.type()) {
    case JsonValue::Type::Number:
    case JsonValue::Type::Bool:
    case JsonValue::Type::Null: return v.dump();
    case JsonValue::Type::String: {
      std::string text = v.dump();
      if (text.size() > 48) text = text.substr(0, 44) + "...\"";
      return text;
    }
    case JsonValue::Type::Array: return "an array";
    case JsonValue::Type::Object: return "an object";
  }
  return "?";
}

// Where a value sits, e.g. {"traceEvents", 12, "args"} + "block". Formatted only on error.
struct Where {
  std::string_view container;
  size_t index = kNoIndex;
  std::string_view member = {};  // optional sub-object, e.g. "args"

  std::string field(std::string_view name) const {
    std::string out(container);
    if (index != kNoIndex) {  // appended piecewise: GCC 12 warns (-Wrestrict) on "[" + to_string()
      out += '[';
      out += std::to_string(index);
      out += ']';
    }
    if (!member.empty()) {
      out += '.';
      out += member;
    }
    if (!name.empty()) {
      if (!out.empty()) out += '.';
      out += name;
    }
    return out;
  }
};

class TraceParser {
 public:
  TraceParser(std::string_view json, const std::string& source) : m_json(json), m_source(source) {}

  RunTrace parse() {
    const size_t first = m_json.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && m_json[first] == '[') {
      fail("", "the top level is an array (Chrome's array form); a ShardScope trace is an object "
               "{\"traceEvents\": [...], \"metadata\": {...}}");
    }
    JsonParser parser(m_json);
    bool saw_events = false;
    bool saw_metadata = false;
    try {
      parser.beginObject();
      std::string key;
      while (parser.nextMember(key)) {
        if (key == "traceEvents") {
          if (saw_events) fail("traceEvents", "appears twice; a trace has one traceEvents array");
          saw_events = true;
          try {
            parser.beginArray();
          } catch (const JsonParseError& e) {
            fail("traceEvents", std::string("expected an array of events: ") + e.what());
          }
          size_t index = 0;
          while (parser.nextElement()) readEvent(parser.parseValue(), index++);
        } else if (key == "metadata") {
          if (saw_metadata) fail("metadata", "appears twice");
          saw_metadata = true;
          readMetadata(parser.parseValue());
        } else if (key == "displayTimeUnit") {
          const JsonValue unit = parser.parseValue();
          if (!unit.isString() || (unit.asString() != "ns" && unit.asString() != "ms")) {
            fail("displayTimeUnit", "expected \"ns\" or \"ms\", got " + describe(unit));
          }
        } else {
          parser.skipValue();  // other tools add keys (otherData, stackFrames): ignore them
        }
      }
      parser.expectEnd();
    } catch (const JsonParseError& e) {
      fail("", std::string("not valid JSON (truncated or corrupt?): ") + e.what());
    }
    if (!saw_events) fail("traceEvents", "missing; expected the object form {\"traceEvents\": [...], ...}");
    return finish();
  }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw TraceFormatError(m_source, field, what);
  }

  const JsonValue& require(const JsonValue& object, std::string_view name, const Where& where) const {
    const JsonValue* v = object.find(name);
    if (!v) fail(where.field(name), "missing (required)");
    return *v;
  }

  int64_t integer(const JsonValue& v, const Where& where, std::string_view name, int64_t lo, int64_t hi) const {
    if (!v.isInteger() || v.asInt64() < lo || v.asInt64() > hi) {
      fail(where.field(name), "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + describe(v));
    }
    return v.asInt64();
  }

  const std::string& string(const JsonValue& v, const Where& where, std::string_view name) const {
    if (!v.isString()) fail(where.field(name), "expected a string, got " + describe(v));
    return v.asString();
  }

  // ts/dur in microseconds -> ns; the writer prints 3 decimals so rounding is exact.
  int64_t micros(const JsonValue& v, const Where& where, std::string_view name) const {
    if (!v.isNumber() || std::fabs(v.asDouble()) > kMaxMicros) {
      fail(where.field(name), "expected a time in microseconds (a number, |t| <= 9e15), got " + describe(v));
    }
    if (v.isInteger()) return v.asInt64() * 1000;
    return std::llround(v.asDouble() * 1000.0);
  }

  const JsonValue::Object& object(const JsonValue& v, const Where& where, std::string_view name) const {
    if (!v.isObject()) fail(where.field(name), "expected an object, got " + describe(v));
    return v.asObject();
  }

  const JsonValue::Array& array(const JsonValue& v, const Where& where, std::string_view name) const {
    if (!v.isArray()) fail(where.field(name), "expected an array, got " + describe(v));
    return v.asArray();
  }

  int rankOf(const JsonValue& event, const Where& where, size_t index) {
    const auto rank = static_cast<int>(integer(require(event, "pid", where), where, "pid", 0, kMaxRank));
    if (static_cast<size_t>(rank) >= m_events.size()) {
      m_events.resize(static_cast<size_t>(rank) + 1);
      m_maxRankEvent = index;
    }
    return rank;
  }

  void readEvent(const JsonValue& event, size_t index) {
    const Where where{"traceEvents", index};
    if (!event.isObject()) fail(where.field(""), "expected an event object, got " + describe(event));
    const std::string& ph = string(require(event, "ph", where), where, "ph");
    if (ph == "X" || ph == "i") {
      readOpEvent(event, where, index, ph == "i");
    } else if (ph == "M") {
      readMetadataEvent(event, where, index);
    } else if (ph == "C") {
      // Memory counters are derived from the Alloc/Free instants; only the rank is checked.
      rankOf(event, where, index);
    } else {
      fail(where.field("ph"), "\"" + ph + "\" is not supported; allowed: \"X\", \"i\", \"C\", \"M\"");
    }
  }

  void readMetadataEvent(const JsonValue& event, const Where& where, size_t index) {
    rankOf(event, where, index);
    const std::string& name = string(require(event, "name", where), where, "name");
    if (name != "thread_name") return;  // process_name and sort indices carry nothing the pid does not
    const auto tid = integer(require(event, "tid", where), where, "tid", 0, kLaneCount - 1);
    const JsonValue& args = require(event, "args", where);
    object(args, where, "args");
    const Where in_args{where.container, where.index, "args"};
    const std::string& lane = string(require(args, "name", in_args), in_args, "name");
    for (int i = 0; i < kLaneCount; ++i) {
      if (lane != laneNameAt(i)) continue;
      if (i != tid) {
        fail(where.field("tid"), "thread \"" + lane + "\" must have tid " + std::to_string(i) + " (its lane id), got " + std::to_string(tid));
      }
      return;
    }
    fail(where.field("args.name"), "unknown lane \"" + lane + "\"; allowed: " + allowedNames(laneNameAt, kLaneCount));
  }

  void readOpEvent(const JsonValue& event, const Where& where, size_t index, bool instant_phase) {
    Event e;
    e.rank = static_cast<int16_t>(rankOf(event, where, index));

    const std::string& cat = string(require(event, "cat", where), where, "cat");
    int kind = 0;
    while (kind < kEventKindCount && cat != kindNameAt(kind)) ++kind;
    if (kind == kEventKindCount) fail(where.field("cat"), "unknown event kind \"" + cat + "\"; allowed: " + allowedNames(kindNameAt, kEventKindCount));
    e.kind = static_cast<EventKind>(kind);
    if (isInstant(e.kind) != instant_phase) {
      fail(where.field("ph"), "\"" + cat + "\" events must have ph \"" + (isInstant(e.kind) ? "i" : "X") + "\"");
    }

    e.lane = static_cast<Lane>(integer(require(event, "tid", where), where, "tid", 0, kLaneCount - 1));
    e.begin_ns = micros(require(event, "ts", where), where, "ts");
    e.end_ns = instant_phase ? e.begin_ns : e.begin_ns + micros(require(event, "dur", where), where, "dur");

    const JsonValue* args = event.find("args");
    if (!args) {
      m_events[static_cast<size_t>(e.rank)].push_back(e);
      return;
    }
    const Where in_args{where.container, where.index, "args"};
    for (const JsonMember& m : object(*args, where, "args")) {
      const std::string& k = m.key;
      const auto small = [&](int64_t hi) { return integer(m.value, in_args, k, -1, hi); };
      if (k == "block") e.block = static_cast<int16_t>(small(kInt16Max));
      else if (k == "unit") e.unit = static_cast<int16_t>(small(kInt16Max));
      else if (k == "bucket") e.bucket = static_cast<int16_t>(small(kInt16Max));
      else if (k == "group") e.group = static_cast<int16_t>(small(kInt16Max));
      else if (k == "param") e.param = static_cast<int16_t>(small(kInt16Max));
      else if (k == "step") e.step = static_cast<int32_t>(small(kInt32Max));
      else if (k == "seq") e.seq = static_cast<int32_t>(small(kInt32Max));
      else if (k == "op") e.op = static_cast<int32_t>(small(kInt32Max));
      else if (k == "dep") e.dep = static_cast<int32_t>(small(kInt32Max));
      else if (k == "bytes") e.bytes = integer(m.value, in_args, k, kInt64Min, kInt64Max);
      else if (k == "value") e.value = integer(m.value, in_args, k, kInt64Min, kInt64Max);
      else if (k == "flags") e.flags = static_cast<uint8_t>(integer(m.value, in_args, k, 0, 255));
      else if (k == "category") {
        const std::string& name = string(m.value, in_args, k);
        int c = 0;
        while (c < kCategoryCount && name != categoryNameAt(c)) ++c;
        if (c == kCategoryCount) fail(where.field("args.category"), "unknown memory category \"" + name + "\"; allowed: " + allowedNames(categoryNameAt, kCategoryCount));
        e.category = static_cast<Category>(c);
      }
      // Anything else (GB/s) is derived or foreign: ignored.
    }
    m_events[static_cast<size_t>(e.rank)].push_back(e);
  }

  std::vector<std::string> strings(const JsonValue& v, const Where& where, std::string_view name) const {
    std::vector<std::string> out;
    const auto& items = array(v, where, name);
    out.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].isString()) {
        std::string field(name);
        field += '[';
        field += std::to_string(i);
        field += ']';
        fail(where.field(field), "expected a string, got " + describe(items[i]));
      }
      out.push_back(items[i].asString());
    }
    return out;
  }

  void readMetadata(const JsonValue& metadata) {
    const Where where{"metadata"};
    if (!metadata.isObject()) fail("metadata", "expected an object, got " + describe(metadata));
    m_hasMetadata = true;
    if (const JsonValue* v = metadata.find("format"); v && (!v->isString() || v->asString() != "shardscope-trace")) {
      fail("metadata.format", "expected \"shardscope-trace\", got " + describe(*v));
    }
    if (const JsonValue* v = metadata.find("version")) {
      if (integer(*v, where, "version", 1, kInt32Max) != 1) fail("metadata.version", "version " + v->dump() + " is newer than this build reads (1)");
    }
    if (const JsonValue* v = metadata.find("strategy")) m_trace.strategy = string(*v, where, "strategy");
    if (const JsonValue* v = metadata.find("ranks")) m_metadataRanks = integer(*v, where, "ranks", 0, kMaxRank + 1);
    if (const JsonValue* v = metadata.find("params")) m_trace.params = integer(*v, where, "params", 0, kInt64Max);
    if (const JsonValue* v = metadata.find("config")) {
      object(*v, where, "config");
      // A config this build cannot read (an older trace's flags) leaves the
      // trace without one: its views open, its backend shows as unknown.
      try {
        m_trace.config = configFromJson(nlohmann::ordered_json::parse(v->dump()));
      } catch (const std::exception&) {
        m_trace.config.reset();
      }
    }
    if (const JsonValue* v = metadata.find("param_names")) m_trace.param_names = strings(*v, where, "param_names");
    if (const JsonValue* v = metadata.find("block_names")) m_trace.block_names = strings(*v, where, "block_names");
    if (const JsonValue* v = metadata.find("buckets")) {
      const auto& items = array(*v, where, "buckets");
      for (size_t i = 0; i < items.size(); ++i) {
        const Where at{"metadata.buckets", i};
        if (!items[i].isObject()) fail(at.field(""), "expected an object, got " + describe(items[i]));
        BucketInfo bucket;
        bucket.index = static_cast<int>(integer(require(items[i], "index", at), at, "index", 0, kInt32Max));
        bucket.bytes = integer(require(items[i], "bytes", at), at, "bytes", 0, kInt64Max);
        if (const JsonValue* params = items[i].find("params")) bucket.params = strings(*params, at, "params");
        m_trace.buckets.push_back(std::move(bucket));
      }
    }
    if (const JsonValue* v = metadata.find("units")) {
      const auto& items = array(*v, where, "units");
      for (size_t i = 0; i < items.size(); ++i) {
        const Where at{"metadata.units", i};
        if (!items[i].isObject()) fail(at.field(""), "expected an object, got " + describe(items[i]));
        UnitInfo unit;
        unit.index = static_cast<int>(integer(require(items[i], "index", at), at, "index", 0, kInt32Max));
        if (const JsonValue* blocks = items[i].find("blocks")) {
          const auto& list = array(*blocks, at, "blocks");
          for (size_t b = 0; b < list.size(); ++b) {
            if (!list[b].isInteger() || list[b].asInt64() < 0 || list[b].asInt64() > kInt16Max) {
              fail(at.field("blocks"), "element " + std::to_string(b) + ": expected a block index in [0, 32767], got " + describe(list[b]));
            }
            unit.blocks.push_back(static_cast<int>(list[b].asInt64()));
          }
        }
        if (const JsonValue* params = items[i].find("params")) unit.params = integer(*params, at, "params", 0, kInt64Max);
        m_trace.units.push_back(std::move(unit));
      }
    }
  }

  RunTrace finish() {
    int ranks = static_cast<int>(m_events.size());
    if (m_hasMetadata && m_metadataRanks >= 0) {
      if (m_events.size() > static_cast<size_t>(m_metadataRanks)) {
        fail(Where{"traceEvents", m_maxRankEvent}.field("pid"),
             "rank " + std::to_string(m_events.size() - 1) + " is outside metadata.ranks = " + std::to_string(m_metadataRanks) +
                 " (allowed pid 0.." + std::to_string(m_metadataRanks - 1) + ")");
      }
      ranks = static_cast<int>(m_metadataRanks);
    }
    m_events.resize(static_cast<size_t>(ranks));
    m_trace.ranks = ranks;
    // Traces do not list their groups: the config's mesh gives them (links
    // unknown); without a config only the world group is known.
    m_trace.groups = m_trace.config && m_trace.config->ranks == ranks ? meshGroups(*m_trace.config)
                                                                       : meshGroups(ranks, 0);
    m_trace.events = std::move(m_events);
    return std::move(m_trace);
  }

  std::string_view m_json;
  const std::string& m_source;
  RunTrace m_trace;
  std::vector<std::vector<Event>> m_events;
  size_t m_maxRankEvent = 0;  // event that introduced the highest pid (for the error)
  bool m_hasMetadata = false;
  int64_t m_metadataRanks = -1;
};

std::string makeMessage(const std::string& source, const std::string& field, const std::string& what) {
  std::string out = "trace file '" + source + "'";
  if (!field.empty()) out += ", " + field;
  return out + ": " + what;
}

}  // namespace

TraceFormatError::TraceFormatError(const std::string& source, const std::string& field, const std::string& what)
    : ConfigError(makeMessage(source, field, what)), m_source(source), m_field(field) {}

RunTrace readChromeTrace(std::string_view json, const std::string& source) {
  return TraceParser(json, source).parse();
}

RunTrace readChromeTraceFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw TraceFormatError(path, "", "is a directory, not a trace file");
  std::ifstream file(path, std::ios::binary);
  if (!file) throw TraceFormatError(path, "", std::string("cannot open: ") + std::strerror(errno));
  std::string text;
  if (const auto size = std::filesystem::file_size(path, ec); !ec) text.reserve(static_cast<size_t>(size));
  // Chunked reads also work for pipes and files that change size while read.
  std::string chunk(size_t{1} << 20, '\0');
  while (file.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || file.gcount() > 0) {
    text.append(chunk.data(), static_cast<size_t>(file.gcount()));
  }
  if (file.bad()) throw TraceFormatError(path, "", "read failed after " + std::to_string(text.size()) + " bytes");
  if (text.empty()) throw TraceFormatError(path, "", "the file is empty");
  return readChromeTrace(text, path);
}

}  // namespace shardscope
