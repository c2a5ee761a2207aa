// A read-only reader for the pickles PyTorch's post-mortem files are
// (protocols 2-5: dicts, lists, tuples, strings, bytes, ints of any size,
// floats, bools, None, the memo). Nothing that constructs an object is run:
// GLOBAL, REDUCE, BUILD and their kin are refused by name. Bounded: nesting of
// MARKs, the size of one string or integer, the memo; every error names the
// opcode and its byte offset.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/errors.h"
#include "common/units.h"
#include "postmortem/value_tree.h"

namespace shardscope::postmortem {

// A pickle (or post-mortem JSON document) that cannot be read: "byte 42: ...".
class PostmortemFormatError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

struct PickleLimits {
  size_t max_mark_depth = 256;        // open MARKs (tuple/list/dict under construction)
  size_t max_long_bytes = 4096;       // LONG1/LONG4: a longer integer is refused
};

// What a reader may copy out of one document, in bytes. A pickle's memo lets
// a small file name one list or string from many places (60 blocks sharing
// one 100k-frame list, 10k process groups sharing one 100k-rank list), and a
// reader that copied it at each would turn under 1 MB into gigabytes. The
// tree itself shares (value_tree.h); what is copied out is charged here, and
// past kRatio times the file's size (never less than kFloor) the read stops
// with one error naming the limit, as the gzip reader's cap does.
class ExpansionBudget {
 public:
  static constexpr uint64_t kRatio = 64;
  static constexpr uint64_t kFloor = 256 * uint64_t(kMiBBytes);
  explicit ExpansionBudget(size_t source_bytes);
  // Throws PostmortemFormatError "expands past its limit: ..." when `bytes`
  // more would pass the limit (charged before they are allocated).
  void charge(uint64_t bytes);
  uint64_t limit() const { return m_limit; }
  uint64_t charged() const { return m_charged; }

 private:
  size_t m_source;
  uint64_t m_limit;
  uint64_t m_charged = 0;
};

// Reads one pickle from `bytes` (the first byte must be PROTO, 0x80). Throws
// PostmortemFormatError "byte N: <what> (<opcode>)" on anything else.
ValueTree readPickle(std::string_view bytes, const PickleLimits& limits = {});

// True when the bytes start like a pickle (0x80, a protocol from 2 to 5).
bool looksLikePickle(std::string_view bytes);
// True when the bytes start like a pickle of protocol 0 or 1 (no PROTO: a
// dict's or list's opcode first, which JSON never starts with); these are
// refused by name (PyTorch writes protocol 2 or newer).
bool looksLikeOldPickle(std::string_view bytes);

// A pickle, or else JSON (parseJsonTree: strict, nesting-limited, a key given
// twice in one object refused by its path); JSON syntax errors are
// PostmortemFormatErrors with their line and column. An empty document and a
// pickle of protocol 0 or 1 are refused as such.
ValueTree readPostmortemDocument(std::string_view bytes);

}  // namespace shardscope::postmortem
