#include "common/log.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/sinks/base_sink.h>
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

namespace {
// The log file, written line by line in place (a journal: what a killed
// process logged stays), each write checked: the first failure (a full disk,
// /dev/full, ulimit -f) is kept for logFileFailure(); spdlog's own file sink
// reports it to stderr and carries on, and the command exited 0.
class CheckedFileSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit CheckedFileSink(const std::string& path) : m_path(path) {
    m_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOCTTY | O_CLOEXEC, 0644);
    if (m_fd < 0) throw std::runtime_error("cannot write the log file '" + path + "': " + std::strerror(errno));
    // A zero-byte write changes nothing, yet a device that takes no data (/dev/full) refuses it.
    if (::write(m_fd, "", 0) < 0) {
      const int error = errno;
      ::close(m_fd);
      throw std::runtime_error("cannot write the log file '" + path + "': " + std::strerror(error));
    }
  }
  ~CheckedFileSink() override {
    if (m_fd >= 0) ::close(m_fd);
  }
  std::string failure() {
    std::lock_guard lock(mutex_);
    return m_failure;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (!m_failure.empty()) return;
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
      const ssize_t n = ::write(m_fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        m_failure = m_path + ": cannot write: " + std::strerror(n < 0 ? errno : EIO);
        return;
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  void flush_() override {}

 private:
  std::string m_path;
  int m_fd = -1;
  std::string m_failure;
};

std::mutex g_fileSinksMutex;
std::vector<std::weak_ptr<CheckedFileSink>> g_fileSinks;  // for logFileFailure
}  // namespace

spdlog::sink_ptr makeLogFileSink(const std::string& path) {
  auto sink = std::make_shared<CheckedFileSink>(path);
  sink->set_pattern(kPattern);
  std::lock_guard lock(g_fileSinksMutex);
  g_fileSinks.push_back(sink);
  return sink;
}

std::string logFileFailure() {
  std::lock_guard lock(g_fileSinksMutex);
  for (const auto& weak : g_fileSinks)
    if (const auto sink = weak.lock())
      if (std::string f = sink->failure(); !f.empty()) return f;
  return {};
}

void flushLog() { state().sinks->flush(); }

}  // namespace shardscope
