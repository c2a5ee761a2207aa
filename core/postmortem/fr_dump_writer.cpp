// A run's collectives as flight-recorder entries. record_id counts a rank's
// collectives in the order they began (all groups), as PyTorch counts them at
// enqueue; the ring keeps the newest `ring` of them, so a long run's dump
// starts at a record_id above 0, as a real ring that wrapped does.
#include "postmortem/fr_dump_writer.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

#include "common/errors.h"
#include "common/output_file.h"
#include "postmortem/pickle_writer.h"

namespace shardscope::postmortem {

namespace {

struct FrwKey {
  int group = 0;
  int seq = 0;
  bool operator<(const FrwKey& o) const { return std::tie(group, seq) < std::tie(o.group, o.seq); }
};

// What each rank entered as (group, seq): the fingerprint's fields.
struct FrwPrint {
  EventKind kind = EventKind::AllReduce;
  int64_t bytes = 0;
  int bucket = -1, unit = -1;
  bool operator==(const FrwPrint&) const = default;
};

bool frwIsEntry(EventKind k) { return isCollective(k) || k == EventKind::Broadcast; }
bool frwIsP2p(EventKind k) { return k == EventKind::Send || k == EventKind::Recv; }

// A pipeline transfer's row in the ladder: the same id on the sender's send
// and the receiver's recv (the message's number in its direction between the
// pair, the pair and the direction), unique within the pipeline group.
int64_t frwP2pId(const RunTrace& t, int rank, const Event& e) {
  const CommGroup* g = t.group(e.group);
  const int stages = g && !g->ranks.empty() ? static_cast<int>(g->ranks.size()) : 2;
  const auto stageOf = [g](int r) {
    if (!g) return 0;
    const auto it = std::find(g->ranks.begin(), g->ranks.end(), r);
    return it == g->ranks.end() ? 0 : static_cast<int>(it - g->ranks.begin());
  };
  // Forward (activations) go from stage s to s + 1 (interleaved: the last stage wraps to 0), gradients back.
  const int me = stageOf(rank);
  const bool gradient = (e.flags & kEventGradient) != 0;
  const bool sending = e.kind == EventKind::Send;
  const int from = sending ? me : (gradient ? (me + 1) % stages : (me + stages - 1) % stages);
  return (int64_t(e.seq) * stages + from) * 2 + (gradient ? 1 : 0);
}

// The engine source that issues a collective of this kind for this strategy (the frames' filename).
std::string frwSource(const RunTrace& t, const Event& e) {
  if (e.kind == EventKind::Broadcast) return "core/parallel/strategy_factory.cpp";
  const CommGroup* g = t.group(e.group);
  if (g && isTensorParallelGroup(*g)) return "core/parallel/tensor_parallel.cpp";
  if (t.strategy == "ddp") return "core/parallel/ddp_strategy.cpp";
  if (t.strategy == "zero1" || t.strategy == "zero2") return "core/parallel/zero_strategy.cpp";
  return "core/parallel/fsdp_strategy.cpp";
}

// Event::block is the model segment (0 the input, 1..L the blocks, L+1 the
// head): its name as the trace records it ("block3"), not the number (a
// 4-block model's last block read "block 4").
std::string frwSegment(const RunTrace& t, int segment) {
  if (segment >= 0 && static_cast<size_t>(segment) < t.block_names.size()) return t.block_names[static_cast<size_t>(segment)];
  return "segment " + std::to_string(segment);
}

std::string frwWhat(const RunTrace& t, const Event& e) {
  std::string s(eventKindName(e.kind));
  if (e.kind == EventKind::Broadcast) return s + " of the initial weights";
  if (e.bucket >= 0) s += " of bucket " + std::to_string(e.bucket);
  if (e.unit >= 0) s += " of unit " + std::to_string(e.unit);
  if (e.bucket < 0 && e.unit < 0 && e.block >= 0) s += " of " + frwSegment(t, e.block);
  return s;
}

class FrwBuilder {
 public:
  explicit FrwBuilder(ValueTree& t) : m_t(t) {}
  Value str(std::string_view s) { return m_t.addText(ValueKind::Str, s); }
  static Value num(int64_t i) {
    Value v;
    v.kind = ValueKind::Int;
    v.i = i;
    return v;
  }
  static Value real(double f) {
    Value v;
    v.kind = ValueKind::Float;
    v.f = f;
    return v;
  }
  static Value flag(bool b) {
    Value v;
    v.kind = ValueKind::Bool;
    v.i = b ? 1 : 0;
    return v;
  }
  static Value none() { return {}; }
  Value dict() { return m_t.addContainer(ValueKind::Dict); }
  Value list() { return m_t.addContainer(ValueKind::List); }
  Value tuple() { return m_t.addContainer(ValueKind::Tuple); }
  void set(const Value& d, std::string_view key, const Value& v) {
    const Value k = str(key);
    auto& items = m_t.container(d).items;
    items.push_back(k);
    items.push_back(v);
  }
  void add(const Value& seq, const Value& v) { m_t.container(seq).items.push_back(v); }
  Value sizes(int64_t n) {  // [[n]]: one 1-D tensor
    Value outer = list(), inner = list();
    add(inner, num(n));
    add(outer, inner);
    return outer;
  }
  Value names(std::string_view dtype) {
    Value l = list();
    add(l, str(dtype));
    return l;
  }

