#include "kineto/trace_diff.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <ostream>
#include <unordered_map>

#include "common/errors.h"
#include "kineto/report_format.h"

namespace shardscope::kineto {

double TraceDiffRow::deltaPct() const {
  if (control_ns_per_step == 0) return std::numeric_limits<double>::quiet_NaN();
  return 100.0 * (test_ns_per_step - control_ns_per_step) / control_ns_per_step;
}

namespace {

struct DiffTally {
  int64_t count = 0, ns = 0;
};

struct DiffSideTotals {
  std::map<std::string, DiffTally, std::less<>> ops, kernels;
  TraceDiffSide side;
};

bool diffIsKernel(EventKind k) { return k == EventKind::Kernel || k == EventKind::GpuMemcpy || k == EventKind::GpuMemset; }

DiffSideTotals diffTotals(const TraceSet& set) {
  DiffSideTotals out;
  for (size_t r = 0; r < set.ranks.size(); ++r) {
    const RankTrace& t = set.ranks[r];
    const TraceIndex& idx = set.indexes[r];
    out.side.ranks.push_back(t.rank);
    std::vector<std::pair<int64_t, int64_t>> windows;  // step spans, by start
    for (const ProfilerStep& s : idx.steps) {
      const TraceEvent& e = t.events[s.event];
      if (e.has(kHasDur)) windows.push_back({e.ts_ns, e.endNs()});
    }
    std::sort(windows.begin(), windows.end());
    if (windows.empty()) ++out.side.ranks_without_steps;
    out.side.rank_steps += windows.empty() ? 1 : static_cast<int64_t>(windows.size());
    const auto inSteps = [&](int64_t ts) {
      if (windows.empty()) return true;
      auto it = std::upper_bound(windows.begin(), windows.end(), std::pair<int64_t, int64_t>{ts, INT64_MAX});
      return it != windows.begin() && ts < std::prev(it)->second;
    };
    // Tallies by interned name first (one string per distinct name, not per event).
    std::unordered_map<uint32_t, DiffTally> ops, kernels;
    for (const TraceEvent& e : t.events) {
      if (!e.has(kHasDur)) continue;
      if (e.kind == EventKind::CpuOp) {
        if (!inSteps(e.ts_ns)) continue;
        DiffTally& k = ops[e.name];
        ++k.count;
        reportAccumulateNs(k.ns, e.dur_ns);
      } else if (diffIsKernel(e.kind)) {
        int64_t at = e.ts_ns;
        if (e.correlation >= 0) {
          const auto launch = idx.launch_of_correlation.find(e.correlation);
          if (launch != idx.launch_of_correlation.end()) at = t.events[launch->second].ts_ns;
        }
        if (!inSteps(at)) continue;
        DiffTally& k = kernels[e.name];
        ++k.count;
        reportAccumulateNs(k.ns, e.dur_ns);
      }
    }
    for (const auto& [name, k] : ops) {
      DiffTally& into = out.ops[std::string(t.str(name))];
      into.count += k.count;
      reportAccumulateNs(into.ns, k.ns);
    }
    for (const auto& [name, k] : kernels) {
      DiffTally& into = out.kernels[std::string(t.str(name))];
      into.count += k.count;
      reportAccumulateNs(into.ns, k.ns);
    }
  }
  return out;
}

std::vector<TraceDiffRow> diffRows(const std::map<std::string, DiffTally, std::less<>>& control, int64_t control_steps,
                                   const std::map<std::string, DiffTally, std::less<>>& test, int64_t test_steps) {
  std::vector<TraceDiffRow> rows;
  const auto fill = [&](const std::string& name) {
    TraceDiffRow row;
    row.name = name;
    const auto c = control.find(name);
    const auto t = test.find(name);
    if (c != control.end()) row.control_count = c->second.count, row.control_ns = c->second.ns;
    if (t != test.end()) row.test_count = t->second.count, row.test_ns = t->second.ns;
    row.presence = c == control.end() ? TraceDiffPresence::TestOnly
                   : t == test.end()  ? TraceDiffPresence::ControlOnly
                                      : TraceDiffPresence::Both;
    row.control_count_per_step = double(row.control_count) / double(control_steps);
    row.test_count_per_step = double(row.test_count) / double(test_steps);
    row.control_ns_per_step = double(row.control_ns) / double(control_steps);
    row.test_ns_per_step = double(row.test_ns) / double(test_steps);
    rows.push_back(std::move(row));
  };
  for (const auto& [name, k] : control) fill(name);
  for (const auto& [name, k] : test)
    if (!control.count(name)) fill(name);
  std::sort(rows.begin(), rows.end(), [](const TraceDiffRow& a, const TraceDiffRow& b) {
    if (a.deltaNsPerStep() != b.deltaNsPerStep()) return a.deltaNsPerStep() > b.deltaNsPerStep();
    return a.name < b.name;
  });
  return rows;
}

const char* diffPresenceName(TraceDiffPresence p) {
  switch (p) {
    case TraceDiffPresence::ControlOnly: return "control";
    case TraceDiffPresence::TestOnly: return "test";
    case TraceDiffPresence::Both: break;
  }
  return "both";
}

std::string diffSideText(const char* label, const TraceDiffSide& s) {
  std::string text = std::string(label) + " ";
  for (size_t i = 0; i < s.inputs.size(); ++i) text += (i ? " " : "") + s.inputs[i];
  text += ": " + std::to_string(s.ranks.size()) + (s.ranks.size() == 1 ? " rank, " : " ranks, ") +
          std::to_string(s.rank_steps) + " rank-steps";
  if (s.ranks_without_steps > 0)
    text += " (" + std::to_string(s.ranks_without_steps) + " rank(s) without ProfilerStep spans, counted whole)";
  return text;
}

void diffTableText(const char* title, const std::vector<TraceDiffRow>& rows, std::ostream& out) {
  out << "\n" << title << " (" << rows.size() << "; biggest regression first)\n";
  if (rows.empty()) return;
  out << "  delta us/step    control us/step     test us/step  delta %   control n/step  test n/step  delta n/step  "
         "only in   name\n";
  const auto line = [&](const TraceDiffRow& r) {
    char s[512];
    std::snprintf(s, sizeof s, "  %13s  %17s  %15s  %7s  %15s  %11s  %12s  %-8s  %s\n",
                  reportUs(r.deltaNsPerStep(), true).c_str(), reportUs(r.control_ns_per_step, true).c_str(),
                  reportUs(r.test_ns_per_step, true).c_str(), reportFixed(r.deltaPct(), 1, true).c_str(),
                  reportFixed(r.control_count_per_step, 3, true).c_str(),
                  reportFixed(r.test_count_per_step, 3, true).c_str(),
                  reportFixed(r.deltaCountPerStep(), 3, true).c_str(),
                  r.presence == TraceDiffPresence::Both ? "-" : diffPresenceName(r.presence),
                  r.name.substr(0, 100).c_str());
    out << s;
  };
  if (rows.size() <= kTraceDiffTextRows) {
    for (const TraceDiffRow& r : rows) line(r);
    return;
  }
  for (size_t i = 0; i < 20; ++i) line(rows[i]);
  out << "  ... " << rows.size() - 30 << " rows between (--diff-csv FILE writes every row)\n";
  for (size_t i = rows.size() - 10; i < rows.size(); ++i) line(rows[i]);
}

void diffRowsJson(const std::vector<TraceDiffRow>& rows, std::ostream& out) {
  out << "[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const TraceDiffRow& r = rows[i];
    out << (i ? ",\n    " : "\n    ") << "{\"name\": " << reportJsonString(r.name) << ", \"in\": \""
        << diffPresenceName(r.presence) << "\", \"control_count\": " << r.control_count
        << ", \"test_count\": " << r.test_count << ", \"control_total_us\": " << reportUs(double(r.control_ns))
        << ", \"test_total_us\": " << reportUs(double(r.test_ns))
        << ", \"control_count_per_step\": " << reportFixed(r.control_count_per_step)
        << ", \"test_count_per_step\": " << reportFixed(r.test_count_per_step)
        << ", \"delta_count_per_step\": " << reportFixed(r.deltaCountPerStep())
        << ", \"control_us_per_step\": " << reportUs(r.control_ns_per_step)
        << ", \"test_us_per_step\": " << reportUs(r.test_ns_per_step)
        << ", \"delta_us_per_step\": " << reportUs(r.deltaNsPerStep()) << ", \"delta_pct\": " << reportFixed(r.deltaPct(), 2)
        << "}";
  }
  out << "]";
}

void diffSideJson(const TraceDiffSide& s, std::ostream& out) {
  out << "{\"inputs\": [";
  for (size_t i = 0; i < s.inputs.size(); ++i) out << (i ? ", " : "") << reportJsonString(s.inputs[i]);
  out << "], \"ranks\": [";
  for (size_t i = 0; i < s.ranks.size(); ++i) out << (i ? ", " : "") << s.ranks[i];
  out << "], \"rank_steps\": " << s.rank_steps << ", \"ranks_without_steps\": " << s.ranks_without_steps << "}";
}

}  // namespace

