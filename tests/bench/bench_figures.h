// The figures of a bench program that prints its own table, in a form
// scripts/bench reads: given --figures, each figure the program adds is also
// printed as one line "figure <key> <value> <unit>". A unit ending in "/s" is
// a rate (higher is better); any other is a time or size (lower is better).
#pragma once

#include <cstdio>
#include <cstring>

namespace shardscope::bench {

class BenchFigures {
 public:
  // Takes --figures out of argv, so the programs' positional arguments stay where they were.
  BenchFigures(int& argc, char** argv) {
    int kept = 0;
    for (int i = 0; i < argc; ++i) {
      if (i > 0 && !std::strcmp(argv[i], "--figures"))
        m_on = true;
      else
        argv[kept++] = argv[i];
    }
    argc = kept;
    argv[argc] = nullptr;
  }
  void add(const char* key, double value, const char* unit) const {
    if (m_on) std::printf("figure %s %.6g %s\n", key, value, unit);
  }

 private:
  bool m_on = false;
};

}  // namespace shardscope::bench
