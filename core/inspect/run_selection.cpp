#include "inspect/run_selection.h"

#include <algorithm>
#include <charconv>
#include <string>

namespace shardscope {

namespace {

[[noreturn]] void refuse(std::string_view text, int run_count, std::string_view why) {
  throw RunSelectionError("--runs must be all, N or N,M,… with each N in 1.." + std::to_string(run_count) +
                          " (the preset's runs)" + (why.empty() ? std::string() : "; " + std::string(why)) + ", got '" +
                          std::string(text) + "'");
}

}  // namespace

std::vector<int> parseRunSelection(std::string_view text, int run_count) {
  run_count = std::max(run_count, 1);
  std::vector<int> picked;
  if (text == "all") {
    for (int i = 0; i < run_count; ++i) picked.push_back(i);
    return picked;
  }
  if (text.empty()) refuse(text, run_count, "");
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view item = text.substr(at, comma - at);
    int n = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size())
      refuse(text, run_count, "'" + std::string(item) + "' is not a run number");
    if (n < 1 || n > run_count) refuse(text, run_count, "there is no run " + std::string(item));
    if (std::find(picked.begin(), picked.end(), n - 1) != picked.end())
      refuse(text, run_count, "run " + std::string(item) + " is named twice");
    picked.push_back(n - 1);
    at = comma + 1;
  }
  return picked;
}

}  // namespace shardscope
