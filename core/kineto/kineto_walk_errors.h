// Where a trace walk failed, in the words users read: the file, the byte with
// its line and column, and what was expected there. One home for the rule
// that a windowed walk's errors are never described (the whole walk runs
// again and tells its own), shared by the field walk and the event records.
#pragma once

#include <string>
#include <string_view>

#include "kineto/trace_file.h"

namespace shardscope::kineto::walk {

class WalkErrors {
 public:
  WalkErrors(const PaddedBuffer& json, const std::string& path) : json_(json), path_(path) {}

  // A windowed walk (kineto_windowed_walk.h): errors only stop it.
  bool windowed = false;
  // The whole walk has its document open: an error without a position is at
  // the input's end, not before any position was known.
  bool document_open = false;

  // Throws ConfigError "<path>: <where>: expected <what>"; `at` points into
  // the JSON, or is null.
  [[noreturn]] void fail(const char* at, const std::string& what) const;
  // A key given twice in one object.
  [[noreturn]] void failTwice(std::string_view key, const char* object) const;
  const std::string& path() const { return path_; }

 private:
  const PaddedBuffer& json_;
  const std::string& path_;
};

}  // namespace shardscope::kineto::walk
