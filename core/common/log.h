// The run's log (spdlog): one logger per component — "engine", "comm" — and
// one per rank ("rank 3"), all writing to one set of sinks at one level. The
// default is warn to stderr; the CLI and the GUI set the level and sinks from
// --log-level / --log-file, and the GUI adds its log dock's sink.
//
// Log with SPDLOG_LOGGER_INFO(&logger(LogComponent::Engine), "...", args) or
// guard with should_log(): a disabled level then costs one branch. Nothing
// here is for per-event or per-element paths.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// Every SPDLOG_LOGGER_* call is compiled in; the level set at run time filters.
// This header is the one way into spdlog, so the setting always comes first.
#ifndef SPDLOG_ACTIVE_LEVEL
#define SPDLOG_ACTIVE_LEVEL SPDLOG_LEVEL_TRACE
#endif
#include <spdlog/sinks/sink.h>
#include <spdlog/spdlog.h>
#if SPDLOG_ACTIVE_LEVEL != SPDLOG_LEVEL_TRACE
#error "include common/log.h before any spdlog header"
#endif

namespace shardscope {

enum class LogComponent { Engine, Comm };

spdlog::logger& logger(LogComponent component);
// Created on first use, at the current level.
spdlog::logger& rankLogger(int rank);

// "trace", "debug", "info", "warn", "error", "off"; nullopt for anything else.
std::optional<spdlog::level::level_enum> parseLogLevel(std::string_view name);
// The --log-level name of a level (parseLogLevel's inverse).
std::string logLevelName(spdlog::level::level_enum level);
// The accepted names, for error messages: "trace, debug, info, warn, error, off".
const char* logLevelNames();

void setLogLevel(spdlog::level::level_enum level);
spdlog::level::level_enum logLevel();

// Every logger writes to these. The stderr sink is there from the start;
// replacing the sinks drops it unless it is passed again.
void setLogSinks(std::vector<spdlog::sink_ptr> sinks);
void addLogSink(spdlog::sink_ptr sink);
// After it returns the sink is called no more.
void removeLogSink(const spdlog::sink_ptr& sink);
spdlog::sink_ptr stderrLogSink();
// A sink writing to `out` (flushed after each line), as stderr's looks.
spdlog::sink_ptr makeLogStreamSink(std::ostream& out);
// A file sink (truncates FILE); throws std::runtime_error naming the file.
// Written in place, line by line; a failed write is kept, not thrown.
spdlog::sink_ptr makeLogFileSink(const std::string& path);
// "PATH: cannot write: <errno text>" for the first log file sink (alive) whose write failed; "" if none.
std::string logFileFailure();
void flushLog();

}  // namespace shardscope
