// A plain struct shared by the collectives that count bytes (comm/) and the
// formulas that predict them (analysis/).
#pragma once

#include <cstdint>

namespace shardscope {

// Bytes sent by one rank, by collective kind.
struct CommBytes {
  int64_t all_reduce = 0;
  int64_t reduce_scatter = 0;
  int64_t all_gather = 0;
  int64_t broadcast = 0;
  int64_t send = 0;  // pipeline stages: activations and gradients sent point to point
  CommBytes& operator+=(const CommBytes& o) {
    all_reduce += o.all_reduce;
    reduce_scatter += o.reduce_scatter;
    all_gather += o.all_gather;
    broadcast += o.broadcast;
    send += o.send;
    return *this;
  }
};

}  // namespace shardscope
