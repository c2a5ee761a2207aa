#include "parallel/fsdp_units.h"

#include <algorithm>

namespace shardscope {

namespace {

int64_t padTo(int64_t n, int group) { return (n + group - 1) / group * group; }

// A Linear's weight: a matrix that is no embedding table.
bool isLinearWeight(const ParamInfo& p) {
  const std::string& n = p.name;
  const bool weight = n.size() > 7 && n.compare(n.size() - 7, 7, ".weight") == 0;
  return weight && p.rows > 1 && n != "wte.weight" && n != "wpe.weight";
}

std::string layerName(const std::string& param) { return param.substr(0, param.rfind('.')); }

}  // namespace

int64_t FsdpUnit::gatheredElements() const {
  int64_t end = 0;
  for (const FsdpPiece& p : pieces) end = std::max(end, p.offset + p.padded);
  return end;
}

FsdpUnits::FsdpUnits(const ModelSpec& spec, int unit_blocks, int group_size, Wrap wrap) : m_spec(spec) {
  const int L = spec.shape().layers;
  if (wrap == Wrap::Linear) unit_blocks = 1;
  // Splits a unit's parameters after each Linear (its weight and, when the
  // next parameter is its bias, that too), and at the end of each segment.
  auto linearPieces = [&](FsdpUnit& u) {
    int64_t at = 0, start = 0;
    std::string name;
    for (int seg : u.segments) {
      const auto [first, last] = spec.segmentParams(seg);
      for (int p = first; p < last; ++p) {
        const ParamInfo& info = spec.params()[p];
        at += info.numel();
        if (isLinearWeight(info)) name = layerName(info.name);
        const bool bias_next = p + 1 < last && spec.params()[p + 1].name == name + ".bias";
        const bool closes = !name.empty() && (layerName(info.name) == name) && !bias_next;
        if (closes) {
          u.pieces.push_back({name, start, at - start, 0, 0});
          start = at;
          name.clear();
        }
      }
      // What no Linear closed (an embedding, a final norm): one piece of its segment.
      if (at > start) u.pieces.push_back({spec.segmentName(seg), start, at - start, 0, 0});
      start = at;
      name.clear();
    }
  };
  auto addUnit = [&](std::string name, std::vector<int> segments) {
    FsdpUnit u;
    u.index = static_cast<int>(m_units.size());
    u.name = std::move(name);
    u.group = group_size;
    for (int seg : segments) {
      const auto [first, last] = spec.segmentParams(seg);
      u.segment_offset.push_back(u.elements);
      for (int p = first; p < last; ++p) u.elements += spec.params()[p].numel();
      if (seg >= 1 && seg <= L) u.blocks.push_back(seg - 1);
    }
    u.segments = std::move(segments);
    if (wrap == Wrap::Linear) linearPieces(u);
    else u.pieces.push_back({u.name, 0, u.elements, 0, 0});
    for (FsdpPiece& p : u.pieces) {
      p.padded = padTo(p.elements, group_size);
      p.shard_offset = u.padded / group_size;
      u.padded += p.padded;
    }
    m_units.push_back(std::move(u));
  };
  addUnit("root", {0, L + 1});
  for (int b = 0; b < L; b += unit_blocks) {
    std::vector<int> segs;
    for (int k = b; k < std::min(L, b + unit_blocks); ++k) segs.push_back(k + 1);
    addUnit("unit" + std::to_string(m_units.size()), std::move(segs));
  }
  m_unitOfSegment.assign(spec.segmentCount(), -1);
  for (const FsdpUnit& u : m_units)
    for (int seg : u.segments) m_unitOfSegment[seg] = u.index;
}

int64_t FsdpUnits::paddingElements() const {
  int64_t pad = 0;
  for (const FsdpUnit& u : m_units) pad += u.padded - u.elements;
  return pad;
}

int64_t FsdpUnits::maxBlockUnitElements() const {
  int64_t m = 0;
  for (const FsdpUnit& u : m_units)
    if (u.index > 0) m = std::max(m, u.padded);
  return m;
}

int FsdpUnits::pieceCount() const {
  int n = 0;
  for (const FsdpUnit& u : m_units) n += static_cast<int>(u.pieces.size());
  return n;
}

FsdpUnits::Shard FsdpUnits::shardOf(int group_rank) const {
  Shard shard;
  for (const FsdpUnit& u : m_units) {
    shard.unit_offset.push_back(shard.elements);
    for (const FsdpPiece& piece : u.pieces) {
      // Group rank g owns chunk g of each piece: [lo, hi) of the unit's elements.
      const int64_t chunk = piece.padded / u.group;
      const int64_t lo = piece.offset + group_rank * chunk;
      const int64_t hi = std::min(lo + chunk, piece.offset + piece.elements);
      const int64_t into = shard.elements + piece.shard_offset;  // where this chunk sits in the shard
      for (size_t i = 0; i < u.segments.size(); ++i) {
        const auto [first, last] = m_spec.segmentParams(u.segments[i]);
        int64_t local = u.segment_offset[i];
        for (int p = first; p < last; ++p) {
          const ParamInfo& info = m_spec.params()[p];
          const int64_t a = std::max(lo, local), z = std::min(hi, local + info.numel());
          if (a < z) shard.spans.push_back({into + (a - lo), info.offset + (a - local), z - a});
          local += info.numel();
        }
      }
    }
    shard.elements += u.chunk();
  }
  return shard;
}

}  // namespace shardscope
