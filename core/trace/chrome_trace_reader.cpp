#include "trace/chrome_trace_reader.h"

#include <cmath>
#include <limits>
#include <unordered_set>

#include "common/checked_math.h"
#include "common/input_file.h"
#include "common/json_tree.h"
#include "config/config_json.h"

namespace shardscope {

namespace {

constexpr size_t kNoIndex = static_cast<size_t>(-1);
constexpr int64_t kMaxRank = std::numeric_limits<int16_t>::max();
constexpr int64_t kInt16Max = std::numeric_limits<int16_t>::max();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
// |ts| and dur in us: kMaxTimeNs, so every end and every difference of two times fits int64 ns.
constexpr double kMaxMicros = static_cast<double>(kMaxTimeNs / 1000);

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
    Sax sax(*this);
    try {
      Json::sax_parse(m_json.begin(), m_json.end(), &sax, nlohmann::json::input_format_t::json, true, false);
    } catch (const JsonSyntaxError& e) {
      fail("", std::string("not valid JSON (truncated or corrupt?): ") + e.what());
    }
    if (!m_sawEvents) fail("traceEvents", "missing; expected the object form {\"traceEvents\": [...], ...}");
    return finish();
  }

 private:
  // nlohmann's SAX events for the whole file. Top-level members are routed
  // by key: each element of traceEvents is built (as a small tree) and read
  // on its own, metadata and displayTimeUnit are built whole, others skipped.
  class Sax {
   public:
    explicit Sax(TraceParser& p) : m_p(p) {}

    bool null() { return scalar(nullptr); }
    bool boolean(bool v) { return scalar(v); }
    bool number_integer(Json::number_integer_t v) { return scalar(v); }
    bool number_unsigned(Json::number_unsigned_t v) { return scalar(v); }
    bool number_float(Json::number_float_t v, const std::string&) { return scalar(v); }
    bool string(std::string& v) { return scalar(std::move(v)); }
    bool binary(Json::binary_t&) { return true; }  // JSON text has none

    bool start_object(std::size_t) {
      if (m_tree.active()) {
        if (!m_tree.startObject()) tooDeep();
        return true;
      }
      if (!m_skipped.empty()) {
        skipContainer(true);
        return true;
      }
      switch (m_level) {
        case Level::Top: m_level = Level::Root; return true;
        case Level::Root:
          if (m_key == Key::Events) m_p.fail("traceEvents", "expected an array of events, got an object");
          beginMember();
          if (m_tree.active()) m_tree.startObject();
          else skipContainer(true);
          return true;
        case Level::Events: beginEvent(); m_tree.startObject(); return true;
        case Level::Done: return true;
      }
      return true;
    }

    bool start_array(std::size_t) {
      if (m_tree.active()) {
        if (!m_tree.startArray()) tooDeep();
        return true;
      }
      if (!m_skipped.empty()) {
        skipContainer(false);
        return true;
      }
      if (m_level == Level::Top) throw JsonSyntaxError(1, 1, "expected an object");
      if (m_level == Level::Root && m_key == Key::Events) {
        m_level = Level::Events;
        return true;
      }
      if (m_level == Level::Events) {
        beginEvent();
        m_tree.startArray();
        return true;
      }
      beginMember();
      if (m_tree.active()) m_tree.startArray();
      else skipContainer(false);
      return true;
    }

    bool end_object() { return end(); }
    bool end_array() {
      if (!m_tree.active() && m_skipped.empty() && m_level == Level::Events) {
        m_level = Level::Root;
        return true;
      }
      return end();
    }