TraceDiff computeTraceDiff(const TraceSet& control, const TraceSet& test) {
  const DiffSideTotals c = diffTotals(control);
  const DiffSideTotals t = diffTotals(test);
  TraceDiff d;
  d.control = c.side;
  d.test = t.side;
  d.ops = diffRows(c.ops, c.side.rank_steps, t.ops, t.side.rank_steps);
  d.kernels = diffRows(c.kernels, c.side.rank_steps, t.kernels, t.side.rank_steps);
  return d;
}

TraceDiff loadTraceDiff(const std::string& control, const std::string& test, const TraceSetOptions& options,
                       std::vector<std::string>* notes, const std::string& what) {
  const auto filesOf = [](const std::string& side) { return expandTraceInputs({side}); };
  for (const auto& entry : options.rank_of) {
    const std::string& file = entry.first;  // a name, not a binding: clang's lambdas cannot capture bindings
    const int rank = entry.second;
    const auto in = [&](const std::string& side) {
      try {
        const std::vector<std::string> files = filesOf(side);
        return std::find(files.begin(), files.end(), file) != files.end();
      } catch (const ConfigError&) {
        return false;  // the side's own load names the problem
      }
    };
    if (!in(control) && !in(test))
      throw ConfigError("--rank-of " + file + "=" + std::to_string(rank) + ": that file is in neither CONTROL (" +
                        control + ") nor TEST (" + test + ")");
  }
  const auto load = [&](const char* side, const std::string& path) {
    try {
      TraceSetOptions o = options;
      o.rank_of.clear();
      const std::vector<std::string> files = filesOf(path);
      for (const auto& [file, rank] : options.rank_of)
        if (std::find(files.begin(), files.end(), file) != files.end()) o.rank_of[file] = rank;
      TraceSet set = loadTraceSet({path}, o);
      if (notes)
        for (const std::string& n : set.notes) notes->push_back(std::string(side) + " " + n);
      return set;
    } catch (const ConfigError& e) {
      throw ConfigError(what + " " + side + ": " + e.what());
    }
  };
  TraceDiff d;
  {
    const TraceSet c = load("CONTROL", control);
    const TraceSet t = load("TEST", test);
    d = computeTraceDiff(c, t);
  }
  d.control.inputs = {control};
  d.test.inputs = {test};
  return d;
}

