// Reading flight-recorder dumps and matching their entries across ranks.
// Rules of the match (docs/postmortem.md): per process group, a rank's
// collectives are numbered by collective_seq_id; a rank whose ring was cut
// (its oldest record_id is not 0) says nothing about the numbers below its
// oldest entry; a rank whose last number is below N never joined N. A
// coalesced group (entries sharing one number, ending in nccl:coalesced)
// is one collective, compared member by member.
#include "postmortem/flight_recorder.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <set>
#include <unordered_map>

#include "common/input_file.h"
#include "postmortem/fr_p2p_match.h"
#include "postmortem/pickle_reader.h"

namespace shardscope::postmortem {

namespace {

[[noreturn]] void frFieldError(const std::string& path, const std::string& field, const std::string& rule, const Value* v) {
  const std::string found = v == nullptr ? "it is missing" : "found " + std::string(valueKindName(v->kind));
  throw PostmortemFormatError("flight-recorder dump " + path + ": " + field + " " + rule + ", " + found);
}

std::string frText(const ValueTree& t, const Value& v) {
  if (v.kind == ValueKind::Str || v.kind == ValueKind::Bytes) return std::string(t.text(v));
  if (v.kind == ValueKind::Int) return std::to_string(v.i);
  return {};
}

// Sizes and dtypes as text, cached by container (the memo may share one list among many entries).
std::string frCanonical(const ValueTree& t, const Value* v, std::unordered_map<uint64_t, std::string>& cache) {
  if (v == nullptr) return "";
  const bool container = t.container(*v) != nullptr;
  if (container)
    if (auto it = cache.find(v->index); it != cache.end()) return it->second;
  std::string s = t.toJson(*v, 8, 1024).dump(-1, ' ', false, Json::error_handler_t::replace);
  if (container) cache[v->index] = s;
  return s;
}

int64_t frOptInt(const ValueTree& t, const Value& d, const char* key) {
  const Value* v = t.get(d, key);
  if (v == nullptr) return 0;
  if (v->kind == ValueKind::Int) return v->i;
  int64_t whole = 0;
  if (v->kind == ValueKind::Float && wholeFloat(v->f, whole)) return whole;
  return 0;
}

// A group's ranks; many groups may share one list (the memo): each copy is charged.
std::vector<int> frParseRanks(const ValueTree& t, const Value& v, ExpansionBudget& budget) {
  std::vector<int> out;
  if (t.isSeq(v)) budget.charge(t.size(v) * sizeof(int));
  else if (v.kind == ValueKind::Str) budget.charge(t.text(v).size() * sizeof(int) / 2);  // at most one rank per 2 characters
  auto add = [&](int64_t r) {
    if (r >= 0 && r < (1 << 24) && out.size() < (1u << 20)) out.push_back(static_cast<int>(r));
  };
  if (t.isSeq(v)) {
    for (size_t i = 0; i < t.size(v); ++i)
      if (t.at(v, i).kind == ValueKind::Int) add(t.at(v, i).i);
  } else if (v.kind == ValueKind::Str) {  // "[0, 1, 2, 3]"
    int64_t cur = -1;
    for (char c : t.text(v)) {
      if (c >= '0' && c <= '9') {
        cur = (cur < 0 ? 0 : cur) * 10 + (c - '0');
        if (cur > (1 << 24)) cur = 1 << 24;
      } else if (cur >= 0) {
        add(cur);
        cur = -1;
      }
    }
    if (cur >= 0) add(cur);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool frUserFrame(const FrFrame& f) {
  return f.filename.find("torch/") == std::string::npos && f.filename.find("<frozen") == std::string::npos;
}

std::string frRankList(const std::vector<int>& ranks) {
  constexpr size_t kShown = 32;  // a 1024-rank group is summarized, not listed
  if (ranks.size() > kShown) {
    std::string s;
    for (size_t i = 0; i < kShown; ++i) s += std::to_string(ranks[i]) + ", ";
    return s + "... (" + std::to_string(ranks.size()) + " ranks)";
  }
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) s += i + 1 == ranks.size() ? " and " : ", ";
    s += std::to_string(ranks[i]);
  }
  return s;
}

}  // namespace

std::optional<FrFrame> frLastFrame(const FrEntry& e) {
  for (const FrFrame& f : e.frames)
    if (frUserFrame(f)) return f;
  if (!e.frames.empty()) return e.frames.front();
  return std::nullopt;
}

std::string_view frStateName(FrState s) {
  switch (s) {
    case FrState::Scheduled: return "scheduled";
    case FrState::Started: return "started";
    case FrState::Completed: return "completed";
  }
  return "scheduled";
}

std::string FrEntry::op() const {
  const size_t colon = profiling_name.find(':');
  return colon == std::string::npos ? profiling_name : profiling_name.substr(colon + 1);
}

bool isFlightRecorderDump(const ValueTree& t) {
  return t.root.kind == ValueKind::Dict && t.get(t.root, "version") != nullptr &&
         (t.get(t.root, "entries") != nullptr || t.get(t.root, "pg_config") != nullptr);
}

int frRankFromPath(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  for (const char* ext : {".json", ".pkl", ".pickle"})
    if (name.size() > std::strlen(ext) && name.compare(name.size() - std::strlen(ext), std::string::npos, ext) == 0)
      name.resize(name.size() - std::strlen(ext));
  size_t i = name.size();
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') --i;
  if (i == name.size() || name.size() - i > 6) return -1;
  return std::stoi(name.substr(i));
}

FrRankDump parseFlightRecorderDump(const ValueTree& t, int rank, const std::string& path) {
  FrRankDump d;
  d.path = path;
  if (t.root.kind != ValueKind::Dict)
    throw PostmortemFormatError("flight-recorder dump " + path + ": the document must be a dict with 'version' and 'entries', found " +
                                std::string(valueKindName(t.root.kind)));
  const Value* version = t.get(t.root, "version");
  if (version == nullptr || version->kind != ValueKind::Str) frFieldError(path, "version", "must be a string such as \"2.10\"", version);
  d.version = std::string(t.text(*version));
  if (d.version.rfind("2.", 0) != 0 && d.version != "2")
    throw PostmortemFormatError("flight-recorder dump " + path + ": version '" + d.version.substr(0, 16) +
                                "' is not read; ShardScope reads versions 2.x");
  if (rank < 0) {
    if (const Value* r = t.get(t.root, "rank"); r != nullptr && r->kind == ValueKind::Int && r->i >= 0 && r->i < (1 << 24))
      rank = static_cast<int>(r->i);
    else
      rank = frRankFromPath(path);
  }
  if (rank < 0)
    throw PostmortemFormatError("flight-recorder dump " + path +
                                ": its rank is unknown: the file name must end with the rank (as PyTorch writes them, "
                                "e.g. nccl_trace_rank_3) or the dump must have a 'rank' key");
  d.rank = rank;
  ExpansionBudget budget(t.source_bytes);
  if (const Value* cfg = t.get(t.root, "pg_config"); cfg != nullptr && cfg->kind == ValueKind::Dict) {
    const Container& c = *t.container(*cfg);
    for (size_t i = 0; i + 1 < c.items.size(); i += 2) {
      const std::string name = frText(t, c.items[i]);
      const Value& info = c.items[i + 1];
      if (info.kind != ValueKind::Dict) continue;
      budget.charge(name.size() + 64);  // the maps' nodes
      if (const Value* ranks = t.get(info, "ranks")) d.pg_ranks[name] = frParseRanks(t, *ranks, budget);
      if (const Value* desc = t.get(info, "desc")) {
        budget.charge(t.text(*desc).size());
        d.pg_desc[name] = frText(t, *desc);
      }
    }
  }
  const Value* entries = t.get(t.root, "entries");
  if (entries == nullptr) return d;  // PyTorch leaves the key out when the ring is empty
  if (entries->kind != ValueKind::List) frFieldError(path, "entries", "must be a list", entries);
  const size_t n = t.size(*entries);
  budget.charge(n * sizeof(FrEntry));
  d.entries.reserve(n);
  std::unordered_map<uint64_t, std::string> text_cache;
  for (size_t i = 0; i < n; ++i) {
    const Value v = t.at(*entries, i);
    const std::string at = "entries[" + std::to_string(i) + "]";
    if (v.kind != ValueKind::Dict) frFieldError(path, at, "must be a dict", &v);
    FrEntry e;
    auto requiredInt = [&](const char* key) {
      const Value* x = t.get(v, key);
      if (x == nullptr || x->kind != ValueKind::Int) frFieldError(path, at + "." + key, "must be an integer", x);
      return x->i;
    };
    e.record_id = requiredInt("record_id");
    e.collective_seq_id = requiredInt("collective_seq_id");
    e.p2p_seq_id = frOptInt(t, v, "p2p_seq_id");
    e.pg_id = frOptInt(t, v, "pg_id");
    const Value* pg = t.get(v, "process_group");
    if (pg != nullptr && t.isSeq(*pg) && t.size(*pg) >= 1) {
      e.pg_name = frText(t, t.at(*pg, 0));
      if (t.size(*pg) >= 2) e.pg_desc = frText(t, t.at(*pg, 1));
    } else if (t.get(v, "pg_id") != nullptr) {
      e.pg_name = std::to_string(e.pg_id);
    } else {
      frFieldError(path, at + ".process_group", "must be a (name, description) pair", pg);
    }
    const Value* pn = t.get(v, "profiling_name");
    if (pn == nullptr || pn->kind != ValueKind::Str) frFieldError(path, at + ".profiling_name", "must be a string", pn);
    budget.charge(e.pg_name.size() + e.pg_desc.size() + t.text(*pn).size());
    e.profiling_name = std::string(t.text(*pn));
    const Value* st = t.get(v, "state");
    if (st == nullptr || st->kind != ValueKind::Str) frFieldError(path, at + ".state", "must be scheduled, started or completed", st);
    const std::string_view s = t.text(*st);
    if (s == "scheduled") e.state = FrState::Scheduled;
    else if (s == "started") e.state = FrState::Started;
    else if (s == "completed") e.state = FrState::Completed;
    else
      throw PostmortemFormatError("flight-recorder dump " + path + ": " + at + ".state '" + std::string(s).substr(0, 32) +
                                  "' is none of scheduled, started, completed");
    if (const Value* p = t.get(v, "is_p2p"); p != nullptr && p->kind == ValueKind::Bool) e.is_p2p = p->i != 0;
    if (const Value* r = t.get(v, "retired"); r != nullptr && r->kind == ValueKind::Bool) e.retired = r->i != 0;
    e.time_created_ns = frOptInt(t, v, "time_created_ns");
    e.time_started_ns = frOptInt(t, v, "time_discovered_started_ns");
    e.sizes = frCanonical(t, t.get(v, "input_sizes"), text_cache) + " -> " + frCanonical(t, t.get(v, "output_sizes"), text_cache);
    e.dtypes = frCanonical(t, t.get(v, "input_dtypes"), text_cache) + " -> " + frCanonical(t, t.get(v, "output_dtypes"), text_cache);
    budget.charge(e.sizes.size() + e.dtypes.size());
    if (const Value* fr = t.get(v, "frames"); fr != nullptr && t.isSeq(*fr)) {
      for (size_t k = 0; k < t.size(*fr) && e.frames.size() < FrEntry::kMaxFrames; ++k) {
        const Value f = t.at(*fr, k);
        if (f.kind != ValueKind::Dict) continue;
        FrFrame ff;
        const Value* file = t.get(f, "filename");
        const Value* name = t.get(f, "name");
        budget.charge(sizeof(FrFrame) + (file ? t.text(*file).size() : 0) + (name ? t.text(*name).size() : 0));
        if (file) ff.filename = frText(t, *file);
        if (name) ff.name = frText(t, *name);
        ff.line = frOptInt(t, f, "line");
        e.frames.push_back(std::move(ff));
      }
    }
    d.entries.push_back(std::move(e));
  }
  return d;
}

std::vector<FrRankDump> readFlightRecorderDumps(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (std::filesystem::is_directory(in, ec)) {
      std::vector<std::string> here;
      for (const auto& entry : std::filesystem::directory_iterator(in, ec)) {
        const std::string name = entry.path().filename().string();
        if (!name.empty() && name[0] != '.' && entry.is_regular_file(ec)) here.push_back(entry.path().string());
      }
      if (ec) throw PostmortemFormatError("flight-recorder folder " + in + ": cannot list it (" + ec.message() + ")");
      if (here.empty()) throw PostmortemFormatError("flight-recorder folder " + in + ": has no files");
      std::sort(here.begin(), here.end());
      // A rank's dump written both ways (nccl_trace_rank_0 and nccl_trace_rank_0.json): the pickle is read.
      const std::set<std::string> names(here.begin(), here.end());
      here.erase(std::remove_if(here.begin(), here.end(),
                                [&](const std::string& f) {
                                  return f.size() > 5 && f.compare(f.size() - 5, 5, ".json") == 0 &&
                                         names.count(f.substr(0, f.size() - 5)) > 0;
                                }),
                 here.end());
      files.insert(files.end(), here.begin(), here.end());
    } else {
      files.push_back(in);
    }
  }
  constexpr size_t kMaxDumps = 65536;
  if (files.size() > kMaxDumps)
    throw PostmortemFormatError("flight recorder: " + std::to_string(files.size()) + " files, more than the 65536 ranks read at once");
  std::vector<FrRankDump> dumps;
  std::set<int> seen;
  for (const std::string& f : files) {
    const std::string bytes = readInputFile(f, traceFileRule());
    ValueTree tree;
    try {
      tree = readPostmortemDocument(bytes);
    } catch (const PostmortemFormatError& e) {
      throw PostmortemFormatError("flight-recorder dump " + f + ": " + e.what());
    }
    FrRankDump d = parseFlightRecorderDump(tree, -1, f);
    if (!seen.insert(d.rank).second)
      throw PostmortemFormatError("flight-recorder dump " + f + ": rank " + std::to_string(d.rank) +
                                  " has two dumps; give each rank's file once");
    dumps.push_back(std::move(d));
  }
  std::sort(dumps.begin(), dumps.end(), [](const FrRankDump& a, const FrRankDump& b) { return a.rank < b.rank; });
  return dumps;
}

