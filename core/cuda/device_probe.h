// Host entry point of the probe kernel (device_probe.cu): proves a device runs
// code built for it, which "device present" alone does not (e.g. missing SASS/PTX).
#pragma once

#include <string>

namespace shardscope {

// Runs the probe on `device` (the caller's current device is restored) and
// checks every value it wrote. Returns "" on success, else what went wrong.
std::string runProbeKernel(int device);

}  // namespace shardscope
