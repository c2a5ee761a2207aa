// NCCL flight-recorder dumps (one per rank, pickle or JSON, format 2.x, as
// PyTorch's FlightRecorder writes them) and the diagnosis of a hang: entries
// matched across ranks per process group by collective_seq_id, the first
// collective where the ranks disagree (a rank missing, another op, size,
// dtype or state), its culprit ranks, the ranks waiting in it and each rank's
// last stack frame. A ring that lost its oldest entries is not a mismatch.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "postmortem/value_tree.h"

namespace shardscope::postmortem {

enum class FrState : uint8_t { Scheduled, Started, Completed };
std::string_view frStateName(FrState s);  // "scheduled", "started", "completed"

struct FrFrame {
  std::string filename;
  std::string name;
  int64_t line = 0;
};

struct FrEntry {
  int64_t record_id = 0;
  int64_t pg_id = -1;
  std::string pg_name;  // process_group[0]
  std::string pg_desc;  // process_group[1], e.g. "default_pg"
  int64_t collective_seq_id = 0;
  int64_t p2p_seq_id = 0;
  bool is_p2p = false;
  std::string profiling_name;  // "nccl:all_reduce"
  std::string sizes;           // input and output sizes as text, for comparison
  std::string dtypes;          // input and output dtypes as text
  FrState state = FrState::Scheduled;
  int64_t time_created_ns = 0;
  int64_t time_started_ns = 0;  // 0: not discovered
  bool retired = false;
  std::vector<FrFrame> frames;  // innermost first, at most kMaxFrames

  static constexpr size_t kMaxFrames = 64;
  std::string op() const;  // profiling_name without its "nccl:" prefix
};

struct FrRankDump {
  int rank = -1;
  std::string path;
  std::string version;
  std::vector<FrEntry> entries;  // oldest first
  std::map<std::string, std::vector<int>> pg_ranks;  // pg_config: name -> member ranks
  std::map<std::string, std::string> pg_desc;        // pg_config: name -> desc
};

// Reads one dump. `rank` is the dump's rank (-1: from a "rank" key, else the
// digits that end the file name). Throws PostmortemFormatError naming the field.
FrRankDump parseFlightRecorderDump(const ValueTree& tree, int rank, const std::string& path);
// True when the document looks like a flight-recorder dump (a dict with
// `version` and `entries` or `pg_config`).
bool isFlightRecorderDump(const ValueTree& tree);
// The rank a dump file's name ends with ("nccl_trace_rank_3" -> 3), -1 if none.
int frRankFromPath(const std::string& path);
// Files and directories (each directory's regular files) read as dumps, sorted by rank.
std::vector<FrRankDump> readFlightRecorderDumps(const std::vector<std::string>& inputs);

struct FrMismatch {
  std::string pg;       // PyTorch's process-group name ("0"), as its dumps and c10d say it
  std::string pg_desc;  // its description ("default_pg"), "" when the dumps give none
  std::string pg_name;  // = pg (the key older readers of analyze's JSON use)
  int64_t seq = 0;      // collective_seq_id; of a point-to-point op, its place among its pair's (1: the first)
  std::string op;       // what the majority ran
  std::string kind;     // "missing_ranks", "op", "size", "dtype", "state", "p2p" (a send or recv its peer never posted)
  std::vector<int> ranks;          // the culprits
  std::vector<int> waiting_ranks;  // ranks inside it, not completed
  std::map<int, FrFrame> frames_by_rank;  // each rank's last user frame (the culprits' last entry)
  int64_t since_ns = 0;  // earliest a waiting rank was seen in it (ns since the epoch), 0 unknown
  std::string detail;    // what differs, e.g. "rank 2 ran all_gather"
};

struct FrDiagnosis {
  std::vector<int> ranks;  // dumps read
  size_t entries = 0;
  std::optional<FrMismatch> first_mismatch;
  std::vector<std::string> notes;  // truncated rings, ranks without a dump, unmatched p2p
};

// Collectives matched per group by collective_seq_id, point-to-point ops pair by
// pair (fr_p2p_match.h); the earliest problem is the first mismatch.
FrDiagnosis diagnoseFlightRecorder(const std::vector<FrRankDump>& dumps);

// True when `d`'s ring really wrapped (older records overwritten): its first
// record_id is above 0, its record ids have no gap, and it holds as many
// entries as the fullest ring among `all` (a job's ranks share one ring size;
// PyTorch's dump does not say it). A dump of only active entries, or of a
// recorder reset mid-run, also starts above 0 without losing anything.
bool frRingWrapped(const FrRankDump& d, const std::vector<FrRankDump>& all);

// The innermost frame outside torch (the user's line), else the innermost.
std::optional<FrFrame> frLastFrame(const FrEntry& e);

// "rank 2 never joined all_reduce #42 of pg 0 (default_pg); ranks 0, 1, 3 are waiting in it since ...; rank 2 last ran train.py:88"
std::string frMismatchSentence(const FrMismatch& m);

}  // namespace shardscope::postmortem
