// FSDP units and their flat parameters. Unit 0 is the root (input projection
// and head, used at both ends of the model); units 1..U each wrap K
// consecutive blocks. A unit's parameters are flattened in registration
// order, padded to a multiple of the shard-group size G, and split into G
// equal chunks: group rank g owns chunk g. A rank's shard is its chunks of all
// units, concatenated in unit order.
//
// Wrap::Linear (ModuleWrapPolicy({nn.Linear})): every Linear layer is a flat
// parameter of its own — its own padding, all-gather and reduce-scatter. A
// unit above then holds the pieces of one segment (a block, or the root's two
// ends): each piece is one Linear's weight and bias, with the parameters no
// Linear owns riding in the piece of the Linear after them (a block's norm
// with the Linear it feeds); what no Linear follows in a segment (the
// embeddings, a tied model's final norm) is one piece of its own. The engine
// computes a segment as one op, so a unit's pieces are all gathered before it
// runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/kinds.h"
#include "model/model_spec.h"
#include "parallel/shard_layout.h"

namespace shardscope {

// One flat parameter of a unit: elements [offset, offset + elements) of the
// unit's parameters, padded to a multiple of G on its own.
struct FsdpPiece {
  std::string name;      // "block3.fc1", or the unit's name when it is the whole unit
  int64_t offset = 0;    // elements into the unit's (unpadded) parameters
  int64_t elements = 0;
  int64_t padded = 0;    // multiple of the group size
  int64_t shard_offset = 0;  // elements into the unit's chunk (a rank's part of the unit)
};

struct FsdpUnit {
  int index = 0;
  std::string name;            // "root", "unit3"
  std::vector<int> segments;   // model segments, in forward order
  std::vector<int> blocks;     // model blocks (segment - 1) for block units
  std::vector<int64_t> segment_offset;  // elements into the flat unit, per entry of segments
  int64_t elements = 0;        // parameters in the unit (unpadded)
  int64_t padded = 0;          // the pieces' padded sizes, summed: a multiple of the group size
  int64_t chunk() const { return padded / group; }
  int group = 1;
  std::vector<FsdpPiece> pieces;  // one (the whole unit) with block wrapping
  // Elements a gathered copy of the unit needs: its parameters unpadded and
  // contiguous, plus room for the last gather's padding (each piece's gather
  // writes its padding where the next piece then lands, so pieces are
  // gathered in offset order). With one piece: padded.
  int64_t gatheredElements() const;
};

class FsdpUnits {
 public:
  FsdpUnits(const ModelSpec& spec, int unit_blocks, int group_size, Wrap wrap = Wrap::Block);

  const std::vector<FsdpUnit>& units() const { return m_units; }
  int unitOfSegment(int segment) const { return m_unitOfSegment[segment]; }
  int64_t paddingElements() const;
  int64_t maxBlockUnitElements() const;  // padded, block units only
  int pieceCount() const;                 // flat parameters: collectives per gather of every unit

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
