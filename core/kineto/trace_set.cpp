#include "kineto/trace_set.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "common/errors.h"
#include "kineto/kineto_json_reader.h"
#include "kineto/kineto_parser.h"

namespace shardscope::kineto {

namespace fs = std::filesystem;

namespace {

bool isTraceName(const std::string& name) {
  const auto ends = [&](const char* s) {
    const std::string suffix(s);
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends(".json") || ends(".json.gz");
}

}  // namespace

bool looksLikeKinetoJson(std::string_view head) {
  const size_t first = head.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && head[first] == '[') return true;  // the autograd profiler's bare array
  for (const char* mark : {"\"schemaVersion\"", "\"distributedInfo\"", "\"deviceProperties\"", "\"cpu_op\"",
                           "\"kernel\"", "\"cuda_runtime\"", "\"user_annotation\"", "\"python_function\"",
                           "\"gpu_memcpy\"", "\"baseTimeNanoseconds\""})
    if (head.find(mark) != std::string_view::npos) return true;
  return false;
}

std::vector<std::string> expandTraceInputs(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::directory_iterator(in, ec))
        if (isTraceName(entry.path().filename().string())) found.push_back(entry.path().string());
      if (ec) throw ConfigError(in + ": cannot list the folder: " + ec.message());
      if (found.empty()) throw ConfigError(in + ": no .json or .json.gz trace files in this folder");
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(in);
    }
  }
  return files;
}

namespace {

std::string whoOfRank(const RankTrace& t) { return "rank " + std::to_string(t.rank) + " (" + t.path + ")"; }

std::string spreadText(uint64_t ns) {
  char s[64];
  const double h = double(ns) / 3.6e12;
  if (h >= 48) std::snprintf(s, sizeof s, "%.1f days", h / 24);
  else std::snprintf(s, sizeof s, "%.1f hours", h);
  return s;
}

}  // namespace

std::vector<std::string> oneJobConflicts(const std::vector<RankTrace>& ranks, const std::vector<int64_t>& start_ns) {
  std::vector<std::string> out;
  const RankTrace* world = nullptr;  // the first trace stating a world size
  std::map<std::string, const RankTrace*> group_owner;  // pg_name -> the first trace stating its size
  std::map<std::string, int32_t> group_size;
  size_t earliest = ranks.size(), latest = ranks.size();
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankTrace& t = ranks[i];
    if (t.world_size > 0) {
      if (!world) world = &t;
      else if (t.world_size != world->world_size)
        out.push_back(whoOfRank(t) + ": distributedInfo.world_size " + std::to_string(t.world_size) + ", but " +
                      whoOfRank(*world) + " says " + std::to_string(world->world_size) +
                      ": one job's ranks state one world size");
    }
    for (const ProcessGroupConfig& pg : t.process_groups) {
      if (pg.size <= 0) continue;
      const auto [it, fresh] = group_size.try_emplace(pg.name, pg.size);
      if (fresh) group_owner[pg.name] = &t;
      else if (it->second != pg.size)
        out.push_back(whoOfRank(t) + ": distributedInfo.pg_config group \"" + pg.name + "\" has " +
                      std::to_string(pg.size) + " ranks, but " + whoOfRank(*group_owner[pg.name]) + " says " +
                      std::to_string(it->second) + ": one job's ranks give a process group one size");
    }
    if (i < start_ns.size() && start_ns[i] != INT64_MAX) {
      if (earliest == ranks.size() || start_ns[i] < start_ns[earliest]) earliest = i;
      if (latest == ranks.size() || start_ns[i] > start_ns[latest]) latest = i;
    }
  }
  // Unsigned: the spread of two int64 times does not fit an int64 when a file's times are wild.
  const uint64_t spread = earliest == ranks.size() ? 0 : uint64_t(start_ns[latest]) - uint64_t(start_ns[earliest]);
  if (spread > uint64_t(kOneJobMaxStartSpreadNs))
    out.push_back(whoOfRank(ranks[latest]) + " starts " + spreadText(spread) + " after " + whoOfRank(ranks[earliest]) +
                  ": one job's ranks start their profiles within an hour of each other");
  return out;
}

