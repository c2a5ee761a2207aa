// The CLI side of the settings table: parse, validate, usage and unparse are
// loops over config/settings.h's rows.
#include <algorithm>
#include <sstream>

#include "common/errors.h"
#include "config/run_config.h"
#include "config/settings.h"

namespace shardscope {

namespace {

void checkRange(const Setting& s, const RunConfig& c) {
  if (!s.number) return;
  const std::optional<double> v = s.number(c);
  if (!v) return;
  std::string hint = s.range_hint;
  const Range range = s.range_for ? s.range_for(c, hint) : s.range;
  if (range.empty()) return;
  if (s.type == SettingType::Real) {
    const bool above_lo = range.lo_open ? *v > range.lo : *v >= range.lo;
    const bool below_hi = range.hi_open ? *v < range.hi : *v <= range.hi;
    if (!(above_lo && below_hi))
      throw ConfigError(std::string(s.flag) + " must be in " + range.text() + ", got " + std::to_string(*v) + hint);
    return;
  }
  requireRange(s.flag, static_cast<long long>(*v), static_cast<long long>(range.lo),
               static_cast<long long>(range.hi), hint);
}

}  // namespace

void validate(const RunConfig& c) {
  for (const Setting& s : settings()) {
    const bool applies = s.applies.appliesTo(c);
    if (!applies && s.applies_text && s.given && s.given(c)) {
      std::string message = std::string(s.flag) + " applies to " + s.applies_text;
      // Strategy-bound settings name the strategy they were given to.
      if (!(s.applies.strategies & (1u << static_cast<unsigned>(c.strategy))))
        message += ", not " + strategyName(c.strategy) + s.not_applies_hint;
      throw ConfigError(message);
    }
    if (applies) checkRange(s, c);
    if (s.rule) s.rule(c);
  }
}

namespace {

// Model flags given to a model they mean nothing for (--heads for mlp, --layers
// with a published shape) are refused by name: a run must not silently differ
// from what its command line says.
void refuseInapplicableModelFlags(const RunConfig& c, const std::vector<const Setting*>& given) {
  std::vector<std::string> gpt_only, shape;
  for (const Setting* s : given) {
    if (s->applies.custom_shape && !c.model.preset.empty()) {
      if (std::find(shape.begin(), shape.end(), s->flag) == shape.end()) shape.push_back(s->flag);
    } else if (s->applies.gpt_only && c.model.kind != ModelKind::Gpt) {
      if (std::find(gpt_only.begin(), gpt_only.end(), s->flag) == gpt_only.end()) gpt_only.push_back(s->flag);
    }
  }
  const auto list = [](const std::vector<std::string>& flags) {
    std::string out;
    for (size_t i = 0; i < flags.size(); ++i) out += (i == 0 ? "" : i + 1 == flags.size() ? " and " : ", ") + flags[i];
    return out;
  };
  if (!shape.empty())
    throw ConfigError(list(shape) + (shape.size() == 1 ? " does" : " do") + " not apply to --model " + c.model.preset +
                      ": a published shape fixes its layers, hidden width, heads, sequence and vocabulary (use "
                      "--model gpt to set them)");
  if (!gpt_only.empty())
    throw ConfigError(list(gpt_only) + (gpt_only.size() == 1 ? " applies" : " apply") + " to --model gpt only, not " +
                      modelKindName(c.model.kind) + " (remove " + (gpt_only.size() == 1 ? "it" : "them") +
                      ", or add --model gpt)");
}

}  // namespace

RunConfig parseRunArgs(const std::vector<std::string>& args, bool* help) {
  RunConfig c;
  if (help) *help = false;
  std::vector<const Setting*> given;
  bool batch_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag == "--help" || flag == "-h") {
      if (help) *help = true;
      return c;
    }
    if (flag.rfind("--", 0) != 0) throw ConfigError("unexpected argument '" + flag + "' (see --help)");
    if (i + 1 >= args.size()) throw ConfigError(flag + " needs a value (see --help)");
    const std::string& v = args[++i];
    const Setting* s = findSetting(flag);
    if (!s || !s->parses() || flag != s->flag) throw ConfigError("unknown flag " + flag + " (see --help)");
    s->set(c, v);
    given.push_back(s);
    batch_given = batch_given || flag == "--batch";
  }
  refuseInapplicableModelFlags(c, given);
  // Without --batch the global batch follows the rank count: 32, or the
  // smallest multiple of the data-parallel ranks above it (512 ranks take
  // 512 samples, one each).
  // Pipelines: a multiple of the data-parallel ranks times the microbatches.
  const int dp = c.ranks % (std::max(1, c.tp) * std::max(1, c.pp)) == 0 ? c.dataParallelSize() : c.ranks;
  const int unit = dp * std::max(1, c.microbatchCount());
  if (!batch_given && unit > 0 && c.batch % unit != 0) c.batch = (c.batch / unit + 1) * unit;
  validate(c);
  return c;
}

