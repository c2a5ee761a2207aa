// The main() of a batch of tests: runs the one test named by the program's
// file name (build/.../tests/core_test_x is a link to its batch) or, when the
// batch is run by its own name, by the first argument. Each test still runs
// in its own process, with the arguments Qt Test reads, as a lone test would.
#include "test_registry.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <string>

namespace shardscope::testing {
namespace {

std::map<std::string, TestMain>& registry() {
  static std::map<std::string, TestMain> tests;
  return tests;
}

std::string baseName(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

}  // namespace

bool registerTest(const char* name, TestMain main) {
  registry().emplace(name, main);
  return true;
}

}  // namespace shardscope::testing

int main(int argc, char* argv[]) {
  using shardscope::testing::registry;
  if (argc < 1) return 2;
  if (const auto found = registry().find(shardscope::testing::baseName(argv[0])); found != registry().end())
    return found->second(argc, argv);
  if (argc >= 2) {
    if (const auto found = registry().find(argv[1]); found != registry().end()) {
      // The test sees its own name as the program and the rest as its arguments.
      argv[1] = argv[0];
      return found->second(argc - 1, argv + 1);
    }
  }
  std::fprintf(stderr, "usage: %s TEST [Qt Test arguments]\nthe tests of this batch:\n", argv[0]);
  for (const auto& [name, main] : registry()) std::fprintf(stderr, "  %s\n", name.c_str());
  return 2;
}
