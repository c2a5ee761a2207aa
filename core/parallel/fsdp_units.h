// FSDP units and their flat parameters. Unit 0 is the root (input projection
// and head, used at both ends of the model); units 1..U each wrap K
// consecutive blocks. A unit's parameters are flattened in registration
// order, padded to a multiple of the shard-group size G, and split into G
// equal chunks: group rank g owns chunk g. A rank's shard is its chunks of all
// units, concatenated in unit order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_spec.h"
#include "parallel/shard_layout.h"

namespace shardscope {

struct FsdpUnit {
  int index = 0;
  std::string name;            // "root", "unit3"
  std::vector<int> segments;   // model segments, in forward order
  std::vector<int> blocks;     // model blocks (segment - 1) for block units
  std::vector<int64_t> segment_offset;  // elements into the flat unit, per entry of segments
  int64_t elements = 0;        // parameters in the unit (unpadded)
  int64_t padded = 0;          // multiple of the group size
  int64_t chunk() const { return padded / group; }
  int group = 1;
};

class FsdpUnits {
 public:
  FsdpUnits(const ModelSpec& spec, int unit_blocks, int group_size);

  const std::vector<FsdpUnit>& units() const { return m_units; }
  int unitOfSegment(int segment) const { return m_unitOfSegment[segment]; }
  int64_t paddingElements() const;
  int64_t maxBlockUnitElements() const;  // padded, block units only

  // The shard of group rank g: spans to the flat model params, chunk offsets.
  struct Shard {
    int64_t elements = 0;
    std::vector<int64_t> unit_offset;  // per unit, elements into the shard
    std::vector<ShardSpan> spans;
  };
  Shard shardOf(int group_rank) const;

 private:
  const ModelSpec& m_spec;
  std::vector<FsdpUnit> m_units;
  std::vector<int> m_unitOfSegment;
};

}  // namespace shardscope
