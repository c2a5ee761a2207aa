// shardscope-cli: the headless front end. All logic lives in core/cli.
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "devices_report.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  shardscope::CliHooks hooks;
  hooks.devices_report = [](bool json) {
    return json ? shardscope::devicesReportJson() : shardscope::devicesReport();
  };
  return shardscope::runCli(args, std::cout, std::cerr, hooks);
}
