// The pickle machine, reduced to the opcodes that build plain data. The value
// stack holds Values; MARK positions sit on their own stack (bounded); the
// memo maps indices to Values, so a memoized container is the same container
// wherever it is fetched, as in Python.
#include "postmortem/pickle_reader.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "common/units.h"

namespace shardscope::postmortem {

namespace {

const char* pickleOpName(uint8_t op) {
  switch (op) {
    case 'c': return "GLOBAL";
    case 0x93: return "STACK_GLOBAL";
    case 'R': return "REDUCE";
    case 'i': return "INST";
    case 'o': return "OBJ";
    case 0x81: return "NEWOBJ";
    case 0x92: return "NEWOBJ_EX";
    case 'b': return "BUILD";
    case 0x82: return "EXT1";
    case 0x83: return "EXT2";
    case 0x84: return "EXT4";
    case 'P': return "PERSID";
    case 'Q': return "BINPERSID";
    case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    case 0x8f: return "EMPTY_SET";
    case 0x90: return "ADDITEMS";
    case 0x91: return "FROZENSET";
    case 'I': return "INT";
    case 'L': return "LONG";
    case 'F': return "FLOAT";
    case 'S': return "STRING";
    case 'V': return "UNICODE";
    case 'p': return "PUT";
    case 'g': return "GET";
    case 'l': return "LIST";
    case 'd': return "DICT";
    default: return nullptr;
  }
}

bool pickleOpConstructs(uint8_t op) {
  switch (op) {
    case 'c': case 0x93: case 'R': case 'i': case 'o': case 0x81: case 0x92: case 'b':
    case 0x82: case 0x83: case 0x84: case 'P': case 'Q': case 0x97: case 0x98:
      return true;
    default:
      return false;
  }
}

// Decimal digits of a little-endian two's complement integer (LONG1/LONG4).
std::string pickleLongDecimal(const uint8_t* p, size_t n) {
  std::vector<uint8_t> mag(p, p + n);
  const bool negative = n > 0 && (p[n - 1] & 0x80) != 0;
  if (negative) {  // magnitude = two's complement negation
    unsigned carry = 1;
    for (uint8_t& b : mag) {
      const unsigned v = static_cast<uint8_t>(~b) + carry;
      b = static_cast<uint8_t>(v);
      carry = v >> 8;
    }
  }
  std::string digits;
  size_t top = mag.size();
  while (top > 0 && mag[top - 1] == 0) --top;
  while (top > 0) {  // divide by 10^9, most significant byte first
    uint64_t rem = 0;
    for (size_t i = top; i-- > 0;) {
      const uint64_t cur = (rem << 8) | mag[i];
      mag[i] = static_cast<uint8_t>(cur / 1000000000u);
      rem = cur % 1000000000u;
    }
    while (top > 0 && mag[top - 1] == 0) --top;
    std::string chunk = std::to_string(rem);
    if (top > 0) chunk.insert(0, 9 - chunk.size(), '0');
    digits.insert(0, chunk);
  }
  if (digits.empty()) digits = "0";
  if (negative) digits.insert(0, "-");
  return digits;
}

class PickleMachine {
 public:
  PickleMachine(std::string_view bytes, const PickleLimits& limits) : m_bytes(bytes), m_limits(limits) {}

