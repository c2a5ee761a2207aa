#include "kineto/kineto_walk_merge.h"

#include <vector>

namespace shardscope::kineto::walk {

void absorbPart(TraceBuilder& into, const RankTrace& b) {
  RankTrace& out = into.trace();
  std::vector<uint32_t> str(b.strings.size());
  for (uint32_t i = 0; i < b.strings.size(); ++i) str[i] = out.strings.intern(b.str(i));
  std::vector<uint32_t> track(b.tracks.size());
  for (size_t i = 0; i < b.tracks.size(); ++i) track[i] = into.trackOf(str[b.tracks[i].pid], str[b.tracks[i].tid]);
  std::vector<uint16_t> cat(b.categories.size());
  for (size_t i = 0; i < b.categories.size(); ++i) cat[i] = into.categoryOf(str[b.categories[i]]);
  const auto events0 = static_cast<uint32_t>(out.events.size());
  const auto collectives0 = static_cast<uint32_t>(out.collective_args.size());
  const auto memory0 = static_cast<uint32_t>(out.memory.size());
  const auto oom0 = static_cast<uint32_t>(out.out_of_memory.size());
  const auto syncs0 = static_cast<uint32_t>(out.sync_args.size());
  out.events.reserve(out.events.size() + b.events.size());
  for (TraceEvent e : b.events) {
    e.name = str[e.name];
    e.track = track[e.track];
    e.cat = cat[e.cat];
    if (e.extra != kNone)
      e.extra += e.kind == EventKind::MemoryInstant ? memory0
                 : e.kind == EventKind::OutOfMemory ? oom0
                 : e.kind == EventKind::CudaSync    ? syncs0
                                                    : collectives0;
    out.events.push_back(e);
  }
  out.sync_args.insert(out.sync_args.end(), b.sync_args.begin(), b.sync_args.end());
  for (CollectiveArgs c : b.collective_args) {
    c.collective_name = str[c.collective_name];
    c.dtype = str[c.dtype];
    c.pg_name = str[c.pg_name];
    c.pg_ranks = str[c.pg_ranks];
    c.input_dims = str[c.input_dims];
    c.input_types = str[c.input_types];
    out.collective_args.push_back(c);
  }
  for (auto* table : {&b.memory, &b.out_of_memory})
    for (MemorySample m : *table) {
      m.event += events0;
      m.tid = str[m.tid];
      (table == &b.memory ? out.memory : out.out_of_memory).push_back(m);
    }
  for (BigInteger big : b.big_integers) {
    big.field = str[big.field];
    big.text = str[big.text];
    out.big_integers.push_back(big);
  }
  for (const auto& [pid, name] : b.process_names) out.process_names[str[pid]] = str[name];
  for (const auto& [key, name] : b.thread_names) out.thread_names[{str[key.first], str[key.second]}] = str[name];
  for (const auto& [pid, labels] : b.process_labels)
    for (uint32_t l : labels) out.process_labels[str[pid]].push_back(str[l]);
  if (b.rank_from_metadata) {
    out.rank = b.rank;
    out.rank_from_metadata = true;
  }
  if (b.world_size >= 0) out.world_size = b.world_size;
  if (!b.process_groups.empty()) out.process_groups = b.process_groups;
  if (b.base_time_ns) out.base_time_ns = b.base_time_ns;
  if (!b.hostname.empty()) out.hostname = b.hostname;
  out.any_float_ts = out.any_float_ts || b.any_float_ts;
  out.json_windows += b.json_windows;
  out.negative_durations += b.negative_durations;
}

}  // namespace shardscope::kineto::walk
