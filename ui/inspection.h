// What every page of the window looks at: the run's events (one EventStore),
// the run on screen (where it came from, its label and config), the shared
// cursor, the selected time range and the selected rank, unit and bucket.
// Pages subscribe to its signals; nobody fans changes out by hand.
#pragma once

#include <QObject>
#include <QString>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/run_config.h"
#include "inspect/event_store.h"
#include "inspect/run_comparison.h"

namespace shardscope {

struct RunResult;
struct RunTrace;
namespace kineto {
struct JobAnalysis;
}
struct SnapshotSet;
struct MemoryTimelineFile;

using TimeRange = std::pair<int64_t, int64_t>;  // [begin, end] ns since run start

// The run whose events the store holds, described once.
struct ShownRun {
  enum class Kind { None, Live, History, File };
  Kind kind = Kind::None;
  QString source;  // "live run", the opened file's name, "run 2: ddp · 4 ranks", …
  QString label;   // "zero3 · 8 ranks", or ""
  QString preset;  // the preset it belongs to, or ""
  QString runOf;   // "run 2 of 3", or ""
  std::optional<RunConfig> config;  // when it was run here or its trace's flags could be read
  bool done = false;  // it ended (a live run: finished, failed or was stopped)
  bool ok = false;    // it ended without an error
  QString error;      // why it failed ("" otherwise)
  const RunResult* result = nullptr;  // its measurements, when kept (owned by the bridge or the Runs table)
  int historyRow = -1;  // its row in the Runs table, -1 while it has none (a live run)
  std::shared_ptr<const kineto::JobAnalysis> hta;  // an imported PyTorch job's analyses, as core computed them
  std::shared_ptr<const SnapshotSet> snapshots;     // opened PyTorch memory snapshots (the store is then empty)
  std::shared_ptr<const MemoryTimelineFile> memory_timeline;  // an opened profiler memory timeline (store empty)
  bool live() const { return kind == Kind::Live; }
};

class Inspection : public QObject {
  Q_OBJECT
 public:
  explicit Inspection(QObject* parent = nullptr);

  EventStore& store() { return m_store; }
  const EventStore& store() const { return m_store; }

  const ShownRun& run() const { return m_run; }
  // The one accessor for the shown run's config (nullptr when unknown).
  const RunConfig* runConfig() const { return m_run.config ? &*m_run.config : nullptr; }
  // The clock and hardware profile the shown run's times were taken on.
  bool modeledClock() const;
  std::string clockProfile() const;
  // The config a trace records (its flags), or nullopt with the reason in *why.
  static std::optional<RunConfig> recordedConfig(const RunTrace& trace, QString* why);

  // A new run on screen: clears the cursor, then runShown(), then refreshes
  // every page (at once unless it is live).
  void show(ShownRun run);
  // The live run ended: ok, or stopped by error (empty: cancelled); result: what it measured.
  void finishRun(bool ok, const QString& error, const RunResult* result);
  // The run on screen got its row in the Runs table (historyShown() follows).
  void setHistoryRow(int row);
  // A live run completed a training step.
  void noteProgress() { emit progressed(); }
  // The store changed; now: skip the pages' throttles.
  void refresh(bool now);

  std::optional<int64_t> cursor() const { return m_cursor; }
  void setCursor(std::optional<int64_t> ns);
  std::optional<TimeRange> range() const { return m_range; }
  void setRange(std::optional<TimeRange> range);
  int selectedRank() const { return m_rank; }
  int selectedUnit() const { return m_unit; }
  int selectedBucket() const { return m_bucket; }
  void setSelectedRank(int rank);
  void setSelectedUnit(int unit);
  void setSelectedBucket(int bucket);

  // Compare mode: the runs pinned side by side (two or more), or none. The
  // store keeps the first of them for the pages that show one run.
  const std::vector<ComparedRun>& compared() const { return m_compared; }
  bool comparing() const { return m_compared.size() >= 2; }
  // Fewer than two runs end compare mode.
  void setCompared(std::vector<ComparedRun> runs);

 signals:
  void comparedChanged();
  void runShown();
  void runFinished();  // the live run on screen ended
  void historyShown(int row);  // the run on screen is this row of the Runs table (-1: none)
  void progressed();
  void refreshed(bool now);
  void cursorChanged(std::optional<int64_t> ns);
  void rangeChanged(std::optional<TimeRange> range);
  void rankSelected(int rank);
  void unitSelected(int unit);
  void bucketSelected(int bucket);

 private:
  EventStore m_store;
  ShownRun m_run;
  std::optional<int64_t> m_cursor;
  std::optional<TimeRange> m_range;
  int m_rank = 0;
  int m_unit = -1;
  int m_bucket = -1;
  std::vector<ComparedRun> m_compared;
};

}  // namespace shardscope