  ValueTree run() {
    // A snapshot spends about 50 bytes a container (a trace entry's dict); growing
    // the list instead moves it a dozen times. Capacity only: no page is touched.
    m_tree.reserveContainers(std::min<size_t>(m_bytes.size() / 48, size_t(1) << 22));
    m_memo.reserve(std::min<size_t>(m_bytes.size() / 48, size_t(1) << 22));  // the memo holds every container too
    if (!looksLikePickle(m_bytes))
      fail(0, "not a pickle: it must start with PROTO (0x80) and a protocol from 2 to 5");
    while (true) {
      if (m_pos >= m_bytes.size()) fail(m_pos, "the pickle ends before its STOP opcode (a truncated file?)");
      const size_t at = m_pos;
      const uint8_t op = byte();
      switch (op) {
        case 0x80: {  // PROTO
          const uint8_t proto = byte();
          if (proto > 5) fail(at, "protocol " + std::to_string(proto) + " is newer than 5 (PROTO)");
          break;
        }
        case 0x95: {  // FRAME: a length hint; the opcodes inside are read as they come
          const uint64_t n = le(8, at, "FRAME");
          if (n > m_bytes.size() - m_pos) fail(at, "a FRAME of " + std::to_string(n) + " bytes runs past the end (FRAME)");
          break;
        }
        case '}': push(m_tree.addContainer(ValueKind::Dict)); break;
        case ']': push(m_tree.addContainer(ValueKind::List)); break;
        case ')': push(m_tree.addContainer(ValueKind::Tuple)); break;
        case '(':
          if (m_marks.size() >= m_limits.max_mark_depth)
            fail(at, "MARKs nest deeper than " + std::to_string(m_limits.max_mark_depth) + " (MARK)");
          m_marks.push_back(m_stack.size());
          break;
        case '1': popMark(at, "POP_MARK"); m_stack.resize(m_markBase); break;
        case '0': pop(at, "POP"); break;
        case '2': { const Value v = top(at, "DUP"); push(v); break; }
        case 's': {  // SETITEM
          if (m_stack.size() < 3 + stackFloor()) fail(at, "SETITEM needs a dict, a key and a value on the stack");
          const Value value = m_stack.back(); m_stack.pop_back();
          const Value key = m_stack.back(); m_stack.pop_back();
          Container& d = dictAt(m_stack.back(), at, "SETITEM");
          d.items.push_back(key);
          d.items.push_back(value);
          break;
        }
        case 'u': {  // SETITEMS
          popMark(at, "SETITEMS");
          if ((m_stack.size() - m_markBase) % 2 != 0) fail(at, "SETITEMS has a key without a value (SETITEMS)");
          if (m_markBase == 0 || m_markBase <= stackFloor()) fail(at, "SETITEMS has no dict below its MARK (SETITEMS)");
          Container& d = dictAt(m_stack[m_markBase - 1], at, "SETITEMS");
          d.items.insert(d.items.end(), m_stack.begin() + static_cast<std::ptrdiff_t>(m_markBase), m_stack.end());
          m_stack.resize(m_markBase);
          break;
        }
        case 'a': {  // APPEND
          if (m_stack.size() < 2 + stackFloor()) fail(at, "APPEND needs a list and an item on the stack");
          const Value item = m_stack.back(); m_stack.pop_back();
          listAt(m_stack.back(), at, "APPEND").items.push_back(item);
          break;
        }
        case 'e': {  // APPENDS
          popMark(at, "APPENDS");
          if (m_markBase == 0 || m_markBase <= stackFloor()) fail(at, "APPENDS has no list below its MARK (APPENDS)");
          Container& l = listAt(m_stack[m_markBase - 1], at, "APPENDS");
          l.items.insert(l.items.end(), m_stack.begin() + static_cast<std::ptrdiff_t>(m_markBase), m_stack.end());
          m_stack.resize(m_markBase);
          break;
        }
        case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
          const size_t n = op - 0x84u;
          if (m_stack.size() < n + stackFloor()) fail(at, "TUPLE" + std::to_string(n) + " needs " + std::to_string(n) + " items on the stack");
          tupleFrom(m_stack.size() - n);
          break;
        }
        case 't': popMark(at, "TUPLE"); tupleFrom(m_markBase); break;
        case 'J': pushInt(static_cast<int32_t>(static_cast<uint32_t>(le(4, at, "BININT")))); break;
        case 'K': pushInt(byte()); break;
        case 'M': pushInt(static_cast<int64_t>(le(2, at, "BININT2"))); break;
        case 0x8a: { const size_t n = byte(); pushLong(take(n, at, "LONG1"), n, at, "LONG1"); break; }
        case 0x8b: {
          const uint64_t n = le(4, at, "LONG4");
          if (n > 0x7fffffffu) fail(at, "a negative length (LONG4)");
          pushLong(take(n, at, "LONG4"), n, at, "LONG4");
          break;
        }
        case 'G': {  // BINFLOAT: big-endian
          const uint8_t* p = take(8, at, "BINFLOAT");
          uint64_t bits = 0;
          for (int i = 0; i < 8; ++i) bits = (bits << 8) | p[i];
          Value v;
          v.kind = ValueKind::Float;
          std::memcpy(&v.f, &bits, sizeof bits);
          push(v);
          break;
        }
        case 0x8c: text(ValueKind::Str, byte(), at, "SHORT_BINUNICODE"); break;
        case 'X': text(ValueKind::Str, le(4, at, "BINUNICODE"), at, "BINUNICODE"); break;
        case 0x8d: text(ValueKind::Str, le(8, at, "BINUNICODE8"), at, "BINUNICODE8"); break;
        case 'U': text(ValueKind::Bytes, byte(), at, "SHORT_BINSTRING"); break;
        case 'T': text(ValueKind::Bytes, le(4, at, "BINSTRING"), at, "BINSTRING"); break;
        case 'C': text(ValueKind::Bytes, byte(), at, "SHORT_BINBYTES"); break;
        case 'B': text(ValueKind::Bytes, le(4, at, "BINBYTES"), at, "BINBYTES"); break;
        case 0x8e: text(ValueKind::Bytes, le(8, at, "BINBYTES8"), at, "BINBYTES8"); break;
        case 0x96: text(ValueKind::Bytes, le(8, at, "BYTEARRAY8"), at, "BYTEARRAY8"); break;
        case 'N': push(Value{}); break;
        case 0x88: case 0x89: {
          Value v;
          v.kind = ValueKind::Bool;
          v.i = op == 0x88 ? 1 : 0;
          push(v);
          break;
        }
        case 0x94: memoPut(m_memoNext, at, "MEMOIZE"); break;
        case 'q': memoPut(byte(), at, "BINPUT"); break;
        case 'r': memoPut(le(4, at, "LONG_BINPUT"), at, "LONG_BINPUT"); break;
        case 'h': memoGet(byte(), at, "BINGET"); break;
        case 'j': memoGet(le(4, at, "LONG_BINGET"), at, "LONG_BINGET"); break;
        case '.': {  // STOP
          if (!m_marks.empty()) fail(at, "STOP with a MARK still open (STOP)");
          if (m_stack.size() != 1) fail(at, "STOP needs exactly one value on the stack, found " + std::to_string(m_stack.size()) + " (STOP)");
          m_tree.root = m_stack.back();
          return std::move(m_tree);
        }
        default: {
          const char* name = pickleOpName(op);
          if (name != nullptr && pickleOpConstructs(op))
            fail(at, std::string("refused opcode ") + name +
                         ": this pickle constructs Python objects, and ShardScope reads only plain data "
                         "(dicts, lists, strings, numbers) from PyTorch's memory snapshots and flight-recorder dumps");
          if (name != nullptr) fail(at, std::string("opcode ") + name + " is not among those PyTorch's dumps use");
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02x", op);
          fail(at, std::string("unknown opcode ") + hex);
        }
      }
    }
  }