std::string runUsage() {
  constexpr size_t kHelpColumn = 25, kWidth = 78;
  std::ostringstream os;
  os << "usage: shardscope-cli run [flags]\n";
  // Help order is runArgs' (model, training, sharding, clock, faults), then the output files.
  for (const Setting* row : flagOrder()) {
    const Setting& s = *row;
    std::string text = s.help;
    if (!s.range.empty() && !s.range_for) text += ", " + s.range.text();
    if (s.flag == std::string("--ranks")) {
      std::ostringstream r;
      r << ", " << ranksRange(Backend::Cpu).text() << " (cuda-emulated " << ranksRange(Backend::CudaEmulated).text()
        << ", meta " << ranksRange(Backend::Meta).text() << ")";
      text += r.str();
    }
    if (s.repeatable) text += " (repeatable)";
    // Word-wrapped into the help column; the default goes right-aligned on the last line.
    std::vector<std::string> lines(1);
    std::istringstream words(text);
    for (std::string word; words >> word;) {
      if (!lines.back().empty() && kHelpColumn + lines.back().size() + 1 + word.size() > kWidth) lines.emplace_back();
      lines.back() += (lines.back().empty() ? "" : " ") + word;
    }
    if (s.default_text) {
      const std::string tag = std::string("[") + s.default_text + "]";
      if (kHelpColumn + lines.back().size() + 1 + tag.size() > kWidth) lines.emplace_back();
      lines.back().resize(kWidth - kHelpColumn - tag.size(), ' ');
      lines.back() += tag;
    }
    std::string line = std::string("  ") + s.flag + (*s.metavar ? std::string(" ") + s.metavar : "");
    if (line.size() + 1 > kHelpColumn) {
      os << line << "\n";
      line.clear();
    }
    for (const std::string& l : lines) {
      line.resize(kHelpColumn, ' ');
      os << line << l << "\n";
      line.clear();
    }
  }
  os << "  --force                run even when the memory check says this machine is too small\n"
        "  --help                 this text\n"
        << exitCodesText();
  return os.str();
}

const char* exitCodesText() {
  return "exit codes:\n"
         "  0              done\n"
         "  2              bad input, or a run refused before it starts (an output that cannot be\n"
         "                 written, more memory than this machine has)\n"
         "  3              the run stopped: a collective hang or mismatch, a failed rank, no memory\n"
         "                 or threads left\n"
         "  4              the run finished, but an output (--trace, --summary) could not be written;\n"
         "                 every other output was\n"
         "  130, 143, 129  SIGINT, SIGTERM or SIGHUP stopped the run: its trace and summary hold the\n"
         "                 steps that ran, marked interrupted (a second signal exits at once)\n";
}

std::vector<std::string> runArgs(const RunConfig& c) {
  std::vector<std::string> a;
  // --model first (argsOrder()): a published shape resets the shape flags given before it.
  for (const Setting* s : argsOrder()) {
    for (std::string& value : s->args(c)) {
      a.emplace_back(s->flag);
      a.push_back(std::move(value));
    }
  }
  return a;
}

std::string runCommandLine(const RunConfig& c) {
  std::string line = "shardscope-cli run";
  for (const std::string& arg : runArgs(c)) {
    const bool plain = arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/+=") ==
                       std::string::npos;
    line += ' ';
    line += plain && !arg.empty() ? arg : "'" + arg + "'";  // profiles may be paths
  }
  return line;
}

}  // namespace shardscope