namespace {

struct FrRankView {
  int rank = 0;
  const FrRankDump* dump = nullptr;
  std::map<int64_t, const FrEntry*> by_seq;  // this group's collectives (of a coalesced group, its last entry)
  std::map<int64_t, std::vector<const FrEntry*>> members;  // every entry of each number, oldest first
  bool cut = false;                         // the ring lost its oldest entries
  int64_t first_seq = 0, last_seq = 0;
};

// The value most ranks share; a tie goes to the value of the lowest rank.
template <typename Key>
std::vector<int> frMinority(const std::vector<std::pair<int, Key>>& values, Key& majority) {
  std::map<Key, std::vector<int>> groups;
  for (const auto& [rank, key] : values) groups[key].push_back(rank);
  size_t best = 0;
  int best_rank = 1 << 30;
  for (const auto& [key, ranks] : groups)
    if (ranks.size() > best || (ranks.size() == best && ranks.front() < best_rank)) {
      best = ranks.size();
      best_rank = ranks.front();
      majority = key;
    }
  std::vector<int> out;
  for (const auto& [rank, key] : values)
    if (!(key == majority)) out.push_back(rank);
  return out;
}

const FrEntry* frLastEntry(const FrRankDump& d) { return d.entries.empty() ? nullptr : &d.entries.back(); }

// One number's entries as compared across ranks. PyTorch's fr_trace treats
// entries of one group sharing a collective_seq_id and ending in
// "nccl:coalesced" as one coalesced collective (its members first, each with
// its own sizes, then the coalesced entry without any): "coalesced(all_reduce,
// all_reduce)"; a rank still inside the group has no coalesced end yet.
enum class FrGroupField { Op, Sizes, Dtypes };
std::string frGroupText(const std::vector<const FrEntry*>& g, FrGroupField f) {
  auto one = [f](const FrEntry* e) { return f == FrGroupField::Op ? e->op() : f == FrGroupField::Sizes ? e->sizes : e->dtypes; };
  if (g.size() == 1) return one(g.front());
  const bool ended = g.back()->op() == "coalesced";
  std::string s;
  for (size_t i = 0; i + (ended ? 1 : 0) < g.size(); ++i) s += (i ? ", " : "") + one(g[i]);
  if (f != FrGroupField::Op) return "(" + s + ")";
  return ended ? "coalesced(" + s + ")" : s + " (coalesced, not ended)";
}

std::optional<FrMismatch> frMatchGroup(const std::string& pg_name, const std::vector<FrRankView>& views) {
  std::set<int64_t> seqs;
  for (const FrRankView& v : views)
    for (const auto& [seq, e] : v.by_seq) seqs.insert(seq);
  for (const int64_t seq : seqs) {
    std::vector<std::pair<int, const FrEntry*>> present;
    std::map<int, const std::vector<const FrEntry*>*> group_of;  // rank -> its entries of this number
    std::vector<int> missing;
    for (const FrRankView& v : views) {
      auto it = v.by_seq.find(seq);
      if (it != v.by_seq.end()) {
        present.push_back({v.rank, it->second});
        group_of[v.rank] = &v.members.at(seq);
      } else if (seq > v.last_seq && !(v.cut && v.by_seq.empty())) {
        missing.push_back(v.rank);  // never got this far
      }  // else: below a cut ring's oldest entry, or a gap: nothing known
    }
    if (present.empty()) continue;
    FrMismatch m;
    m.pg_name = pg_name;
    m.seq = seq;
    std::vector<std::pair<int, std::string>> ops, sizes, dtypes;
    std::vector<std::pair<int, int>> states;
    for (const auto& [r, e] : present) {
      ops.push_back({r, frGroupText(*group_of[r], FrGroupField::Op)});
      sizes.push_back({r, frGroupText(*group_of[r], FrGroupField::Sizes)});
      dtypes.push_back({r, frGroupText(*group_of[r], FrGroupField::Dtypes)});
      states.push_back({r, static_cast<int>(e->state)});
    }
    std::string op_major, size_major, dtype_major;
    const std::vector<int> op_odd = frMinority(ops, op_major);
    const std::vector<int> size_odd = frMinority(sizes, size_major);
    const std::vector<int> dtype_odd = frMinority(dtypes, dtype_major);
    std::set<int> state_set;
    for (const auto& [r, s] : states) state_set.insert(s);
    m.op = op_major;
    const FrEntry* sample = present.front().second;
    for (const auto& [r, e] : present)
      if (frGroupText(*group_of[r], FrGroupField::Op) == op_major) {
        sample = e;
        break;
      }
    m.pg = pg_name;
    m.pg_desc = sample->pg_desc;
    auto textOf = [&](int r, FrGroupField f) { return frGroupText(*group_of[r], f); };
    if (!missing.empty()) {
      m.kind = "missing_ranks";
      m.ranks = missing;
    } else if (!op_odd.empty()) {
      m.kind = "op";
      m.ranks = op_odd;
      m.detail = "rank " + std::to_string(op_odd.front()) + " ran " + textOf(op_odd.front(), FrGroupField::Op) + " where the others ran " + op_major;
    } else if (!size_odd.empty()) {
      m.kind = "size";
      m.ranks = size_odd;
      m.detail = "rank " + std::to_string(size_odd.front()) + " has sizes " + textOf(size_odd.front(), FrGroupField::Sizes).substr(0, 120) +
                 ", the others " + size_major.substr(0, 120);
    } else if (!dtype_odd.empty()) {
      m.kind = "dtype";
      m.ranks = dtype_odd;
      m.detail = "rank " + std::to_string(dtype_odd.front()) + " has dtypes " + textOf(dtype_odd.front(), FrGroupField::Dtypes).substr(0, 120) +
                 ", the others " + dtype_major.substr(0, 120);
    } else if (state_set.size() > 1) {
      m.kind = "state";
      const int least = *state_set.begin();  // the least advanced state holds the others back
      for (const auto& [r, s] : states)
        if (s == least) m.ranks.push_back(r);
      m.detail = "ranks " + frRankList(m.ranks) + " are " + std::string(frStateName(static_cast<FrState>(least)));
    } else {
      continue;
    }
    const std::set<int> culprits(m.ranks.begin(), m.ranks.end());
    for (const auto& [r, e] : present) {
      if (culprits.count(r) == 0 && e->state != FrState::Completed) {
        m.waiting_ranks.push_back(r);
        const int64_t t = e->time_started_ns > 0 ? e->time_started_ns : e->time_created_ns;
        if (t > 0 && (m.since_ns == 0 || t < m.since_ns)) m.since_ns = t;
      }
    }
    for (const FrRankView& v : views) {
      const FrEntry* e = nullptr;
      if (culprits.count(v.rank) != 0 && m.kind == "missing_ranks") e = frLastEntry(*v.dump);
      else if (auto it = v.by_seq.find(seq); it != v.by_seq.end()) e = it->second;
      if (e == nullptr) continue;
      if (auto f = frLastFrame(*e)) m.frames_by_rank[v.rank] = *f;
    }
    return m;
  }
  return std::nullopt;
}

int64_t frMismatchTime(const FrMismatch& m, const std::vector<FrRankView>& views) {
  int64_t t = INT64_MAX;
  for (const FrRankView& v : views)
    if (auto it = v.by_seq.find(m.seq); it != v.by_seq.end() && it->second->time_created_ns > 0)
      t = std::min(t, it->second->time_created_ns);
  return t;
}

}  // namespace