    bool key(std::string& name) {
      // One rule for every reader: a key may appear once in an object.
      if (m_tree.active()) {
        if (!m_tree.key(name)) repeated(m_tree.path());
        return true;
      }
      if (!m_skipped.empty()) {
        Skipped& top = m_skipped.back();
        if (!top.keys.insert(name).second) {
          top.key = name;
          repeated(skippedPath());
        }
        top.key = std::move(name);
        return true;
      }
      if (!m_topKeys.insert(name).second && name != "traceEvents" && name != "metadata")
        m_p.fail(name, "appears twice; a key may appear once in an object");
      if (name == "traceEvents") {
        if (m_p.m_sawEvents) m_p.fail("traceEvents", "appears twice; a trace has one traceEvents array");
        m_p.m_sawEvents = true;
        m_key = Key::Events;
      } else if (name == "metadata") {
        if (m_p.m_hasMetadata) m_p.fail("metadata", "appears twice");
        m_key = Key::Metadata;
      } else if (name == "displayTimeUnit") {
        m_key = Key::TimeUnit;
      } else {
        m_key = Key::Other;  // other tools add keys (otherData, stackFrames): ignore them
        m_otherKey = name;
      }
      return true;
    }

    bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
      throw jsonSyntaxError(m_p.m_json, position, e);
    }

   private:
    enum class Level { Top, Root, Events, Done };
    enum class Key { Events, Metadata, TimeUnit, Other };
    // An open container of a member that is skipped, not built: only its keys are kept, to refuse repeats.
    struct Skipped {
      bool object = false;
      size_t elements = 0;  // arrays: values begun so far
      std::string key;      // objects: the member being read
      std::unordered_set<std::string> keys;
    };

    [[noreturn]] void repeated(const std::string& path) const {
      // Where the value being built sits: the event, or the top-level member.
      std::string field = m_level == Level::Events ? Where{"traceEvents", m_index}.field("") : std::string(keyName());
      if (!path.empty() && path[0] != '[') field += '.';
      m_p.fail(field + path, "appears twice; a key may appear once in an object");
    }
    std::string skippedPath() const {
      std::string out = m_otherKey;
      for (const Skipped& s : m_skipped) {
        if (s.object) {
          out += '.';
          out += s.key;
        } else {
          out += '[';
          out += std::to_string(s.elements - 1);
          out += ']';
        }
      }
      return out;
    }
    // A value begins inside a skipped member.
    void skippedValue() {
      if (!m_skipped.empty() && !m_skipped.back().object) ++m_skipped.back().elements;
    }
    void skipContainer(bool object) {
      skippedValue();
      Skipped s;
      s.object = object;
      m_skipped.push_back(std::move(s));
    }

    [[noreturn]] void tooDeep() const {
      const std::string where = m_level == Level::Events ? Where{"traceEvents", m_index}.field("") : std::string(keyName());
      m_p.fail(where, "nesting deeper than " + std::to_string(JsonTreeBuilder::kMaxDepth) + " levels");
    }
    std::string_view keyName() const {
      switch (m_key) {
        case Key::Events: return "traceEvents";
        case Key::Metadata: return "metadata";
        case Key::TimeUnit: return "displayTimeUnit";
        case Key::Other: return "";
      }
      return "";
    }

    void beginEvent() { m_tree.begin(m_value); }
    // A top-level member's value starts: build it, or skip it.
    void beginMember() {
      if (m_key == Key::Metadata || m_key == Key::TimeUnit) m_tree.begin(m_value);
    }

    bool scalar(Json v) {
      if (m_tree.active()) {
        if (m_tree.value(std::move(v))) complete();
        return true;
      }
      if (!m_skipped.empty()) {
        skippedValue();
        return true;
      }
      switch (m_level) {
        case Level::Top: throw JsonSyntaxError(1, 1, "expected an object, got " + describeJson(v));
        case Level::Root:
          if (m_key == Key::Events) m_p.fail("traceEvents", "expected an array of events, got " + describeJson(v));
          if (m_key == Key::Metadata || m_key == Key::TimeUnit) {
            m_value = std::move(v);
            complete();
          }
          return true;
        case Level::Events:
          m_value = std::move(v);
          complete();
          return true;
        case Level::Done: return true;
      }
      return true;
    }

    bool end() {
      if (m_tree.active()) {
        if (m_tree.end()) complete();
        return true;
      }
      if (!m_skipped.empty()) {
        m_skipped.pop_back();
        return true;
      }
      if (m_level == Level::Root) m_level = Level::Done;  // the top-level object closed
      return true;
    }

