// shardscope-cli: the headless front end. All logic lives in core/cli.
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/devices_report.h"
#if SHARDSCOPE_HAVE_CUDA
#include "cuda/cuda_runtime.h"
#endif

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
#if SHARDSCOPE_HAVE_CUDA
  shardscope::gpu::registerCudaRuntime();  // --backend cuda, cuda-emulated
#endif
  shardscope::CliHooks hooks;
  hooks.devices_report = [](bool json) {
    return json ? shardscope::devicesReportJson() : shardscope::devicesReport();
  };
  return shardscope::runCli(args, std::cout, std::cerr, hooks);
}