TraceSet loadTraceSet(const std::vector<std::string>& inputs, const TraceSetOptions& options) {
  const std::vector<std::string> files = expandTraceInputs(inputs);
  if (files.empty()) throw ConfigError("no trace files given");
  for (const auto& [path, rank] : options.rank_of)
    if (std::find(files.begin(), files.end(), path) == files.end())
      throw ConfigError("--rank-of " + path + "=" + std::to_string(rank) + ": that file is not among the inputs");

  std::vector<RankTrace> traces(files.size());
  std::vector<TraceIndex> indexes(files.size());
  std::vector<std::exception_ptr> errors(files.size());
  std::atomic<size_t> next{0};
  std::mutex progress_mutex;
  const auto say = [&](const std::string& line) {
    if (!options.progress) return;
    std::lock_guard<std::mutex> lock(progress_mutex);
    options.progress(line);
  };
  const auto work = [&] {
    // One read buffer (for a .gz) and one JSON parser per worker, reused
    // from file to file: their pages are touched once, not once per file.
    const ReuseKinetoParser reuse_parser;
    // Several files load at once: each walk keeps to its thread. One file
    // alone walks on every core (kinetoWalkThreads).
    std::optional<SerialKinetoWalk> serial;
    if (files.size() > 1) serial.emplace();
    PaddedBuffer json;
    for (size_t i; (i = next.fetch_add(1)) < files.size();) {
      try {
        if (options.cancelled && options.cancelled()) throw CancelledLoad();
        const auto start = std::chrono::steady_clock::now();
        traces[i] = loadKinetoFile(files[i], options.max_bytes, &json);
        indexes[i] = buildTraceIndex(traces[i]);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        char line[512];
        std::snprintf(line, sizeof line, "read %s: %.1f MB of JSON, %zu events in %.2f s", files[i].c_str(),
                      double(traces[i].json_bytes) / 1e6, traces[i].events.size(), s);
        if (traces[i].json_bytes >= options.progress_min_bytes) say(line);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  unsigned n = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  n = static_cast<unsigned>(std::min<size_t>(n, files.size()));
  std::vector<std::thread> pool;
  for (unsigned k = 1; k < n; ++k) pool.emplace_back(work);
  work();
  for (std::thread& th : pool) th.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);

  std::map<int, size_t> by_rank;
  bool lone_rankless = false;
  for (size_t i = 0; i < files.size(); ++i) {
    RankTrace& t = traces[i];
    const auto given = options.rank_of.find(files[i]);
    if (given != options.rank_of.end()) {
      t.rank = given->second;
      t.rank_from_metadata = false;
    } else if (!t.rank_from_metadata && files.size() == 1) {
      t.rank = 0;  // the job's only file: its rank 0, in the window and in `analyze` alike
      lone_rankless = true;
    } else if (!t.rank_from_metadata) {
      throw ConfigError(files[i] + ": no distributedInfo.rank in the trace; say which rank it is with --rank-of " +
                        files[i] + "=R");
    }
    const auto [it, fresh] = by_rank.emplace(t.rank, i);
    if (!fresh)
      throw ConfigError(files[i] + ": rank " + std::to_string(t.rank) + " again (also " + files[it->second] +
                        "); give each file its own rank with --rank-of FILE=R");
  }
  TraceSet set;
  set.origin_ns = INT64_MAX;
  std::vector<int64_t> starts;
  for (const auto& [rank, i] : by_rank) {
    int64_t start = INT64_MAX;
    for (const TraceEvent& e : traces[i].events)
      if (e.has(kHasTs)) start = std::min(start, traces[i].absoluteNs(e.ts_ns));
    starts.push_back(start);
    set.origin_ns = std::min(set.origin_ns, start);
    set.ranks.push_back(std::move(traces[i]));
    set.indexes.push_back(std::move(indexes[i]));
  }
  if (set.origin_ns == INT64_MAX) set.origin_ns = 0;
  std::vector<std::string> conflicts = oneJobConflicts(set.ranks, starts);
  if (!conflicts.empty() && !options.merge_unrelated)
    throw ConfigError(conflicts.front() + "; these files cannot be one job's ranks: open them apart, or merge them " +
                      "anyway with --merge-unrelated (then each conflict is a warning)");
  for (const std::string& c : conflicts) set.notes.push_back("warning: " + c + " (merged anyway: --merge-unrelated)");
  if (lone_rankless)
    set.notes.push_back("note: " + files.front() + " has no distributedInfo.rank: read as rank 0, the job's only file " +
                        "(--rank-of " + files.front() + "=R says another)");
  return set;
}

}  // namespace shardscope::kineto
