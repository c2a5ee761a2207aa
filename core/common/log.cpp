#include "common/log.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

namespace shardscope {

namespace {

using Level = spdlog::level::level_enum;

constexpr std::array<std::pair<std::string_view, Level>, 6> kLevels{{{"trace", Level::trace},
                                                                      {"debug", Level::debug},
                                                                      {"info", Level::info},
                                                                      {"warn", Level::warn},
                                                                      {"error", Level::err},
                                                                      {"off", Level::off}}};

// Time, logger, level, message; no source location.
constexpr const char* kPattern = "[%Y-%m-%d %H:%M:%S.%e] [%n] [%l] %v";

// All loggers share one distributing sink, so changing the sinks is one call
// for every logger, the rank loggers made later included.
struct LogState {
  std::shared_ptr<spdlog::sinks::dist_sink_mt> sinks = std::make_shared<spdlog::sinks::dist_sink_mt>();
  spdlog::sink_ptr stderr_sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  std::atomic<Level> level{Level::warn};
  std::shared_ptr<spdlog::logger> engine, comm;
  std::mutex mutex;  // guards ranks
  std::vector<std::shared_ptr<spdlog::logger>> ranks;

  LogState() {
    stderr_sink->set_pattern(kPattern);
    sinks->add_sink(stderr_sink);
    engine = make("engine");
    comm = make("comm");
  }
  std::shared_ptr<spdlog::logger> make(std::string name) {
    auto l = std::make_shared<spdlog::logger>(std::move(name), sinks);
    l->set_level(level.load());
    l->flush_on(Level::warn);
    return l;
  }
};

LogState& state() {
  static LogState s;
  return s;
}

}  // namespace

spdlog::logger& logger(LogComponent component) {
  LogState& s = state();
  return component == LogComponent::Engine ? *s.engine : *s.comm;
}

spdlog::logger& rankLogger(int rank) {
  LogState& s = state();
  std::lock_guard lock(s.mutex);
  const auto index = static_cast<size_t>(std::max(rank, 0));
  if (s.ranks.size() <= index) s.ranks.resize(index + 1);
  if (!s.ranks[index]) s.ranks[index] = s.make("rank " + std::to_string(rank));
  return *s.ranks[index];
}

std::optional<spdlog::level::level_enum> parseLogLevel(std::string_view name) {
  for (const auto& [text, level] : kLevels)
    if (text == name) return level;
  return std::nullopt;
}

std::string logLevelName(spdlog::level::level_enum level) {
  for (const auto& [text, l] : kLevels)
    if (l == level) return std::string(text);
  return level == spdlog::level::critical ? "error" : "off";  // critical: nothing logs at it here
}

const char* logLevelNames() { return "trace, debug, info, warn, error, off"; }

void setLogLevel(spdlog::level::level_enum level) {
  LogState& s = state();
  std::lock_guard lock(s.mutex);
  s.level.store(level);
  s.engine->set_level(level);
  s.comm->set_level(level);
  for (const auto& l : s.ranks)
    if (l) l->set_level(level);
}

spdlog::level::level_enum logLevel() { return state().level.load(); }

void setLogSinks(std::vector<spdlog::sink_ptr> sinks) { state().sinks->set_sinks(std::move(sinks)); }

void addLogSink(spdlog::sink_ptr sink) { state().sinks->add_sink(std::move(sink)); }

void removeLogSink(const spdlog::sink_ptr& sink) { state().sinks->remove_sink(sink); }

spdlog::sink_ptr stderrLogSink() { return state().stderr_sink; }

spdlog::sink_ptr makeLogStreamSink(std::ostream& out) {
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out, true);
  sink->set_pattern(kPattern);
  return sink;
}

spdlog::sink_ptr makeLogFileSink(const std::string& path) {
  try {
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, true);
    sink->set_pattern(kPattern);
    return sink;
  } catch (const spdlog::spdlog_ex& e) {
    throw std::runtime_error("cannot write the log file '" + path + "': " + e.what());
  }
}

void flushLog() { state().sinks->flush(); }

}  // namespace shardscope