    // A whole value was built into m_value.
    void complete() {
      if (m_level == Level::Events) {
        m_p.readEvent(m_value, m_index++);
      } else if (m_key == Key::Metadata) {
        m_p.readMetadata(m_value);
      } else if (m_key == Key::TimeUnit) {
        if (!m_value.is_string() || (m_value.get_ref<const std::string&>() != "ns" && m_value.get_ref<const std::string&>() != "ms")) {
          m_p.fail("displayTimeUnit", "expected \"ns\" or \"ms\", got " + describeJson(m_value));
        }
      }
    }

    TraceParser& m_p;
    Level m_level = Level::Top;
    Key m_key = Key::Other;
    std::vector<Skipped> m_skipped;  // open containers of a skipped member
    std::string m_otherKey;          // the skipped member's key
    std::unordered_set<std::string> m_topKeys;
    size_t m_index = 0;
    JsonTreeBuilder m_tree;
    Json m_value;  // the event (or member) being built; reused
  };

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw TraceFormatError(m_source, field, what);
  }

  static const Json* find(const Json& object, std::string_view name) {
    const auto it = object.find(name);
    return it == object.end() ? nullptr : &*it;
  }

  const Json& require(const Json& object, std::string_view name, const Where& where) const {
    const Json* v = find(object, name);
    if (!v) fail(where.field(name), "missing (required)");
    return *v;
  }

  int64_t integer(const Json& v, const Where& where, std::string_view name, int64_t lo, int64_t hi) const {
    int64_t n = 0;
    if (!jsonInteger(v, n) || n < lo || n > hi) {
      fail(where.field(name), "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + describeJson(v));
    }
    return n;
  }

  const std::string& string(const Json& v, const Where& where, std::string_view name) const {
    if (!v.is_string()) fail(where.field(name), "expected a string, got " + describeJson(v));
    return v.get_ref<const std::string&>();
  }

  // ts/dur in microseconds -> ns; the writer prints 3 decimals so rounding is exact.
  int64_t micros(const Json& v, const Where& where, std::string_view name) const {
    if (!v.is_number() || !(std::fabs(v.get<double>()) <= kMaxMicros)) {
      fail(where.field(name), "expected a time in microseconds (a number, |t| <= 1e15, about 31 years), got " + describeJson(v));
    }
    if (int64_t n = 0; jsonInteger(v, n)) return n * 1000;
    return std::llround(v.get<double>() * 1000.0);
  }

  const Json& object(const Json& v, const Where& where, std::string_view name) const {
    if (!v.is_object()) fail(where.field(name), "expected an object, got " + describeJson(v));
    return v;
  }

  const Json& array(const Json& v, const Where& where, std::string_view name) const {
    if (!v.is_array()) fail(where.field(name), "expected an array, got " + describeJson(v));
    return v;
  }

  int rankOf(const Json& event, const Where& where, size_t index) {
    const auto rank = static_cast<int>(integer(require(event, "pid", where), where, "pid", 0, kMaxRank));
    if (static_cast<size_t>(rank) >= m_events.size()) {
      m_events.resize(static_cast<size_t>(rank) + 1);
      m_maxRankEvent = index;
    }
    return rank;
  }

  void readEvent(const Json& event, size_t index) {
    const Where where{"traceEvents", index};
    if (!event.is_object()) fail(where.field(""), "expected an event object, got " + describeJson(event));
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

  void readMetadataEvent(const Json& event, const Where& where, size_t index) {
    rankOf(event, where, index);
    const std::string& name = string(require(event, "name", where), where, "name");
    if (name != "thread_name") return;  // process_name and sort indices carry nothing the pid does not
    const auto tid = integer(require(event, "tid", where), where, "tid", 0, kLaneCount - 1);
    const Json& args = require(event, "args", where);
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

  void readOpEvent(const Json& event, const Where& where, size_t index, bool instant_phase) {
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
    e.end_ns = e.begin_ns;
    if (!instant_phase) {
      const Json& dur = require(event, "dur", where);
      const int64_t dur_ns = micros(dur, where, "dur");
      // An op ends after it begins: a negative span would be drawn as a sliver, silently.
      if (dur_ns < 0) fail(where.field("dur"), "expected a duration >= 0 microseconds (\"" + cat + "\" ends before it begins), got " + describeJson(dur));
      if (!checkedAdd(e.begin_ns, dur_ns, e.end_ns)) fail(where.field("dur"), "ts + dur does not fit the clock, got " + describeJson(dur));
    }

    const Json* args = find(event, "args");
    if (!args) {
      m_events[static_cast<size_t>(e.rank)].push_back(e);
      return;
    }
    const Where in_args{where.container, where.index, "args"};
    for (const auto& [k, value] : object(*args, where, "args").get_ref<const Json::object_t&>()) {
      // Bindings by init-capture: clang 14 (the fuzz build) cannot capture them.
      const auto small = [&, &k = k, &value = value](int64_t hi) { return integer(value, in_args, k, -1, hi); };
      if (k == "block") e.block = static_cast<int16_t>(small(kInt16Max));
      else if (k == "unit") e.unit = static_cast<int16_t>(small(kInt16Max));
      else if (k == "bucket") e.bucket = static_cast<int16_t>(small(kInt16Max));
      else if (k == "group") e.group = static_cast<int16_t>(small(kInt16Max));
      else if (k == "param" || k == "microbatch") e.param = static_cast<int16_t>(small(kInt16Max));
      else if (k == "step") e.step = static_cast<int32_t>(small(kInt32Max));
      else if (k == "seq") e.seq = static_cast<int32_t>(small(kInt32Max));
      else if (k == "op") e.op = static_cast<int32_t>(small(kInt32Max));
      else if (k == "dep") e.dep = static_cast<int32_t>(small(kInt32Max));
      else if (k == "bytes") e.bytes = integer(value, in_args, k, kInt64Min, kInt64Max);
      else if (k == "value") e.value = integer(value, in_args, k, kInt64Min, kInt64Max);
      else if (k == "flags") e.flags = static_cast<uint8_t>(integer(value, in_args, k, 0, 255));
      else if (k == "category") {
        const std::string& name = string(value, in_args, k);
        int c = 0;
        while (c < kCategoryCount && name != categoryNameAt(c)) ++c;
        if (c == kCategoryCount) fail(where.field("args.category"), "unknown memory category \"" + name + "\"; allowed: " + allowedNames(categoryNameAt, kCategoryCount));
        e.category = static_cast<Category>(c);
      }
      // Anything else (GB/s) is derived or foreign: ignored.
    }
    m_events[static_cast<size_t>(e.rank)].push_back(e);
  }

  std::vector<std::string> strings(const Json& v, const Where& where, std::string_view name) const {
    std::vector<std::string> out;
    const auto& items = array(v, where, name);
    out.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string()) {
        std::string field(name);
        field += '[';
        field += std::to_string(i);
        field += ']';
        fail(where.field(field), "expected a string, got " + describeJson(items[i]));
      }
      out.push_back(items[i].get<std::string>());
    }
    return out;
  }

  void readMetadata(const Json& metadata) {
    const Where where{"metadata"};
    if (!metadata.is_object()) fail("metadata", "expected an object, got " + describeJson(metadata));
    m_hasMetadata = true;
    if (const Json* v = find(metadata, "format"); v && (!v->is_string() || *v != "shardscope-trace")) {
      fail("metadata.format", "expected \"shardscope-trace\", got " + describeJson(*v));
    }
    if (const Json* v = find(metadata, "version")) {
      if (integer(*v, where, "version", 1, kInt32Max) != 1) fail("metadata.version", "version " + describeJson(*v) + " is newer than this build reads (1)");
    }
    if (const Json* v = find(metadata, "strategy")) m_trace.strategy = string(*v, where, "strategy");
    if (const Json* v = find(metadata, "ranks")) m_metadataRanks = integer(*v, where, "ranks", 0, kMaxRank + 1);
    if (const Json* v = find(metadata, "params")) m_trace.params = integer(*v, where, "params", 0, kInt64Max);
    if (const Json* v = find(metadata, "config")) {
      object(*v, where, "config");
      // A config this build cannot read (an older trace's flags) leaves the
      // trace without one: its views open, its backend shows as unknown.
      try {
        m_trace.config = configFromJson(*v);
      } catch (const std::exception&) {
        m_trace.config.reset();
      }
    }
    if (const Json* v = find(metadata, "param_names")) m_trace.param_names = strings(*v, where, "param_names");
    if (const Json* v = find(metadata, "block_names")) m_trace.block_names = strings(*v, where, "block_names");
    if (const Json* v = find(metadata, "losses")) {
      const auto& items = array(*v, where, "losses");
      for (size_t i = 0; i < items.size(); ++i) {
        if (!items[i].is_number() || !std::isfinite(items[i].get<double>()))
          fail("metadata.losses", "element " + std::to_string(i) + ": expected a finite number, got " + describeJson(items[i]));
        m_trace.losses.push_back(items[i].get<double>());
      }
    }
    if (const Json* v = find(metadata, "node_clocks")) {
      const auto& items = array(*v, where, "node_clocks");
      for (size_t i = 0; i < items.size(); ++i) {
        const Where at{"metadata.node_clocks", i};
        if (!items[i].is_object()) fail(at.field(""), "expected an object, got " + describeJson(items[i]));
        RunTrace::NodeClock n;
        n.node = static_cast<int>(integer(require(items[i], "node", at), at, "node", 1, kInt32Max));
        n.first_rank = static_cast<int>(integer(require(items[i], "first_rank", at), at, "first_rank", 0, kMaxRank));
        n.ranks = static_cast<int>(integer(require(items[i], "ranks", at), at, "ranks", 1, kMaxRank + 1));
        n.uncertainty_ns = integer(require(items[i], "uncertainty_ns", at), at, "uncertainty_ns", 0, kInt64Max);
        n.pings = static_cast<int>(integer(require(items[i], "pings", at), at, "pings", 1, kInt32Max));
        m_trace.node_clocks.push_back(n);
      }
    }
    if (const Json* v = find(metadata, "buckets")) {
      const auto& items = array(*v, where, "buckets");
      for (size_t i = 0; i < items.size(); ++i) {
        const Where at{"metadata.buckets", i};
        if (!items[i].is_object()) fail(at.field(""), "expected an object, got " + describeJson(items[i]));
        BucketInfo bucket;
        // Events name buckets and units by int16 ids: a larger index could never be used.
        bucket.index = static_cast<int>(integer(require(items[i], "index", at), at, "index", 0, kInt16Max));
        bucket.bytes = integer(require(items[i], "bytes", at), at, "bytes", 0, kInt64Max);
        if (const Json* params = find(items[i], "params")) bucket.params = strings(*params, at, "params");
        m_trace.buckets.push_back(std::move(bucket));
      }
    }
    if (const Json* v = find(metadata, "units")) {
      const auto& items = array(*v, where, "units");
      for (size_t i = 0; i < items.size(); ++i) {
        const Where at{"metadata.units", i};
        if (!items[i].is_object()) fail(at.field(""), "expected an object, got " + describeJson(items[i]));
        UnitInfo unit;
        unit.index = static_cast<int>(integer(require(items[i], "index", at), at, "index", 0, kInt16Max));
        if (const Json* blocks = find(items[i], "blocks")) {
          const auto& list = array(*blocks, at, "blocks");
          for (size_t b = 0; b < list.size(); ++b) {
            int64_t block = 0;
            if (!jsonInteger(list[b], block) || block < 0 || block > kInt16Max) {
              fail(at.field("blocks"), "element " + std::to_string(b) + ": expected a block index in [0, 32767], got " + describeJson(list[b]));
            }
            unit.blocks.push_back(static_cast<int>(block));
          }
        }
        if (const Json* params = find(items[i], "params")) unit.params = integer(*params, at, "params", 0, kInt64Max);
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
  bool m_sawEvents = false;
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
  std::string text;
  try {
    text = readInputFile(path, traceFileRule());
  } catch (const InputFileError& e) {
    throw TraceFormatError(path, "", e.reason());
  }
  if (text.empty()) throw TraceFormatError(path, "", "the file is empty");
  return readChromeTrace(text, path);
}

}  // namespace shardscope
