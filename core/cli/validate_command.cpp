#include "cli/validate_command.h"

#include <cmath>
#include <cstdio>
#include <ostream>

#include "analysis/local_validation.h"
#include "analysis/validation.h"
#include "common/errors.h"
#include "common/exit_codes.h"
#include "common/input_file.h"
#include "common/json_tree.h"
#include "common/output_file.h"
#include "model/hardware_profile.h"

namespace shardscope {

namespace {

const char* const kValidateUsage = R"(usage: shardscope-cli validate [--table FILE] [--json OUT] [--local]
Runs each published training run of a table on the meta backend under its
machine's profile and prints the prediction beside the published figure with
the error, then the mean absolute error and the worst row, for the modeled
clock's times and for memory apart. Rows needing what ShardScope does not
model yet (pipeline, sequence or context parallelism) are listed as
"not modeled" and left out of the statistics. The table format is in
docs/validation.md.
  --table FILE  the table [resources/validation/published.json]
  --json OUT    write every row again with "predicted" and "error_percent"
  --local       instead: a few small runs on this machine's CPU ranks, measured
                clock against the modeled clock under profile this-cpu
  --help        this text
exit codes: 0 ok, 2 a bad flag or table (one line naming the field), 3 a run
failed, 4 --json could not be written
)";

struct ValidateRequest {
  std::string table;
  std::string json;
  bool local = false;
  bool help = false;
};

ValidateRequest parseValidateArgs(const std::vector<std::string>& args) {
  ValidateRequest r;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      r.help = true;
    } else if (a == "--local") {
      r.local = true;
    } else if (a == "--table" || a == "--json") {
      if (i + 1 >= args.size() || args[i + 1].empty()) throw ConfigError(a + " needs a file name");
      (a == "--table" ? r.table : r.json) = args[++i];
    } else {
      throw ConfigError("validate takes --table FILE, --json OUT, --local and --help, got '" + a + "'");
    }
  }
  if (r.local && !r.table.empty()) throw ConfigError("--local runs this machine's configurations: it takes no --table");
  return r;
}

std::string fourDigits(double x) {  // 4 significant digits
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", x);
  return text;
}

std::string signedPercent(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f %%", x);
  return text;
}

std::string padCell(const std::string& s, size_t width, bool right = false) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

void printChecks(const std::vector<ValidationCheck>& checks, std::ostream& out) {
  size_t name_width = 4;
  for (const ValidationCheck& c : checks) name_width = std::max(name_width, c.row->name.size());
  out << padCell("row", name_width) << "  " << padCell("figure", 14) << padCell("published", 12, true) << padCell("predicted", 12, true)
      << padCell("error", 10, true) << "\n";
  for (const ValidationCheck& c : checks) {
    std::string unit = " ";  // appended, not " " + ...: GCC 12 warns falsely (-Wrestrict) on that concatenation
    unit += quantityUnit(c.quantity);
    out << padCell(c.row->name, name_width) << "  " << padCell(quantityName(c.quantity), 14)
        << padCell(fourDigits(c.published) + unit, 12, true);
    if (c.predicted)
      out << padCell(fourDigits(*c.predicted) + unit, 12, true) << padCell(signedPercent(c.errorPercent()), 10, true) << "\n";
    else
      out << "   not modeled: " << c.not_modeled << "\n";
  }
}

void printStats(const ValidationStats& s, const std::vector<ValidationCheck>& checks, std::ostream& out) {
  int time_total = 0;
  for (const ValidationCheck& c : checks) time_total += isTimeQuantity(c.quantity) ? 1 : 0;
  const auto line = [&](const char* what, int modeled, int total, double mae, const ValidationCheck* worst) {
    out << what << ": " << modeled << " of " << total << " figures modeled";
    if (modeled > 0) {
      char text[64];
      std::snprintf(text, sizeof text, "%.1f %%", mae);
      out << ", mean absolute error " << text << ", worst " << worst->row->name << " ("
          << quantityName(worst->quantity) << ", " << signedPercent(worst->errorPercent()) << ")";
    }
    out << "\n";
  };
  out << "\n";
  line("time  ", s.time_modeled, time_total, s.time_mean_abs_error, s.worst_time);
  line("memory", s.memory_modeled, s.checks - time_total, s.memory_mean_abs_error, s.worst_memory);
  out << s.modeled << " of " << s.checks << " published figures modeled"
      << (s.modeled < s.checks ? "; the others need what ShardScope does not model yet" : "") << "\n";
}