FrDiagnosis diagnoseFlightRecorder(const std::vector<FrRankDump>& dumps) {
  FrDiagnosis out;
  std::map<std::string, std::set<int>> members;  // pg name -> ranks
  for (const FrRankDump& d : dumps) {
    out.ranks.push_back(d.rank);
    out.entries += d.entries.size();
    for (const auto& [pg, ranks] : d.pg_ranks) members[pg].insert(ranks.begin(), ranks.end());
    for (const FrEntry& e : d.entries)
      if (!e.is_p2p) members[e.pg_name].insert(d.rank);
    if (!d.entries.empty() && d.entries.front().record_id > 0) {
      const std::string first = std::to_string(d.entries.front().record_id);
      if (frRingWrapped(d, dumps))
        out.notes.push_back("rank " + std::to_string(d.rank) + "'s ring starts at record " + first +
                            " (older entries were overwritten: its ring is full, " + std::to_string(d.entries.size()) +
                            " entries)");
      else
        out.notes.push_back("rank " + std::to_string(d.rank) + "'s dump starts at record " + first +
                            ", but its ring was not full (or its records have gaps), so nothing was overwritten: the "
                            "records before it are not in the dump (an only-active dump or a reset recorder)");
    }
  }
  const std::set<int> have(out.ranks.begin(), out.ranks.end());
  std::optional<FrMismatch> best;
  int64_t best_time = INT64_MAX;
  for (const auto& [pg, ranks] : members) {
    std::vector<FrRankView> views;
    std::vector<int> absent;
    for (const int r : ranks) {
      if (have.count(r) == 0) {
        absent.push_back(r);
        continue;
      }
      FrRankView v;
      v.rank = r;
      for (const FrRankDump& d : dumps)
        if (d.rank == r) v.dump = &d;
      v.cut = !v.dump->entries.empty() && v.dump->entries.front().record_id > 0;
      for (const FrEntry& e : v.dump->entries)
        if (e.pg_name == pg && !e.is_p2p) {
          v.by_seq[e.collective_seq_id] = &e;
          v.members[e.collective_seq_id].push_back(&e);
        }
      if (!v.by_seq.empty()) {
        v.first_seq = v.by_seq.begin()->first;
        v.last_seq = v.by_seq.rbegin()->first;
      }
      views.push_back(std::move(v));
    }
    if (!absent.empty() && absent.size() < ranks.size())
      out.notes.push_back("process group " + pg + ": no dump for rank" + (absent.size() > 1 ? "s " : " ") + frRankList(absent));
    if (views.size() < 2) continue;
    std::optional<FrMismatch> m = frMatchGroup(pg, views);
    if (!m) continue;
    const int64_t t = frMismatchTime(*m, views);
    if (!best || t < best_time) {
      best = std::move(m);
      best_time = t;
    }
  }
  // Point-to-point ops, pair by pair (fr_p2p_match.h): a pipeline's hang is a send nobody received.
  for (FrP2pFinding& f : matchFrP2p(dumps, out.notes))
    if (!best || f.time_ns < best_time) {
      best = std::move(f.mismatch);
      best_time = f.time_ns;
    }
  out.first_mismatch = std::move(best);
  return out;
}

