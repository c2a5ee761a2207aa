// One copy of a run's events for its readers (the GUI's views, the CLI's
// inspect): per-rank vectors fed in batches (live from the GUI's EngineBridge,
// or all at once from an opened trace) plus the run's metadata. Append-only between clear()s, so views keep per-rank cursors and
// revision() tells them when to start over. No Qt: the GUI and the CLI share it.
// A replicated run's copied ranks hold no events: events(r) of a copy is its
// source's list (meta().copies), so 512 ranks cost one rank's memory.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trace/event.h"
#include <nlohmann/json_fwd.hpp>

#include "trace/run_trace.h"

namespace shardscope {

class EventStore {
 public:
  // Ranks are int16 in events (a trace's pid 0..32767): more are never held.
  static constexpr int kMaxRanks = 32768;

  // Drops every event and sets the metadata (meta.events is ignored).
  void reset(const RunTrace& meta);
  void clear();
  // Replaces everything with an opened trace (metadata and events; a trace in
  // the shared form keeps its rank map, its copies' lists stay empty).
  void setFromTrace(RunTrace trace);
  // Appends events recorded by rank; grows the rank count when needed (up to
  // kMaxRanks; events of a rank outside 0..kMaxRanks-1 are dropped, and so
  // are a copied rank's: they are its source's).
  void appendEvents(int rank, std::span<const Event> events);
  // Mean loss per completed step (from Run::losses(), or the trace's own).
  void setLosses(std::vector<double> losses);

  int rankCount() const { return static_cast<int>(m_events.size()); }
  // The rank map (empty unless the run's ranks are copies of simulated ones).
  const RankCopies& copies() const { return m_meta.copies; }
  bool isCopy(int rank) const { return m_meta.copies.isCopy(rank); }
  // The rank whose list events(rank) is: rank itself, or a copy's source.
  int sourceOf(int rank) const { return m_meta.copies.sourceOf(rank); }
  // Rank `rank`'s events: its own list, or a copy's source's — the same ops
  // at the same times, whose rank and group fields are the source's (eventAt
  // gives the copy's own). Indices into it are the rank's event indices.
  const std::vector<Event>& events(int rank) const { return m_events[static_cast<size_t>(sourceOf(rank))]; }
  // events(rank)[index] as rank recorded it (a copy: its rank and group ids).
  Event eventAt(int rank, size_t index) const { return m_meta.copies.eventFor(rank, events(rank)[index]); }
  // Every rank's events, copies included (each counts its source's).
  size_t eventCount() const;
  bool empty() const { return m_count == 0; }
  const std::vector<double>& losses() const { return m_losses; }

  // ns since run start; both 0 while empty.
  int64_t beginNs() const { return m_count ? m_begin : 0; }
  int64_t endNs() const { return m_count ? m_end : 0; }

  // Metadata: strategy, ranks, params, names, buckets, units (events empty).
  const RunTrace& meta() const { return m_meta; }
  std::string blockName(int segment) const;  // "block3", or "segment 7" when unknown
  // The run's config; nullptr for a trace without a readable one.
  const RunConfig* config() const { return m_meta.config ? &*m_meta.config : nullptr; }
  bool modeledClock() const { return config() && config()->clock == ClockKind::Modeled; }
  // The config's strategy, else the metadata's name; nullopt when neither is known.
  std::optional<Strategy> strategy() const {
    return config() ? std::optional<Strategy>(config()->strategy) : parseStrategy(m_meta.strategy);
  }
  // Ranks per shard group for the formulas: hsdp's G, P for zero3/fsdp, 0 otherwise or unknown.
  int shardGroup() const { return config() && config()->isSharded() ? config()->shardGroupSize() : 0; }
  // Changes on reset/clear/setFromTrace, never on append: views whose
  // cursors predate it must rebuild.
  uint64_t generation() const { return m_generation; }

  // Metadata, losses and every event, for the Chrome trace writer; a
  // replicated run's in the shared form (copies' lists empty, the rank map in
  // trace.copies), which the writer and setFromTrace understand.
  RunTrace toRunTrace() const;

 private:
  void resetEvents();
  void noteEvents(std::span<const Event> events);  // the count and the time range

  RunTrace m_meta;
  std::vector<std::vector<Event>> m_events;
  std::vector<double> m_losses;
  size_t m_count = 0;
  int64_t m_begin = 0;
  int64_t m_end = 0;
  uint64_t m_generation = 0;
};

}  // namespace shardscope