 private:
  ValueTree& m_t;
};

struct FrwRankEvents {
  std::vector<Event> collectives;  // by begin time (pipeline sends and receives too)
  std::vector<Event> compute;      // forward/backward/loss/optimizer spans by begin
};

// The fields every entry ends with: its state and times, and its two frames
// (innermost first: what the engine issued, then the step).
void frwFinish(FrwBuilder& b, const Value& x, const Event& e, bool done, int64_t epoch, int64_t timeout_ms, bool p2p,
               int rank, const std::string& thread, const std::string& what, const std::string& source) {
  b.set(x, "state", b.str(done ? "completed" : "started"));
  b.set(x, "time_discovered_started_ns", FrwBuilder::num(epoch + e.begin_ns));
  b.set(x, "time_discovered_completed_ns", done ? FrwBuilder::num(epoch + e.end_ns) : FrwBuilder::none());
  b.set(x, "retired", FrwBuilder::flag(done));
  b.set(x, "timeout_ms", FrwBuilder::num(timeout_ms));
  b.set(x, "is_p2p", FrwBuilder::flag(p2p));
  b.set(x, "thread_id", b.str(std::to_string(rank)));
  b.set(x, "thread_name", b.str("rank " + std::to_string(rank) + " " + thread));
  b.set(x, "duration_ms", done ? FrwBuilder::real(static_cast<double>(e.end_ns - e.begin_ns) / 1e6) : FrwBuilder::none());
  const Value frames = b.list();
  const Value f0 = b.dict();
  b.set(f0, "name", b.str(what));
  b.set(f0, "filename", b.str(source));
  b.set(f0, "line", FrwBuilder::num(0));
  b.add(frames, f0);
  const Value f1 = b.dict();
  b.set(f1, "name", b.str(e.step >= 0 ? "train step " + std::to_string(e.step) : std::string("setup")));
  b.set(f1, "filename", b.str("core/engine/run.cpp"));
  b.set(f1, "line", FrwBuilder::num(0));
  b.add(frames, f1);
  b.set(x, "frames", frames);
}

// One pipeline send or recv as PyTorch records a P2P op: is_p2p, its own
// p2p_seq_id (here the transfer's id, the same on both sides), one bf16 tensor.
Value p2pEntry(FrwBuilder& b, const RunTrace& trace, int rank, const Event& e, size_t record, int64_t p2p_id, bool done,
               int64_t epoch, int64_t timeout_ms) {
  const CommGroup* g = trace.group(e.group);
  const bool sending = e.kind == EventKind::Send;
  const Value x = b.dict();
  b.set(x, "record_id", FrwBuilder::num(static_cast<int64_t>(record)));
  b.set(x, "pg_id", FrwBuilder::num(e.group));
  const Value pg = b.tuple();
  b.add(pg, b.str(std::to_string(e.group)));
  b.add(pg, b.str(g ? g->name : std::to_string(e.group)));
  b.set(x, "process_group", pg);
  b.set(x, "collective_seq_id", FrwBuilder::num(0));
  b.set(x, "p2p_seq_id", FrwBuilder::num(p2p_id));
  b.set(x, "op_id", FrwBuilder::num(p2p_id));
  b.set(x, "profiling_name", b.str(sending ? "nccl:send" : "nccl:recv"));
  b.set(x, "time_created_ns", FrwBuilder::num(epoch + e.begin_ns));
  const int64_t elements = e.bytes / 2;
  b.set(x, "input_sizes", sending ? b.sizes(elements) : b.list());
  b.set(x, "input_dtypes", sending ? b.names("BFloat16") : b.list());
  b.set(x, "output_sizes", sending ? b.list() : b.sizes(elements));
  b.set(x, "output_dtypes", sending ? b.list() : b.names("BFloat16"));
  const std::string what = std::string(sending ? "send of" : "recv of") + " microbatch " + std::to_string(microbatchOf(e)) +
                           ((e.flags & kEventGradient) ? "'s gradient" : "'s activations");
  frwFinish(b, x, e, done, epoch, timeout_ms, true, rank, "compute", what, "core/parallel/pipeline_strategy.cpp");
  return x;
}

}  // namespace

std::vector<ValueTree> flightRecorderTrees(const RunTrace& trace, const FrWriteOptions& options) {
  const int P = trace.ranks;
  std::vector<FrwRankEvents> ranks(static_cast<size_t>(std::max(P, 0)));
  std::map<FrwKey, std::map<int, FrwPrint>> entered;  // (group, seq) -> rank -> fingerprint
  int64_t run_end = 0;
  for (int r = 0; r < P && static_cast<size_t>(r) < trace.events.size(); ++r) {
    FrwRankEvents& re = ranks[static_cast<size_t>(r)];
    for (const Event& source : trace.sourceEvents(r)) {
      const Event e = trace.copies.eventFor(r, source);
      run_end = std::max(run_end, e.end_ns);
      if ((frwIsEntry(e.kind) || frwIsP2p(e.kind)) && e.seq >= 0) {
        re.collectives.push_back(e);
      } else if (e.kind == EventKind::Forward || e.kind == EventKind::Backward || e.kind == EventKind::Loss ||
                 e.kind == EventKind::OptimizerStep) {
        re.compute.push_back(e);
      }
    }
    auto byBegin = [](const Event& a, const Event& b) {
      return std::tie(a.begin_ns, a.group, a.seq) < std::tie(b.begin_ns, b.group, b.seq);
    };
    std::stable_sort(re.collectives.begin(), re.collectives.end(), byBegin);
    std::stable_sort(re.compute.begin(), re.compute.end(), byBegin);
  }
  // Who entered each collective some ring keeps (only those: a long run's
  // older collectives are never written, so they are not matched either).
  std::set<FrwKey> kept;
  for (const FrwRankEvents& re : ranks)
    for (size_t i = re.collectives.size() > options.ring ? re.collectives.size() - options.ring : 0; i < re.collectives.size(); ++i)
      kept.insert({re.collectives[i].group, re.collectives[i].seq});
  // Point to point: a transfer is completed when both its send and its recv are in the trace.
  std::map<std::pair<int, int64_t>, int> p2p_sides;  // (group, id) -> 1 send, 2 recv, 3 both
  for (int r = 0; r < P; ++r)
    for (const Event& e : ranks[static_cast<size_t>(r)].collectives) {
      if (frwIsP2p(e.kind)) {
        p2p_sides[{e.group, frwP2pId(trace, r, e)}] |= e.kind == EventKind::Send ? 1 : 2;
        continue;
      }
      if (kept.count({e.group, e.seq}) != 0) entered[{e.group, e.seq}][r] = {e.kind, e.bytes, e.bucket, e.unit};
    }
  // Completed: every member entered it, all with one fingerprint (what the run's check let through).
  auto completed = [&](const Event& e) {
    const auto it = entered.find({e.group, e.seq});
    if (it == entered.end()) return false;
    const CommGroup* g = trace.group(e.group);
    const size_t members = g && !g->ranks.empty() ? g->ranks.size() : static_cast<size_t>(P);
    if (it->second.size() < members) return false;
    const FrwPrint first = it->second.begin()->second;
    for (const auto& [r, fp] : it->second)
      if (!(fp == first)) return false;
    return true;
  };
  int64_t epoch = options.epoch_ns.value_or(0);
  if (!options.epoch_ns)
    epoch = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
                .count() - run_end;
  const bool fp32_reduce = trace.config && trace.config->reduceDType() == CommDType::Fp32;
  const bool fp32_param = trace.config && trace.config->paramDType() == CommDType::Fp32;
  const int64_t timeout_ms = trace.config ? trace.config->timeout_ms : 0;

  // Each group's member list as its pg_config writes it, made once (not once per rank).
  std::map<int, std::string> members_text;
  for (const CommGroup& g : trace.groups) {
    std::string members = "[";
    for (size_t i = 0; i < g.ranks.size(); ++i) members += (i ? ", " : "") + std::to_string(g.ranks[i]);
    members_text[g.id] = members + "]";
  }
  std::vector<ValueTree> out;
  for (int r = 0; r < P; ++r) {
    ValueTree t;
    FrwBuilder b(t);
    t.root = b.dict();
    b.set(t.root, "version", b.str("2.10"));
    b.set(t.root, "comm_lib_version", b.str(std::string("shardscope ") + SHARDSCOPE_VERSION));
    b.set(t.root, "rank", FrwBuilder::num(r));
    const Value cfg = b.dict();
    const Value status = b.dict();
    const FrwRankEvents& re = ranks[static_cast<size_t>(r)];
    struct Last { int64_t enqueued = -1, started = -1, completed = -1; };
    std::map<int, Last> last;
    for (const CommGroup& g : trace.groups) {
      if (!g.ranks.empty() && std::find(g.ranks.begin(), g.ranks.end(), r) == g.ranks.end()) continue;
      const Value info = b.dict();
      b.set(info, "name", b.str(std::to_string(g.id)));
      b.set(info, "desc", b.str(g.id == 0 ? "default_pg" : g.name));
      b.set(info, "ranks", b.str(members_text[g.id]));
      b.set(cfg, std::to_string(g.id), info);
      last[g.id];
    }
    const size_t n = re.collectives.size();
    const size_t first = n > options.ring ? n - options.ring : 0;
    const Value entries = b.list();
    for (size_t i = 0; i < n; ++i) {
      const Event& e = re.collectives[i];
      const bool p2p = frwIsP2p(e.kind);
      const int64_t p2p_id = p2p ? frwP2pId(trace, r, e) : 0;
      const bool done = p2p ? p2p_sides[{e.group, p2p_id}] == 3 : completed(e);
      if (p2p) {
        if (i >= first) b.add(entries, p2pEntry(b, trace, r, e, i, p2p_id, done, epoch, timeout_ms));
        continue;
      }
      Last& l = last[e.group];
      l.enqueued = std::max<int64_t>(l.enqueued, e.seq);
      l.started = std::max<int64_t>(l.started, e.seq);
      if (done) l.completed = std::max<int64_t>(l.completed, e.seq);
      if (i < first) continue;
      const CommGroup* g = trace.group(e.group);
      const int64_t group_size = g && !g->ranks.empty() ? static_cast<int64_t>(g->ranks.size()) : P;
      const Value x = b.dict();
      b.set(x, "record_id", FrwBuilder::num(static_cast<int64_t>(i)));
      b.set(x, "pg_id", FrwBuilder::num(e.group));
      const Value pg = b.tuple();
      b.add(pg, b.str(std::to_string(e.group)));
      b.add(pg, b.str(e.group == 0 ? "default_pg" : g ? g->name : std::to_string(e.group)));
      b.set(x, "process_group", pg);
      b.set(x, "collective_seq_id", FrwBuilder::num(e.seq));
      b.set(x, "p2p_seq_id", FrwBuilder::num(0));
      b.set(x, "op_id", FrwBuilder::num(e.seq));
      b.set(x, "profiling_name", b.str("nccl:" + std::string(eventKindName(e.kind))));
      b.set(x, "time_created_ns", FrwBuilder::num(epoch + e.begin_ns));
      // Sizes in elements of one tensor each side: the full buffer, a 1/P shard where the collective shards.
      const bool f32 = e.kind == EventKind::Broadcast || (e.kind == EventKind::AllGather ? fp32_param : fp32_reduce);
      const int64_t elem = f32 ? 4 : 2;
      const int64_t full = e.bytes / elem, shard = group_size > 0 ? full / group_size : full;
      const int64_t in = e.kind == EventKind::AllGather ? shard : full;
      const int64_t outn = e.kind == EventKind::ReduceScatter ? shard : full;
      const std::string_view dtype = f32 ? "Float" : "BFloat16";
      b.set(x, "input_sizes", b.sizes(in));
      b.set(x, "input_dtypes", b.names(dtype));
      b.set(x, "output_sizes", b.sizes(outn));
      b.set(x, "output_dtypes", b.names(dtype));
      // What the strategy issued, and the compute op it was issued during.
      std::string what = frwWhat(trace, e);
      const auto cit = std::upper_bound(re.compute.begin(), re.compute.end(), e.begin_ns,
                                        [](int64_t t0, const Event& c) { return t0 < c.begin_ns; });
      if (cit != re.compute.begin()) {
        const Event& c = *std::prev(cit);
        if (c.step == e.step || e.step < 0) {
          std::string during(eventKindName(c.kind));
          if (c.block >= 0) during += " of " + frwSegment(trace, c.block);
          what += ", during " + during;
        }
      }
      frwFinish(b, x, e, done, epoch, timeout_ms, false, r, std::string(laneName(e.lane)), what, frwSource(trace, e));
      b.add(entries, x);
    }
    for (const auto& [id, l] : last) {
      const Value s = b.dict();
      b.set(s, "last_enqueued_collective", FrwBuilder::num(l.enqueued));
      b.set(s, "last_started_collective", FrwBuilder::num(l.started));
      b.set(s, "last_completed_collective", FrwBuilder::num(l.completed));
      b.set(status, std::to_string(id), s);
    }
    b.set(t.root, "pg_config", cfg);
    b.set(t.root, "pg_status", status);
    b.set(t.root, "entries", entries);
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<FrRankDump> flightRecorderDumps(const RunTrace& trace, const FrWriteOptions& options) {
  std::vector<FrRankDump> out;
  const std::vector<ValueTree> trees = flightRecorderTrees(trace, options);
  for (size_t r = 0; r < trees.size(); ++r)
    out.push_back(parseFlightRecorderDump(trees[r], static_cast<int>(r), options.prefix + std::to_string(r)));
  return out;
}

void checkFlightRecorderDir(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec))
    throw ConfigError("--flight-recorder " + dir + ": a file is in its place; give a folder for the dumps");
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw ConfigError("--flight-recorder " + dir + ": cannot create the folder (" +
                      (ec ? ec.message() : std::string("not a folder")) + "); give a folder for the dumps");
}

std::vector<std::string> writeFlightRecorderDumps(const RunTrace& trace, const std::string& dir,
                                                  const FrWriteOptions& options) {
  checkFlightRecorderDir(dir);
  std::vector<std::string> written;
  const std::vector<ValueTree> trees = flightRecorderTrees(trace, options);
  for (size_t r = 0; r < trees.size(); ++r) {
    const std::string path = (std::filesystem::path(dir) / (options.prefix + std::to_string(r))).string();
    const std::string bytes = writePickle(trees[r]);
    writeOutputFile(path, [&](std::ostream& os) { os.write(bytes.data(), static_cast<std::streamsize>(bytes.size())); });
    written.push_back(path);
  }
  return written;
}

}  // namespace shardscope::postmortem