bool frRingWrapped(const FrRankDump& d, const std::vector<FrRankDump>& all) {
  if (d.entries.empty() || d.entries.front().record_id <= 0) return false;
  size_t fullest = 0;  // every rank of a job has the same ring size (TORCH_NCCL_TRACE_BUFFER_SIZE)
  for (const FrRankDump& o : all) fullest = std::max(fullest, o.entries.size());
  const int64_t span = d.entries.back().record_id - d.entries.front().record_id + 1;
  return d.entries.size() == fullest && span == static_cast<int64_t>(d.entries.size());
}

std::string frMismatchSentence(const FrMismatch& m) {
  const std::string group = "pg " + m.pg + (m.pg_desc.empty() ? std::string() : " (" + m.pg_desc + ")");
  const std::string what = m.op + " #" + std::to_string(m.seq) + " of " + group;
  const bool one = m.ranks.size() == 1;
  std::string s = (one ? "rank " : "ranks ") + frRankList(m.ranks);
  if (m.kind == "missing_ranks") s += " never joined " + what;
  else if (m.kind == "p2p") s += " never posted " + m.detail + " in " + group;
  else if (m.kind == "op") s += " ran something else as #" + std::to_string(m.seq) + " of " + group + " (" + m.detail + ")";
  else if (m.kind == "state") s += (one ? " is" : " are") + std::string(" behind in ") + what + " (" + m.detail + ")";
  else s += (one ? " disagrees" : " disagree") + std::string(" on the ") + m.kind + " of " + what + " (" + m.detail + ")";
  if (!m.waiting_ranks.empty()) {
    s += "; " + std::string(m.waiting_ranks.size() == 1 ? "rank " : "ranks ") + frRankList(m.waiting_ranks) +
         (m.waiting_ranks.size() == 1 ? " is" : " are") + " waiting in it";
    constexpr int64_t kYear2000Ns = 946684800LL * 1000000000LL;  // earlier: a run's own clock, not the wall's
    if (m.since_ns > 0 && m.since_ns < kYear2000Ns) {
      char buf[48];
      std::snprintf(buf, sizeof buf, " since %.1f ms into the run", static_cast<double>(m.since_ns) / 1e6);
      s += buf;
    } else if (m.since_ns > 0) {
      const std::time_t secs = static_cast<std::time_t>(m.since_ns / 1000000000);
      std::tm tm{};
      gmtime_r(&secs, &tm);
      char buf[32];
      std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
      s += std::string(" since ") + buf;
    }
  }
  for (const int r : m.ranks) {
    auto it = m.frames_by_rank.find(r);
    if (it == m.frames_by_rank.end()) continue;
    const std::string base = std::filesystem::path(it->second.filename).filename().string();
    s += "; rank " + std::to_string(r) + " last ran " + base;
    if (it->second.line > 0) s += ":" + std::to_string(it->second.line);  // ShardScope's own frames have no line
    if (!it->second.name.empty()) s += " (" + it->second.name + ")";
  }
  return s;
}

}  // namespace shardscope::postmortem
