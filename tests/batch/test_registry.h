#pragma once
// Test executables are compiled in batches (tests/CMakeLists.txt): each
// tests/<layer>/test_*.cpp keeps its own Qt Test main, registered here under
// its CTest name instead of being the program's main(). One TU per batch
// instantiates the templates the tests share (Qt Test's comparisons, the JSON
// library) once instead of once per test: a fifth of the tests' compile time.

namespace shardscope::testing {

using TestMain = int (*)(int argc, char* argv[]);

// Adds a test's main under `name`; called from static initialisers.
bool registerTest(const char* name, TestMain main);

}  // namespace shardscope::testing
