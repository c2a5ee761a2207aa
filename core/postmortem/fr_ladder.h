// The collective ladder of a set of flight-recorder dumps, as plain data for
// the ladder page and its figure: one row per (process group, sequence number),
// one column per rank, each cell the state of that rank's entry (or why it has
// none), the first mismatch's row and culprit cells marked. P2P entries get
// rows of their own by p2p_seq_id. Nothing here draws.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "postmortem/flight_recorder.h"

namespace shardscope::postmortem {

enum class FrCell : uint8_t {
  NotMember,   // the rank is not in this group
  Missing,     // a member that never issued it
  Overwritten, // below the oldest entry of a ring that wrapped (frRingWrapped): unknown
  NotInDump,   // below the oldest entry of a dump that starts above record 0 without wrapping: unknown
  Scheduled,
  Started,
  Completed,
};
std::string_view frCellName(FrCell c);  // "not a member", "missing", "overwritten", "not in the dump", "scheduled", ...

struct FrLadderRow {
  std::string pg_name;  // process_group[0]
  std::string pg;       // its description, else its name
  bool p2p = false;
  int64_t seq = 0;      // collective_seq_id (p2p: p2p_seq_id)
  std::string op;       // what most ranks ran ("all_reduce")
  std::string label;    // "default_pg #4 all_reduce"
};

struct FrLadderCellInfo {
  FrCell state = FrCell::NotMember;
  int entry = -1;       // index into the rank's dump entries, -1 without one
  bool culprit = false; // a culprit of the first mismatch (its row only)
  bool differs = false; // this rank's entry differs from the row's (op, size or dtype)
};

struct FrLadder {
  std::vector<int> ranks;          // columns (dump ranks, ascending)
  std::vector<FrLadderRow> rows;   // groups by name, each by sequence
  std::vector<FrLadderCellInfo> cells;  // rows x ranks, row-major
  int mismatch_row = -1;           // the first mismatch, -1 when none
  std::string sentence;            // frMismatchSentence, or what was found instead
  std::vector<std::string> notes;  // the diagnosis' notes

  const FrLadderCellInfo& cell(int row, int column) const {
    return cells[static_cast<size_t>(row) * ranks.size() + static_cast<size_t>(column)];
  }
  int column(int rank) const;  // -1 when the rank has no dump
  // The row of (pg name, seq) among the collectives (not p2p), -1 when none.
  int rowOf(const std::string& pg_name, int64_t seq) const;
};

FrLadder buildFrLadder(const std::vector<FrRankDump>& dumps);

// One row's entry on every rank, with its stack (innermost first), for the detail pane.
std::string frLadderRowDetail(const FrLadder& ladder, const std::vector<FrRankDump>& dumps, int row);

}  // namespace shardscope::postmortem