 private:
  [[noreturn]] void fail(size_t at, const std::string& what) const {
    throw PostmortemFormatError("byte " + std::to_string(at) + ": " + what);
  }
  uint8_t byte() {
    if (m_pos >= m_bytes.size()) fail(m_pos, "the pickle ends inside an opcode's argument (a truncated file?)");
    return static_cast<uint8_t>(m_bytes[m_pos++]);
  }
  const uint8_t* take(uint64_t n, size_t at, const char* op) {
    if (n > m_bytes.size() - m_pos)
      fail(at, "an argument of " + std::to_string(n) + " bytes runs past the end of the file (" + op + ")");
    const auto* p = reinterpret_cast<const uint8_t*>(m_bytes.data() + m_pos);
    m_pos += n;
    return p;
  }
  uint64_t le(int n, size_t at, const char* op) {
    const uint8_t* p = take(static_cast<uint64_t>(n), at, op);
    uint64_t v = 0;
    for (int i = n; i-- > 0;) v = (v << 8) | p[i];
    return v;
  }
  // Items below the innermost MARK belong to an outer construction.
  size_t stackFloor() const { return m_marks.empty() ? 0 : m_marks.back(); }
  void push(const Value& v) { m_stack.push_back(v); }
  void pushInt(int64_t i) {
    Value v;
    v.kind = ValueKind::Int;
    v.i = i;
    push(v);
  }
  void pushLong(const uint8_t* p, uint64_t n, size_t at, const char* op) {
    if (n > m_limits.max_long_bytes)
      fail(at, "an integer of " + std::to_string(n) + " bytes, more than the " + std::to_string(m_limits.max_long_bytes) +
                   " a dump's integers need (" + op + ")");
    bool fits = true;  // the bytes past 8 only repeat the sign
    if (n > 8) {
      const uint8_t sign = (p[7] & 0x80) != 0 ? 0xff : 0x00;
      for (uint64_t i = 8; i < n && fits; ++i) fits = p[i] == sign;
    }
    if (!fits) {
      push(m_tree.addText(ValueKind::BigInt, pickleLongDecimal(p, n)));
      return;
    }
    const uint64_t used = n < 8 ? n : 8;
    uint64_t u = 0;
    for (uint64_t i = used; i-- > 0;) u = (u << 8) | p[i];
    if (used > 0 && used < 8 && (p[used - 1] & 0x80) != 0) u |= ~uint64_t(0) << (8 * used);  // sign-extend
    pushInt(static_cast<int64_t>(u));
  }
  void text(ValueKind kind, uint64_t n, size_t at, const char* op) {
    if (n > 0xffffffffu) fail(at, "a string of " + std::to_string(n) + " bytes, over the 4 GiB a string may have (" + op + ")");
    const uint8_t* p = take(n, at, op);
    push(m_tree.addText(kind, std::string_view(reinterpret_cast<const char*>(p), n)));
  }
  Value top(size_t at, const char* op) const {
    if (m_stack.size() <= stackFloor()) fail(at, std::string("the stack is empty (") + op + ")");
    return m_stack.back();
  }
  void pop(size_t at, const char* op) {
    (void)top(at, op);
    m_stack.pop_back();
  }
  void popMark(size_t at, const char* op) {
    if (m_marks.empty()) fail(at, std::string("no MARK is open (") + op + ")");
    m_markBase = m_marks.back();
    m_marks.pop_back();
  }
  Container& dictAt(const Value& v, size_t at, const char* op) {
    if (v.kind != ValueKind::Dict)
      fail(at, std::string("expects a dict, found a ") + std::string(valueKindName(v.kind)) + " (" + op + ")");
    return m_tree.container(v);
  }
  Container& listAt(const Value& v, size_t at, const char* op) {
    if (v.kind != ValueKind::List)
      fail(at, std::string("expects a list, found a ") + std::string(valueKindName(v.kind)) + " (" + op + ")");
    return m_tree.container(v);
  }
  void tupleFrom(size_t first) {
    const Value t = m_tree.addContainer(ValueKind::Tuple);
    m_tree.container(t).items.assign(m_stack.begin() + static_cast<std::ptrdiff_t>(first), m_stack.end());
    m_stack.resize(first);
    push(t);
  }
  void memoPut(uint64_t index, size_t at, const char* op) {
    const Value v = top(at, op);
    // A real memo never has more entries than the file has bytes.
    if (index >= m_bytes.size()) fail(at, "memo index " + std::to_string(index) + " is beyond any this file can fill (" + op + ")");
    if (index >= m_memo.size()) m_memo.resize(index + 1);
    m_memo[index] = v;
    m_memoSet.resize(m_memo.size(), false);
    m_memoSet[index] = true;
    if (index >= m_memoNext) m_memoNext = index + 1;
  }
  void memoGet(uint64_t index, size_t at, const char* op) {
    if (index >= m_memo.size() || !m_memoSet[index])
      fail(at, "memo index " + std::to_string(index) + " was never stored (" + op + ")");
    push(m_memo[index]);
  }

