// Rows are every (group, seq) some rank recorded, groups in name order; a
// member's cell without an entry is "missing" above its last entry of the
// group and "overwritten" below the oldest entry of a ring that wrapped ("not
// in the dump" when the dump starts above record 0 without having wrapped), as
// diagnoseFlightRecorder reads them, so the marked cell agrees with the sentence.
#include "postmortem/fr_ladder.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

namespace shardscope::postmortem {

std::string_view frCellName(FrCell c) {
  switch (c) {
    case FrCell::NotMember: return "not a member";
    case FrCell::Missing: return "missing";
    case FrCell::Overwritten: return "overwritten";
    case FrCell::NotInDump: return "not in the dump";
    case FrCell::Scheduled: return "scheduled";
    case FrCell::Started: return "started";
    case FrCell::Completed: return "completed";
  }
  return "missing";
}

int FrLadder::column(int rank) const {
  const auto it = std::lower_bound(ranks.begin(), ranks.end(), rank);
  return it != ranks.end() && *it == rank ? static_cast<int>(it - ranks.begin()) : -1;
}

int FrLadder::rowOf(const std::string& pg_name, int64_t seq) const {
  for (size_t i = 0; i < rows.size(); ++i)
    if (!rows[i].p2p && rows[i].pg_name == pg_name && rows[i].seq == seq) return static_cast<int>(i);
  return -1;
}

namespace {

struct FlRowKey {
  std::string pg_name;
  bool p2p = false;
  int64_t seq = 0;
  bool operator<(const FlRowKey& o) const {
    if (pg_name != o.pg_name) return pg_name < o.pg_name;
    if (p2p != o.p2p) return !p2p;
    return seq < o.seq;
  }
};

FrCell flCellOf(FrState s) {
  switch (s) {
    case FrState::Scheduled: return FrCell::Scheduled;
    case FrState::Started: return FrCell::Started;
    case FrState::Completed: return FrCell::Completed;
  }
  return FrCell::Scheduled;
}

}  // namespace

FrLadder buildFrLadder(const std::vector<FrRankDump>& dumps) {
  FrLadder l;
  for (const FrRankDump& d : dumps) l.ranks.push_back(d.rank);
  std::sort(l.ranks.begin(), l.ranks.end());
  l.ranks.erase(std::unique(l.ranks.begin(), l.ranks.end()), l.ranks.end());
  const size_t P = l.ranks.size();
  std::vector<const FrRankDump*> by_col(P, nullptr);  // the dumps in column order
  for (const FrRankDump& d : dumps) by_col[static_cast<size_t>(l.column(d.rank))] = &d;
  // Per row, per column: the entry index. Per group: its members.
  std::map<FlRowKey, std::vector<int>> rows;
  std::map<std::string, std::set<int>> members;
  std::map<std::string, std::string> desc;
  std::map<std::pair<std::string, int>, int64_t> oldest;  // (pg, rank) -> its oldest collective's seq
  for (size_t col = 0; col < P; ++col) {
    const FrRankDump& d = *by_col[col];
    for (const auto& [pg, rs] : d.pg_ranks) members[pg].insert(rs.begin(), rs.end());
    for (const auto& [pg, text] : d.pg_desc)
      if (!text.empty()) desc[pg] = text;
    for (size_t i = 0; i < d.entries.size(); ++i) {
      const FrEntry& e = d.entries[i];
      if (!e.pg_desc.empty()) desc[e.pg_name] = e.pg_desc;
      const FlRowKey key{e.pg_name, e.is_p2p, e.is_p2p ? e.p2p_seq_id : e.collective_seq_id};
      auto& cells = rows[key];
      if (cells.empty()) cells.assign(P, -1);
      cells[col] = static_cast<int>(i);
      if (!e.is_p2p) {
        members[e.pg_name].insert(d.rank);
        auto [it, fresh] = oldest.try_emplace({e.pg_name, d.rank}, e.collective_seq_id);
        if (!fresh) it->second = std::min(it->second, e.collective_seq_id);
      }
    }
  }
  const FrDiagnosis diag = diagnoseFlightRecorder(dumps);
  l.notes = diag.notes;
  l.cells.reserve(rows.size() * P);
  for (const auto& [key, cells] : rows) {
    FrLadderRow row;
    row.pg_name = key.pg_name;
    const auto dit = desc.find(key.pg_name);
    row.pg = dit != desc.end() ? dit->second : key.pg_name;
    row.p2p = key.p2p;
    row.seq = key.seq;
    std::map<std::string, int> ops;
    for (size_t c = 0; c < P; ++c)
      if (cells[c] >= 0) ++ops[by_col[c]->entries[static_cast<size_t>(cells[c])].op()];
    for (const auto& [op, n] : ops)
      if (row.op.empty() || n > ops[row.op]) row.op = op;
    row.label = row.pg + (key.p2p ? " p2p #" : " #") + std::to_string(key.seq) + " " + row.op;
    const auto& group = members[key.pg_name];
    for (size_t c = 0; c < P; ++c) {
      FrLadderCellInfo cell;
      const FrRankDump& d = *by_col[c];
      if (cells[c] >= 0) {
        const FrEntry& e = d.entries[static_cast<size_t>(cells[c])];
        cell.entry = cells[c];
        cell.state = flCellOf(e.state);
        cell.differs = e.op() != row.op;
      } else if (key.p2p || group.count(d.rank) == 0) {
        cell.state = FrCell::NotMember;
      } else {
        // Below the oldest entry a cut dump holds: unknown (overwritten only if its ring wrapped). Anything else: never issued.
        const bool cut = !d.entries.empty() && d.entries.front().record_id > 0;
        const auto o = oldest.find({key.pg_name, d.rank});
        const FrCell unknown = frRingWrapped(d, dumps) ? FrCell::Overwritten : FrCell::NotInDump;
        cell.state = cut && (o == oldest.end() || key.seq < o->second) ? unknown : FrCell::Missing;
      }
      l.cells.push_back(cell);
    }
    l.rows.push_back(std::move(row));
  }
  if (diag.first_mismatch) {
    const FrMismatch& m = *diag.first_mismatch;
    l.mismatch_row = l.rowOf(m.pg_name, m.seq);
    l.sentence = frMismatchSentence(m);
    if (l.mismatch_row >= 0) {
      for (const int r : m.ranks) {
        const int c = l.column(r);
        if (c < 0) continue;
        FrLadderCellInfo& cell = l.cells[static_cast<size_t>(l.mismatch_row) * P + static_cast<size_t>(c)];
        cell.culprit = true;
        if (m.kind != "missing_ranks" && m.kind != "state") cell.differs = true;
      }
    }
  } else {
    l.sentence = dumps.empty() ? "no dumps" : "no mismatch: every rank recorded the same collectives (" +
                                                 std::to_string(diag.entries) + " entries on " + std::to_string(P) + " ranks)";
  }
  return l;
}

std::string frLadderRowDetail(const FrLadder& l, const std::vector<FrRankDump>& dumps, int row) {
  if (row < 0 || static_cast<size_t>(row) >= l.rows.size()) return {};
  const FrLadderRow& r = l.rows[static_cast<size_t>(row)];
  std::ostringstream os;
  os << r.label << (row == l.mismatch_row ? "  (the first mismatch)" : "") << "\n";
  for (size_t c = 0; c < l.ranks.size(); ++c) {
    const FrLadderCellInfo& cell = l.cell(row, static_cast<int>(c));
    os << "\nrank " << l.ranks[c] << ": " << frCellName(cell.state) << (cell.culprit ? "  <- culprit" : "");
    const FrRankDump* d = nullptr;
    for (const FrRankDump& x : dumps)
      if (x.rank == l.ranks[c]) d = &x;
    if (d == nullptr) continue;
    const FrEntry* e = cell.entry >= 0 ? &d->entries[static_cast<size_t>(cell.entry)] : nullptr;
    if (e == nullptr && cell.state == FrCell::Missing && !d->entries.empty()) {
      e = &d->entries.back();
      os << "; its last entry:";
    }
    if (e == nullptr) {
      os << "\n";
      continue;
    }
    os << "\n  " << e->profiling_name << " record " << e->record_id << ", " << e->pg_desc << " #" << e->collective_seq_id
       << (e->is_p2p ? " p2p #" + std::to_string(e->p2p_seq_id) : std::string()) << ", " << frStateName(e->state)
       << "\n  sizes " << e->sizes << ", dtypes " << e->dtypes << "\n";
    for (const FrFrame& f : e->frames) {
      os << "    " << (f.name.empty() ? "?" : f.name) << "  " << f.filename;
      if (f.line > 0) os << ":" << f.line;
      os << "\n";
    }
  }
  return os.str();
}

}  // namespace shardscope::postmortem
