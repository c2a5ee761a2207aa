// Loads a trace written by writeChromeTrace() back into a RunTrace, so the GUI
// can open a saved run. Strict: any malformed input (bad JSON, truncation, wrong
// types, unknown kinds/lanes/categories) throws one TraceFormatError naming the
// file, the field (e.g. traceEvents[12].args.bucket) and what is allowed.
// Limits, each stated in its error: only regular files up to traceFileRule()'s
// cap (common/input_file.h); a key appears once in an object (the profile
// reader's rule); |ts| and dur up to 1e15 us; dur >= 0 (an op that ends before
// it begins is an error naming the event, not a sliver drawn without a word);
// pids 0..32767, metadata.ranks up to 32768; bucket and unit indices 0..32767,
// as events carry them. Numbers read here never size a container: the models
// (core/inspect) map ids densely and bound every count by the events.
#pragma once

#include <string>
#include <string_view>

#include "common/errors.h"
#include "trace/run_trace.h"

namespace shardscope {

// A bad trace file is bad user input, hence a ConfigError (exit code 2 in the CLI).
class TraceFormatError : public ConfigError {
 public:
  // field may be empty (whole-file problems such as a JSON syntax error).
  TraceFormatError(const std::string& source, const std::string& field, const std::string& what);
  const std::string& source() const { return m_source; }
  const std::string& field() const { return m_field; }

 private:
  std::string m_source;
  std::string m_field;
};

RunTrace readChromeTraceFile(const std::string& path);
// Parses trace JSON held in memory; source names it in error messages.
RunTrace readChromeTrace(std::string_view json, const std::string& source);

}  // namespace shardscope