  std::string_view m_bytes;
  PickleLimits m_limits;
  size_t m_pos = 0;
  ValueTree m_tree;
  std::vector<Value> m_stack;
  std::vector<size_t> m_marks;
  size_t m_markBase = 0;  // the stack size at the MARK popMark just closed
  std::vector<Value, HugeAllocator<Value>> m_memo;
  std::vector<bool> m_memoSet;
  uint64_t m_memoNext = 0;
};

}  // namespace

namespace {

// Protocols 0 and 1 have no PROTO opcode: they start with an opcode JSON never
// starts with (MARK, EMPTY_DICT, EMPTY_LIST, GLOBAL, NONE, INT, STRING...) and
// end with STOP ('.').
// The rule behind refusing a key twice, in the Kineto reader's words.
constexpr const char* kPickleJsonRepeatedKeyRule =
    "a key given twice in one JSON object is refused: which one counts is not defined";

bool pickleLooksLikeProtocol0or1(std::string_view bytes) {
  return bytes.size() >= 2 && std::string_view("(}])cNIFLSVJK").find(bytes.front()) != std::string_view::npos &&
         bytes.back() == '.';
}

}  // namespace

bool looksLikeOldPickle(std::string_view bytes) {
  return bytes.size() >= 2 && (bytes[0] == '(' || bytes[0] == '}' || bytes[0] == ']');
}

