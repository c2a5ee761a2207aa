#include "kineto/collective_skew.h"
#include "kineto/report_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "common/units.h"

namespace shardscope::kineto {

namespace {

int64_t skewMedian(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

std::string skewFmt(const char* f, double v) {
  char s[64];
  std::snprintf(s, sizeof s, f, v);
  return s;
}
std::string skewUs(int64_t ns) { return skewFmt("%.3f", double(ns) / kNsPerUs); }
std::string skewMs(int64_t ns) { return skewFmt("%.3f ms", nsToMs(ns)); }



std::string skewGroupName(const std::string& pg) { return pg.empty() ? "(unnamed)" : "\"" + pg + "\""; }

}  // namespace

int CollectiveSkew::worstRank() const {
  const RankStraggling* worst = nullptr;
  for (const RankStraggling& r : ranks)
    if (r.arrived_last > 0 && (!worst || r.arrived_last > worst->arrived_last)) worst = &r;
  return worst ? worst->rank : -1;
}

CollectiveSkew computeCollectiveSkew(const TraceSet& set) {
  CollectiveSkew skew;
  const CollectiveMatch match = matchCollectives(set);
  skew.clocks = alignHostClocks(set, match);
  skew.mismatches = match.mismatches;
  skew.groups_by_sequence = match.groups_by_sequence;
  struct Acc {
    int64_t collectives = 0, last = 0;
    std::vector<int64_t> waits, imposed;
  };
  std::map<int, Acc> acc;
  for (const MatchedCollective& mc : match.collectives) {
    if (mc.entries.size() < 2) continue;  // a call only one rank's file has: nothing to compare
    CollectiveSkewRow row;
    row.index = mc.index;
    row.pg = mc.pg;
    row.seq = mc.seq;
    row.kind = mc.kind;
    row.bytes = mc.bytes;
    // The group the trace names; else the ranks that took part (the files may hold only some).
    row.group_size = mc.group_size > 0 ? mc.group_size : static_cast<int32_t>(mc.entries.size());
    std::vector<int64_t> starts;
    size_t last = 0;
    for (size_t i = 0; i < mc.entries.size(); ++i) {
      const CollectiveEntry& e = mc.entries[i];
      const TraceCollective& c = set.indexes[e.rank_index].collectives[e.collective];
      starts.push_back(skew.clocks.commonNs(set, e.rank_index, c.ts_ns) - set.origin_ns);
      row.ranks.push_back(set.ranks[e.rank_index].rank);
      if (starts[i] > starts[last]) last = i;  // ties: the lower rank (entries are by rank)
    }
    const int64_t first = *std::min_element(starts.begin(), starts.end());
    row.start_ns = first;
    row.start_spread_ns = starts[last] - first;
    const CollectiveEntry& le = mc.entries[last];
    row.duration_ns = set.indexes[le.rank_index].collectives[le.collective].dur_ns;
    if (row.bytes >= 0 && row.duration_ns > 0) {
      row.algbw_gbps = gbPerSecond(double(row.bytes), double(row.duration_ns));
      row.busbw_gbps = row.algbw_gbps * busBandwidthFactor(row.kind, row.group_size);
    }
    row.last_rank = row.start_spread_ns > 0 ? row.ranks[last] : -1;
    int64_t next_latest = first;
    for (size_t i = 0; i < starts.size(); ++i) {
      row.wait_ns.push_back(starts[last] - starts[i]);
      if (i != last) next_latest = std::max(next_latest, starts[i]);
      Acc& a = acc[row.ranks[i]];
      ++a.collectives;
      a.waits.push_back(starts[last] - starts[i]);
    }
    if (row.last_rank >= 0) {
      Acc& a = acc[row.last_rank];
      ++a.last;
      a.imposed.push_back(starts[last] - next_latest);
    }
    skew.rows.push_back(std::move(row));
  }
  std::stable_sort(skew.rows.begin(), skew.rows.end(),
                   [](const CollectiveSkewRow& a, const CollectiveSkewRow& b) { return a.start_ns < b.start_ns; });
  for (const auto& [rank, a] : acc) {
    RankStraggling r;
    r.rank = rank;
    r.collectives = a.collectives;
    r.arrived_last = a.last;
    r.arrived_last_pct = a.collectives ? 100.0 * double(a.last) / double(a.collectives) : 0.0;
    r.median_wait_imposed_ns = skewMedian(a.imposed);
    r.median_wait_ns = skewMedian(a.waits);
    skew.ranks.push_back(r);
  }
  return skew;
}

void printCollectiveSkewText(const CollectiveSkew& skew, std::ostream& out) {
  if (skew.rows.empty() && skew.mismatches.empty()) return;
  std::set<std::string> groups;
  for (const CollectiveSkewRow& r : skew.rows) groups.insert(r.pg);
  out << "\nstragglers: " << skew.rows.size() << " collectives matched across ranks in " << groups.size()
      << (groups.size() == 1 ? " process group" : " process groups");
  if (!skew.groups_by_sequence.empty()) out << " (by their Seq where every call has one, else by order)";
  else out << " (by order within each group: the traces give no Seq)";
  out << "\n";
  const HostClocks& c = skew.clocks;
  if (!c.hosts_named) {
    out << "  clocks: the traces name no host (distributedInfo.hostname): all ranks taken as one host's clock\n";
  } else {
    out << "  clocks: " << c.hosts.size() << (c.hosts.size() == 1 ? " host" : " hosts") << "; ranks of a host share its clock";
    if (c.hosts.size() > 1) out << "; other hosts put on host \"" << c.hosts[0].host << "\"'s by collective ends";
    out << "\n";
    for (size_t h = 1; h < c.hosts.size(); ++h) {
      const HostClock& hc = c.hosts[h];
      out << "    host \"" << hc.host << "\": ";
      if (hc.aligned)
        out << "offset " << skewUs(hc.offset_ns) << " us from " << hc.collectives << " collectives, uncertain by +/- "
            << skewUs(hc.residual_ns) << " us\n";
      else
        out << "no collective shared with the first host: its clock taken as is (skews across hosts unknown)\n";
    }
  }
  std::vector<RankStraggling> worst = skew.ranks;
  std::stable_sort(worst.begin(), worst.end(),
                   [](const RankStraggling& a, const RankStraggling& b) { return a.arrived_last > b.arrived_last; });
  for (const RankStraggling& r : worst) {
    if (r.arrived_last == 0) continue;
    out << "  rank " << r.rank << " arrived last in " << skewFmt("%.1f", r.arrived_last_pct) << " % of collectives ("
        << r.arrived_last << " of " << r.collectives << "), " << skewMs(r.median_wait_imposed_ns)
        << " median wait imposed (its start minus the next-latest rank's)\n";
  }
  out << "  median wait per rank (last arrival's start minus its own):";
  for (const RankStraggling& r : skew.ranks) out << "  " << r.rank << ": " << skewMs(r.median_wait_ns);
  out << "\n";
  if (!skew.mismatches.empty()) {
    out << "  " << skew.mismatches.size() << " collectives the ranks disagree on (left out):\n";
    for (size_t i = 0; i < skew.mismatches.size() && i < 10; ++i) {
      const CollectiveMismatch& m = skew.mismatches[i];
      out << "    group " << skewGroupName(m.pg) << " #" << m.index << ": " << m.what << "\n";
    }
    if (skew.mismatches.size() > 10) out << "    ... and " << skew.mismatches.size() - 10 << " more (see --json)\n";
  }
}

void writeCollectiveSkewJson(const CollectiveSkew& skew, std::ostream& out) {
  const HostClocks& c = skew.clocks;
  out << "{\n    \"hosts_named\": " << (c.hosts_named ? "true" : "false") << ",\n    \"hosts\": [";
  for (size_t h = 0; h < c.hosts.size(); ++h) {
    const HostClock& hc = c.hosts[h];
    out << (h ? ", " : "") << "{\"host\": " << reportJsonString(hc.host) << ", \"ranks\": [";
    for (size_t i = 0; i < hc.ranks.size(); ++i) out << (i ? ", " : "") << hc.ranks[i];
    out << "], \"offset_us\": " << skewUs(hc.offset_ns) << ", \"residual_us\": " << skewUs(hc.residual_ns)
        << ", \"collectives\": " << hc.collectives << ", \"aligned\": " << (hc.aligned ? "true" : "false") << "}";
  }
  out << "],\n    \"groups_by_sequence\": [";
  for (size_t i = 0; i < skew.groups_by_sequence.size(); ++i)
    out << (i ? ", " : "") << reportJsonString(skew.groups_by_sequence[i]);
  out << "],\n    \"collectives\": [";
  for (size_t k = 0; k < skew.rows.size(); ++k) {
    const CollectiveSkewRow& r = skew.rows[k];
    out << (k ? ",\n      " : "\n      ") << "{\"index\": " << r.index << ", \"pg\": " << reportJsonString(r.pg)
        << ", \"seq\": " << r.seq << ", \"kind\": \"" << collectiveName(r.kind) << "\", \"bytes\": " << r.bytes
        << ", \"group_size\": " << r.group_size << ", \"start_us\": " << skewUs(r.start_ns)
        << ", \"duration_us\": " << skewUs(r.duration_ns)
        << ", \"algbw_gbps\": " << (r.algbw_gbps < 0 ? "null" : skewFmt("%.3f", r.algbw_gbps))
        << ", \"busbw_gbps\": " << (r.busbw_gbps < 0 ? "null" : skewFmt("%.3f", r.busbw_gbps))
        << ", \"start_spread_us\": " << skewUs(r.start_spread_ns) << ", \"last_rank\": " << r.last_rank
        << ", \"wait_us_by_rank\": {";
    for (size_t i = 0; i < r.ranks.size(); ++i)
      out << (i ? ", " : "") << "\"" << r.ranks[i] << "\": " << skewUs(r.wait_ns[i]);
    out << "}}";
  }
  out << "],\n    \"stragglers\": [";
  for (size_t k = 0; k < skew.ranks.size(); ++k) {
    const RankStraggling& r = skew.ranks[k];
    out << (k ? ",\n      " : "\n      ") << "{\"rank\": " << r.rank << ", \"collectives\": " << r.collectives
        << ", \"arrived_last\": " << r.arrived_last << ", \"arrived_last_pct\": " << skewFmt("%.2f", r.arrived_last_pct)
        << ", \"median_wait_imposed_us\": " << skewUs(r.median_wait_imposed_ns)
        << ", \"median_wait_us\": " << skewUs(r.median_wait_ns) << "}";
  }
  out << "],\n    \"mismatches\": [";
  for (size_t k = 0; k < skew.mismatches.size(); ++k) {
    const CollectiveMismatch& m = skew.mismatches[k];
    out << (k ? ",\n      " : "\n      ") << "{\"pg\": " << reportJsonString(m.pg) << ", \"index\": " << m.index
        << ", \"what\": " << reportJsonString(m.what) << "}";
  }
  out << "]}";
}

void writeCollectiveSkewCsv(const CollectiveSkew& skew, std::ostream& out) {
  std::set<int> all;
  for (const CollectiveSkewRow& r : skew.rows) all.insert(r.ranks.begin(), r.ranks.end());
  out << "index,pg,seq,kind,bytes,group_size,ranks,start_us,duration_us,algbw_gbps,busbw_gbps,start_spread_us,last_rank";
  for (int rank : all) out << ",wait_us_rank" << rank;
  out << "\n";
  for (const CollectiveSkewRow& r : skew.rows) {
    out << r.index << "," << reportCsvField(r.pg) << "," << r.seq << "," << collectiveName(r.kind) << "," << r.bytes << ","
        << r.group_size << "," << r.ranks.size() << "," << skewUs(r.start_ns) << "," << skewUs(r.duration_ns) << ","
        << (r.algbw_gbps < 0 ? "" : skewFmt("%.3f", r.algbw_gbps)) << ","
        << (r.busbw_gbps < 0 ? "" : skewFmt("%.3f", r.busbw_gbps)) << "," << skewUs(r.start_spread_ns) << ","
        << r.last_rank;
    for (int rank : all) {
      out << ",";
      for (size_t i = 0; i < r.ranks.size(); ++i)
        if (r.ranks[i] == rank) out << skewUs(r.wait_ns[i]);
    }
    out << "\n";
  }
}

StragglerTable stragglerTable(const CollectiveSkew& skew) {
  StragglerTable table;
  std::set<int> all;
  for (const CollectiveSkewRow& r : skew.rows) all.insert(r.ranks.begin(), r.ranks.end());
  table.ranks.assign(all.begin(), all.end());
  for (const CollectiveSkewRow& r : skew.rows) {
    const std::string size = r.bytes >= 0 ? bytesText(double(r.bytes), 2, ByteUnit::MiB) : "size unknown";
    table.labels.push_back(std::string(collectiveName(r.kind)) + " #" + std::to_string(r.index) + " \u00b7 pg " +
                           (r.pg.empty() ? std::string("(unnamed)") : r.pg) + " \u00b7 " + size);
    table.last_rank.push_back(r.last_rank);
    std::vector<double> waits(table.ranks.size(), std::nan(""));
    for (size_t i = 0; i < r.ranks.size(); ++i) {
      const auto row = std::lower_bound(table.ranks.begin(), table.ranks.end(), r.ranks[i]) - table.ranks.begin();
      waits[static_cast<size_t>(row)] = double(r.wait_ns[i]) / kNsPerUs;
    }
    table.wait_us.push_back(std::move(waits));
  }
  std::ostringstream text;
  printCollectiveSkewText(skew, text);
  std::istringstream lines(text.str());
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) table.summary.push_back(line.substr(line.find_first_not_of(' ')));
  return table;
}

}  // namespace shardscope::kineto
