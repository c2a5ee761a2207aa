#include "kineto/kineto_walk_errors.h"

#include "common/errors.h"
#include "kineto/kineto_parser.h"

namespace shardscope::kineto::walk {

void WalkErrors::fail(const char* at, const std::string& what) const {
  // A windowed walk's errors are never shown (the whole walk runs again and
  // reports its own), and describing the position would read the whole
  // buffer while other parts of a parallel walk edit bytes in it.
  if (windowed) throw ConfigError(path_ + ": the windowed walk stopped");
  const std::string_view text(json_.data.get(), json_.size);
  std::string where = "at the end of the input (" + std::to_string(json_.size) + " bytes)";
  if (at && static_cast<size_t>(at - json_.data.get()) < json_.size)
    where = describeOffset(text, static_cast<size_t>(at - json_.data.get()));
  else if (!at && !document_open)
    where = "in the document (no position known)";
  throw ConfigError(path_ + ": " + where + ": expected " + what);
}

void WalkErrors::failTwice(std::string_view key, const char* object) const {
  fail(key.data(), "each key once in " + std::string(object) + ", not \"" + std::string(key) +
                       "\" again (a key given twice in one JSON object is refused: which one counts is not defined)");
}

}  // namespace shardscope::kineto::walk
