#include "parallel/fsdp_units.h"

#include <algorithm>

namespace shardscope {

FsdpUnits::FsdpUnits(const ModelSpec& spec, int unit_blocks, int group_size) : m_spec(spec) {
  const int L = spec.shape().layers;
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
    u.padded = (u.elements + group_size - 1) / group_size * group_size;
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

FsdpUnits::Shard FsdpUnits::shardOf(int group_rank) const {
  Shard shard;
  for (const FsdpUnit& u : m_units) {
    shard.unit_offset.push_back(shard.elements);
    const int64_t lo = group_rank * u.chunk(), hi = lo + u.chunk();
    for (size_t i = 0; i < u.segments.size(); ++i) {
      const auto [first, last] = m_spec.segmentParams(u.segments[i]);
      int64_t local = u.segment_offset[i];
      for (int p = first; p < last; ++p) {
        const ParamInfo& info = m_spec.params()[p];
        const int64_t a = std::max(lo, local), z = std::min(hi, local + info.numel());
        if (a < z) shard.spans.push_back({shard.elements + (a - lo), info.offset + (a - local), z - a});
        local += info.numel();
      }
    }
    shard.elements += u.chunk();
  }
  return shard;
}

}  // namespace shardscope