bool looksLikePickle(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<uint8_t>(bytes[0]) == 0x80 && static_cast<uint8_t>(bytes[1]) >= 2 &&
         static_cast<uint8_t>(bytes[1]) <= 5;
}

ValueTree readPickle(std::string_view bytes, const PickleLimits& limits) {
  ValueTree t = PickleMachine(bytes, limits).run();
  t.source_bytes = bytes.size();
  t.indexKeys();
  return t;
}

ExpansionBudget::ExpansionBudget(size_t source_bytes)
    : m_source(source_bytes), m_limit(std::max<uint64_t>(kFloor, kRatio * static_cast<uint64_t>(source_bytes))) {}

void ExpansionBudget::charge(uint64_t bytes) {
  if (bytes <= m_limit - m_charged) {
    m_charged += bytes;
    return;
  }
  throw PostmortemFormatError(
      "expands past its limit: reading it would copy more than " + wholeMiBText(m_limit) + " out of a " +
      std::to_string(m_source) + "-byte file (the limit is " + std::to_string(kRatio) +
      " times the file's size, at least " + wholeMiBText(kFloor) +
      "): it names one list or string from many places (a pickle's memo) far more often than a file PyTorch writes");
}

ValueTree readPostmortemDocument(std::string_view bytes) {
  if (!bytes.empty() && static_cast<uint8_t>(bytes[0]) == 0x80) return readPickle(bytes);
  if (bytes.find_first_not_of(" \t\r\n") == std::string_view::npos)
    throw PostmortemFormatError("is empty (" + std::to_string(bytes.size()) +
                                " bytes): neither a pickle nor JSON");
  try {
    // A key twice is refused, as in every JSON reader: which value counts is not defined.
    ValueTree t = valueTreeFromJson(parseJsonTree(bytes, [](const std::string& path) {
      throw PostmortemFormatError("JSON key \"" + path + "\" appears twice in one object; " + kPickleJsonRepeatedKeyRule);
    }));
    t.source_bytes = bytes.size();
    return t;
  } catch (const JsonSyntaxError& e) {
    if (looksLikeOldPickle(bytes) || pickleLooksLikeProtocol0or1(bytes))
      throw PostmortemFormatError(
          "a pickle of protocol 0 or 1 (it does not start with PROTO, 0x80), which is not read: PyTorch writes "
          "protocol 2 or newer (torch.cuda.memory._dump_snapshot, the flight recorder); re-save it with "
          "pickle.dump(obj, f, protocol=2) or newer");
    throw PostmortemFormatError(std::string("neither a pickle nor valid JSON: ") + e.what());
  }
}

}  // namespace shardscope::postmortem