void printTraceDiffText(const TraceDiff& d, std::ostream& out) {
  out << "trace diff, " << kTraceDiffPerStep << " (each side's totals in its ProfilerStep spans / its rank-steps)\n";
  out << "  " << diffSideText("control", d.control) << "\n";
  out << "  " << diffSideText("test   ", d.test) << "\n";
  diffTableText("GPU kernels", d.kernels, out);
  diffTableText("CPU ops", d.ops, out);
}

void writeTraceDiffJson(const TraceDiff& d, std::ostream& out) {
  out << "{\"normalised\": \"" << kTraceDiffPerStep << "\",\n   \"control\": ";
  diffSideJson(d.control, out);
  out << ",\n   \"test\": ";
  diffSideJson(d.test, out);
  out << ",\n   \"kernels\": ";
  diffRowsJson(d.kernels, out);
  out << ",\n   \"ops\": ";
  diffRowsJson(d.ops, out);
  out << "}";
}

void writeTraceDiffCsv(const TraceDiff& d, std::ostream& out) {
  out << "kind,name,in,control_count,test_count,control_total_us,test_total_us,control_count_per_step,"
         "test_count_per_step,delta_count_per_step,control_us_per_step,test_us_per_step,delta_us_per_step,delta_pct\n";
  const auto rows = [&](const char* kind, const std::vector<TraceDiffRow>& v) {
    for (const TraceDiffRow& r : v) {
      const double pct = r.deltaPct();
      out << kind << "," << reportCsvField(r.name) << "," << diffPresenceName(r.presence) << "," << r.control_count << ","
          << r.test_count << "," << reportUs(double(r.control_ns)) << "," << reportUs(double(r.test_ns)) << ","
          << reportFixed(r.control_count_per_step) << "," << reportFixed(r.test_count_per_step) << ","
          << reportFixed(r.deltaCountPerStep()) << "," << reportUs(r.control_ns_per_step) << ","
          << reportUs(r.test_ns_per_step) << "," << reportUs(r.deltaNsPerStep()) << ","
          << (std::isnan(pct) ? std::string() : reportFixed(pct, 2)) << "\n";
    }
  };
  rows("kernel", d.kernels);
  rows("op", d.ops);
}

}  // namespace shardscope::kineto
