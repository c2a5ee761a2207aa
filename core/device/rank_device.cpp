#include "device/rank_device.h"

#include <cstring>
#include <mutex>
#include "common/errors.h"
#include "config/run_config.h"

namespace shardscope {

namespace {

thread_local DeviceQueue* t_currentQueue = nullptr;

class CpuDeviceOps final : public DeviceOps {
 public:
  void copy(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void upload(void* dst, const void* host_src, size_t bytes) override { std::memcpy(dst, host_src, bytes); }
  void download(void* host_dst, const void* src, size_t bytes) override { std::memcpy(host_dst, src, bytes); }
  void scaleBf16(bf16* y, float s, size_t n) override { cpu::scaleBf16InPlace(y, s, n); }
  void f32ToBf16(const float* in, bf16* out, size_t n) override { cpu::f32ToBf16(in, out, n); }
  void adamStep(float* master, float* m, float* v, const bf16* grad, bf16* param_out, size_t n,
                const cpu::AdamConfig& config, int step) override {
    cpu::adamStep(master, m, v, grad, param_out, n, config, step);
  }
};

}  // namespace

DeviceQueue* currentDeviceQueue() { return t_currentQueue; }
void setCurrentDeviceQueue(DeviceQueue* queue) { t_currentQueue = queue; }

DeviceOps& cpuDeviceOps() {
  static CpuDeviceOps ops;
  return ops;
}

}  // namespace shardscope
