// Point-to-point entries of flight-recorder dumps, matched pair by pair. NCCL
// runs one pair's sends in order and the peer's receives from it in order, so
// rank a's k-th send to b is b's k-th receive from a (PyTorch names them
// "nccl:send a->b" on a and "nccl:recv b<-a" on b, in group ranks). A send no
// receive matches, or the reverse, is how a pipeline-parallel job hangs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "postmortem/flight_recorder.h"

namespace shardscope::postmortem {

struct FrP2pOp {
  bool send = false;
  int64_t self = -1, peer = -1;  // group ranks, as the name gives them
};
// "nccl:send 0->1" -> {send, 0, 1}; "nccl:recv 1<-0" -> {recv, 1, 0}; nullopt for other names.
std::optional<FrP2pOp> frP2pOp(std::string_view profiling_name);

struct FrP2pFinding {
  FrMismatch mismatch;  // kind "p2p" (an op its peer never posted), "size" or "dtype" (a pair that disagrees)
  int64_t time_ns = INT64_MAX;  // when the unmatched op was created: the earliest finding is the hang's start
};

// The first problem of each (group, sender, receiver) pair whose two dumps are
// both read and whole; a pair a cut ring leaves unknowable is named in `notes`.
// An unmatched op that completed is none: its peer did run the other half.
std::vector<FrP2pFinding> matchFrP2p(const std::vector<FrRankDump>& dumps, std::vector<std::string>& notes);

}  // namespace shardscope::postmortem