// The table again, each row with "predicted" and "error_percent" (per figure)
// or "not_modeled", and the statistics.
Json reportJson(const Json& table, const std::vector<PublishedRow>& rows, const std::vector<ValidationCheck>& checks,
                const ValidationStats& s) {
  Json out = Json::object();
  out["rows"] = Json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    Json row = table["rows"][i];
    Json predicted = Json::object(), error = Json::object(), not_modeled = Json::object();
    for (const ValidationCheck& c : checks) {
      if (c.row != &rows[i]) continue;
      if (c.predicted) {
        predicted[quantityName(c.quantity)] = *c.predicted;
        error[quantityName(c.quantity)] = std::round(c.errorPercent() * 100.0) / 100.0;
      } else {
        not_modeled[quantityName(c.quantity)] = "not modeled: " + c.not_modeled;
      }
    }
    if (!predicted.empty()) row["predicted"] = predicted;
    if (!error.empty()) row["error_percent"] = error;
    if (!not_modeled.empty()) row["not_modeled"] = not_modeled;
    out["rows"].push_back(row);
  }
  Json& stats = out["summary"];
  stats["figures"] = s.checks;
  stats["modeled"] = s.modeled;
  stats["time_modeled"] = s.time_modeled;
  stats["time_mean_abs_error_percent"] = s.time_mean_abs_error;
  stats["memory_modeled"] = s.memory_modeled;
  stats["memory_mean_abs_error_percent"] = s.memory_mean_abs_error;
  if (s.worst_time) stats["worst_time_row"] = s.worst_time->row->name;
  if (s.worst_memory) stats["worst_memory_row"] = s.worst_memory->row->name;
  return out;
}

int validateLocal(const ValidateRequest& request, std::ostream& out) {
  // Calibrated (once per machine, cached) before any run, never during one.
  const HardwareProfile profile = loadProfile(kThisCpuProfile);
  out << "profile this-cpu: " << (profile.sources.empty() ? std::string("(no sources)") : profile.sources.front())
      << "\n(`shardscope-cli profiles --calibrate` measures it again)\n\n";
  std::vector<LocalCheck> checks = localChecks();
  runLocalChecks(checks);
  size_t width = 4;
  for (const LocalCheck& c : checks) width = std::max(width, c.name.size());
  out << padCell("run", width) << padCell("measured", 12, true) << padCell("modeled", 12, true) << padCell("error", 10, true) << "\n";
  double sum = 0;
  Json json = Json::object();
  json["local"] = Json::array();
  json["profile"] = profileJson(profile);
  for (const LocalCheck& c : checks) {
    out << padCell(c.name, width) << padCell(fourDigits(c.measured_s * 1e3) + " ms", 12, true)
        << padCell(fourDigits(c.modeled_s * 1e3) + " ms", 12, true) << padCell(signedPercent(c.errorPercent()), 10, true) << "\n";
    sum += std::fabs(c.errorPercent());
    json["local"].push_back({{"name", c.name},
                             {"measured_s", c.measured_s},
                             {"modeled_s", c.modeled_s},
                             {"error_percent", std::round(c.errorPercent() * 100.0) / 100.0}});
  }
  char text[64];
  std::snprintf(text, sizeof text, "%.1f %%", sum / double(checks.size()));
  out << "\nmeasured on this machine's CPU ranks (last of 3 steps, slowest rank, median of " << kLocalMeasuredRuns
      << " runs) against the modeled clock under profile this-cpu: mean absolute error "
      << text << "\n";
  if (!request.json.empty())
    writeOutputFile(request.json, [&json](std::ostream& o) { o << json.dump(2) << "\n"; });
  return kExitOk;
}

}  // namespace

std::string validateUsage() { return kValidateUsage; }

int commandValidate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  ValidateRequest request;
  std::vector<PublishedRow> rows;
  Json table;
  try {
    request = parseValidateArgs(args);
    if (request.help) {
      out << kValidateUsage;
      return kExitOk;
    }
    if (!request.json.empty()) checkOutputFile("--json", request.json);
    if (!request.local) {
      if (request.table.empty()) request.table = defaultPublishedTablePath();
      const std::string text = readInputFile(request.table, presetFileRule());
      rows = parsePublishedTable(text, request.table);
      table = parseJsonTree(text);
    }
  } catch (const ConfigError& e) {
    err << "error: " << e.what() << "\n";
    return kExitBadInput;
  }
  try {
    if (request.local) return validateLocal(request, out);
    const std::vector<ValidationCheck> checks = validateRows(rows);
    const ValidationStats stats = validationStats(checks);
    out << "validate: " << request.table << ", " << rows.size() << " rows, " << checks.size()
        << " published figures\n\n";
    printChecks(checks, out);
    printStats(stats, checks, out);
    if (!request.json.empty()) {
      const Json report = reportJson(table, rows, checks, stats);
      try {
        writeOutputFile(request.json, [&report](std::ostream& o) { o << report.dump(2) << "\n"; });
      } catch (const std::exception& e) {
        err << "error: --json " << e.what() << "\n";
        return kExitOutputFailed;
      }
    }
  } catch (const ConfigError& e) {
    err << "error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const RunError& e) {
    err << "error: " << e.what() << "\n";
    return kExitRunFailed;
  }
  return kExitOk;
}

}  // namespace shardscope
