#include "inspection.h"

#include "trace/run_trace.h"

namespace shardscope {

Inspection::Inspection(QObject* parent) : QObject(parent) {}

bool Inspection::modeledClock() const { return m_store.modeledClock(); }

std::string Inspection::clockProfile() const {
  return m_store.config() ? m_store.config()->profileName() : std::string("?");
}

std::optional<RunConfig> Inspection::recordedConfig(const RunTrace& trace, QString* why) {
  // The trace reader maps the recorded config to RunConfig; an older or
  // hand-edited trace has none this version can read.
  if (trace.config) return trace.config;
  if (why && !trace.strategy.empty()) *why = tr("the trace has no config this version can read");
  return std::nullopt;
}

void Inspection::show(ShownRun run) {
  const bool live = run.live();
  m_run = std::move(run);
  // Another run on screen ends compare mode (pinning shows its first run, then pins).
  if (!m_compared.empty()) {
    m_compared.clear();
    emit comparedChanged();
  }
  setCursor(std::nullopt);
  emit runShown();
  emit historyShown(m_run.historyRow);
  refresh(!live);
}

void Inspection::finishRun(bool ok, const QString& error, const RunResult* result) {
  m_run.done = true;
  m_run.ok = ok;
  m_run.error = error;
  m_run.result = result;
  emit runFinished();
}

void Inspection::setHistoryRow(int row) {
  m_run.historyRow = row;
  emit historyShown(row);
}

void Inspection::refresh(bool now) { emit refreshed(now); }

void Inspection::setCursor(std::optional<int64_t> ns) {
  // Always announced: a page that moved its own cursor follows the shared one again.
  m_cursor = ns;
  emit cursorChanged(ns);
}

void Inspection::setRange(std::optional<TimeRange> range) {
  m_range = range;
  emit rangeChanged(range);
}

void Inspection::setSelectedRank(int rank) {
  m_rank = rank;
  emit rankSelected(rank);
}

void Inspection::setSelectedUnit(int unit) {
  m_unit = unit;
  emit unitSelected(unit);
}

void Inspection::setSelectedBucket(int bucket) {
  m_bucket = bucket;
  emit bucketSelected(bucket);
}

void Inspection::setCompared(std::vector<ComparedRun> runs) {
  if (runs.size() < 2) runs.clear();
  if (runs.empty() && m_compared.empty()) return;
  m_compared = std::move(runs);
  emit comparedChanged();
}

}  // namespace shardscope
