// The settings table joined from its groups (settings_*.cpp), each row's
// set/get/args API, and the parse helpers every row shares.
#include "config/settings.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "common/errors.h"
#include "config/settings_rows.h"

namespace shardscope {

namespace rows {

long long parseInt(const std::string& flag, const std::string& text) {
  long long v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size())
    throw ConfigError(flag + " expects an integer, got '" + text + "'");
  if (v < -(1LL << 31) || v > (1LL << 62))
    throw ConfigError(flag + " value " + text + " is out of range (see --help for the allowed range)");
  return v;
}

int parseInt32(const std::string& flag, const std::string& text) {
  const long long v = parseInt(flag, text);
  if (v > (1LL << 31) - 1)
    throw ConfigError(flag + " value " + text + " is out of range (see --help for the allowed range)");
  return static_cast<int>(v);
}

double parseDouble(const std::string& flag, const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw ConfigError(flag + " expects a number, got '" + text + "'");
}

bool parseSwitch(const std::string& flag, const std::string& v) {
  if (v != "on" && v != "off") throw ConfigError(flag + " must be on or off, got '" + v + "'");
  return v == "on";
}

namespace {

std::string joinOr(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

}  // namespace

std::string joinComma(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

void badChoice(const Setting& s, const std::string& v) {
  const std::vector<std::string> names = s.choices();
  if (s.one_of) throw ConfigError(std::string(s.flag) + " must be one of " + joinComma(names) + "; got '" + v + "'");
  throw ConfigError(std::string(s.flag) + " must be " + joinOr(names) + s.choice_hint + ", got '" + v + "'");
}

std::string outputPath(const Setting& s, const std::string& v) {
  if (v.empty()) throw ConfigError(std::string(s.flag) + " needs a file name, got ''");
  return v;
}

}  // namespace rows

namespace {

// runArgs' order (and usage's and the form's): the order old traces recorded
// their "args" in, kept so a rewritten trace keeps its bytes. --model comes
// first: a published shape resets the shape flags given before it. Flags not
// listed are not written (they say where ranks run, not what runs).
constexpr const char* kArgsOrder[] = {
    "--model", "--layers", "--hidden", "--heads", "--seq", "--vocab",
    "--strategy", "--ranks", "--tp", "--pp", "--microbatches", "--pp-schedule", "--virtual-stages", "--sp",
    "--shard-group",
    "--batch", "--steps", "--lr", "--seed", "--bucket-mb", "--first-bucket-mb", "--timeout-ms",
    "--unit-blocks", "--prefetch", "--reshard-after-forward",
    "--backend", "--clock", "--profile",
    "--inject-branch", "--replicate", "--break-on", "--break-unit",
    "--attention", "--activation-checkpointing", "--wrap", "--reduce-dtype", "--param-dtype", "--grad-dtype",
};

std::vector<Setting> joinTable() {
  std::vector<Setting> t;
  for (std::span<const Setting> group : {rows::parallelRows(), rows::modelRows(), rows::trainingRows(),
                                         rows::clockRows(), rows::fsdpRows(), rows::debugRows(), rows::launchRows()})
    t.insert(t.end(), group.begin(), group.end());
  return t;
}

}  // namespace

void Setting::set(RunConfig& c, std::string_view text) const {
  if (!parse) throw ConfigError(std::string(flag ? flag : json_key ? json_key : "?") + " cannot be set");
  parse(c, *this, std::string(text));
}

std::optional<std::string> Setting::get(const RunConfig& c) const {
  if (!text) return std::nullopt;
  return text(c);
}

std::vector<std::string> Setting::args(const RunConfig& c) const {
  if (values) return values(c);
  if (written && !written(c)) return {};
  std::optional<std::string> v = get(c);
  if (!v) return {};
  return {std::move(*v)};
}

bool Applicability::appliesTo(const RunConfig& c) const {
  if (!(strategies & rows::bit(c.strategy))) return false;
  if (!(backends & rows::bit(c.backend))) return false;
  if (gpt_only && c.model.kind != ModelKind::Gpt) return false;
  if (custom_shape && !c.model.preset.empty()) return false;
  if (modeled_clock && c.clock != ClockKind::Modeled) return false;
  return true;
}

std::string Range::text() const {
  std::ostringstream os;
  if (!lo_open && !hi_open) {
    os << static_cast<long long>(lo) << ".." << static_cast<long long>(hi);
  } else {
    os << (lo_open ? '(' : '[') << lo << ", " << hi << (hi_open ? ')' : ']');
  }
  os << unit;
  return os.str();
}

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = joinTable();
  return table;
}

const std::vector<const Setting*>& argsOrder() {
  static const std::vector<const Setting*> order = [] {
    std::vector<const Setting*> out;
    for (const char* flag : kArgsOrder)
      if (const Setting* row = findSetting(flag)) out.push_back(row);
    return out;
  }();
  return order;
}

const std::vector<const Setting*>& flagOrder() {
  static const std::vector<const Setting*> order = [] {
    std::vector<const Setting*> out = argsOrder();
    for (const Setting& s : settings())
      if (s.flag && std::find(out.begin(), out.end(), &s) == out.end()) out.push_back(&s);
    return out;
  }();
  return order;
}

const Setting* findSetting(std::string_view name) {
  for (const Setting& s : settings()) {
    if (!s.flag) continue;
    const std::string_view flag = s.flag;
    if (name == flag || name == flag.substr(2)) return &s;
  }
  return nullptr;
}

void requireRange(const char* flag, long long v, long long lo, long long hi, const std::string& hint) {
  if (v < lo || v > hi) {
    std::ostringstream os;
    os << flag << " must be in " << lo << ".." << hi << ", got " << v << hint;
    throw ConfigError(os.str());
  }
}

std::string exactText(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

Range ranksRange(Backend b) {
  switch (b) {
    case Backend::Meta: return {1, 16384};  // past kMetaRanksSimulatedEach only with symmetric replication
    case Backend::CudaEmulated: return {1, 16};
    case Backend::Cuda:
    case Backend::Cpu: return {1, 64};
  }
  return {1, 64};
}

}  // namespace shardscope
