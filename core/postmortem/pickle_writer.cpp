// Opcodes as CPython's pickle.py writes them for protocol 2: containers start
// empty and fill in MARK ... SETITEMS/APPENDS batches of at most 1000, ints
// take the shortest of BININT1/BININT2/BININT/LONG1, strings BINUNICODE.
#include "postmortem/pickle_writer.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

#include "postmortem/pickle_reader.h"

namespace shardscope::postmortem {

namespace {

constexpr size_t kPwBatch = 1000;  // pickle.py's _BATCHSIZE

void pwPutLe(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// LONG1 of a two's complement little-endian integer, shortest form.
void pwPutLong1(std::string& out, std::vector<uint8_t> le) {
  while (le.size() > 1 && ((le.back() == 0 && (le[le.size() - 2] & 0x80) == 0) ||
                           (le.back() == 0xff && (le[le.size() - 2] & 0x80) != 0)))
    le.pop_back();
  out.push_back(static_cast<char>(0x8a));
  out.push_back(static_cast<char>(le.size()));
  out.append(reinterpret_cast<const char*>(le.data()), le.size());
}

void pwPutInt(std::string& out, int64_t v) {
  if (v >= 0 && v <= 0xff) {
    out.push_back('K');
    pwPutLe(out, static_cast<uint64_t>(v), 1);
  } else if (v >= 0 && v <= 0xffff) {
    out.push_back('M');
    pwPutLe(out, static_cast<uint64_t>(v), 2);
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    out.push_back('J');
    pwPutLe(out, static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(v))), 4);
  } else {
    std::vector<uint8_t> le(8);
    for (int i = 0; i < 8; ++i) le[static_cast<size_t>(i)] = static_cast<uint8_t>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
    pwPutLong1(out, std::move(le));
  }
}

// A BigInt's decimal digits ("-123...") as LONG1.
void pwPutBigInt(std::string& out, std::string_view digits) {
  const bool negative = !digits.empty() && digits.front() == '-';
  if (negative) digits.remove_prefix(1);
  std::vector<uint8_t> mag;  // little-endian magnitude
  for (char c : digits) {
    if (c < '0' || c > '9') throw PostmortemFormatError("pickle writer: '" + std::string(digits.substr(0, 32)) + "' is not an integer");
    unsigned carry = static_cast<unsigned>(c - '0');
    for (uint8_t& b : mag) {
      const unsigned v = b * 10u + carry;
      b = static_cast<uint8_t>(v);
      carry = v >> 8;
    }
    while (carry) {
      mag.push_back(static_cast<uint8_t>(carry));
      carry >>= 8;
    }
  }
  mag.push_back(0);  // room for the sign bit
  if (negative) {
    unsigned carry = 1;
    for (uint8_t& b : mag) {
      const unsigned v = static_cast<uint8_t>(~b) + carry;
      b = static_cast<uint8_t>(v);
      carry = v >> 8;
    }
  }
  if (mag.size() > 255) throw PostmortemFormatError("pickle writer: an integer of more than 254 bytes");
  pwPutLong1(out, std::move(mag));
}

void pwPutFloat(std::string& out, double f) {
  uint64_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  out.push_back('G');
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));  // big-endian
}

void pwPutText(std::string& out, char op, std::string_view s) {
  out.push_back(op);  // 'X' BINUNICODE, 'B' BINBYTES: 4-byte length, then the bytes
  pwPutLe(out, s.size(), 4);
  out.append(s);
}

void pwPutValue(std::string& out, const ValueTree& t, const Value& v, int depth, int max_depth) {
  if (depth > max_depth)
    throw PostmortemFormatError("pickle writer: nested deeper than " + std::to_string(max_depth) +
                                " (a container inside itself?)");
  switch (v.kind) {
    case ValueKind::None: out.push_back('N'); return;
    case ValueKind::Bool: out.push_back(static_cast<char>(v.i ? 0x88 : 0x89)); return;
    case ValueKind::Int: pwPutInt(out, v.i); return;
    case ValueKind::BigInt: pwPutBigInt(out, t.text(v)); return;
    case ValueKind::Float: pwPutFloat(out, v.f); return;
    case ValueKind::Str: pwPutText(out, 'X', t.text(v)); return;
    case ValueKind::Bytes: pwPutText(out, 'B', t.text(v)); return;
    case ValueKind::List:
    case ValueKind::Tuple:
    case ValueKind::Dict: break;
  }
  const Container* c = t.container(v);
  const std::span<const Value> items = c ? std::span<const Value>(c->items.data(), c->items.size()) : std::span<const Value>();
  if (v.kind == ValueKind::Tuple) {
    if (items.empty()) {
      out.push_back(')');
      return;
    }
    out.push_back('(');
    for (const Value& x : items) pwPutValue(out, t, x, depth + 1, max_depth);
    out.push_back('t');
    return;
  }
  const bool dict = v.kind == ValueKind::Dict;
  out.push_back(dict ? '}' : ']');
  const size_t step = dict ? 2 : 1;
  for (size_t i = 0; i + step <= items.size(); i += kPwBatch * step) {
    out.push_back('(');
    for (size_t k = i; k < std::min(items.size(), i + kPwBatch * step); ++k) pwPutValue(out, t, items[k], depth + 1, max_depth);
    out.push_back(dict ? 'u' : 'e');
  }
}

bool pwHasBytes(const ValueTree& t, const Value& v, int depth) {
  if (v.kind == ValueKind::Bytes) return true;
  if (depth > 256) return false;
  if (const Container* c = t.container(v))
    for (const Value& x : c->items)
      if (pwHasBytes(t, x, depth + 1)) return true;
  return false;
}

}  // namespace

std::string writePickle(const ValueTree& tree, int max_depth) {
  std::string out;
  out.push_back(static_cast<char>(0x80));  // PROTO
  out.push_back(static_cast<char>(pwHasBytes(tree, tree.root, 0) ? 3 : 2));  // BINBYTES needs protocol 3
  pwPutValue(out, tree, tree.root, 0, max_depth);
  out.push_back('.');  // STOP
  return out;
}

}  // namespace shardscope::postmortem
