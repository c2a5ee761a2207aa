#include "trace/event.h"

namespace shardscope {

std::string_view laneName(Lane lane) {
  switch (lane) {
    case Lane::Host: return "host";
    case Lane::Compute: return "compute";
    case Lane::Comm: return "comm";
    case Lane::Gather: return "gather";
    case Lane::Reduce: return "reduce";
  }
  return "?";
}

std::string_view eventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::Forward: return "forward";
    case EventKind::Backward: return "backward";
    case EventKind::Loss: return "loss";
    case EventKind::AllReduce: return "all_reduce";
    case EventKind::ReduceScatter: return "reduce_scatter";
    case EventKind::AllGather: return "all_gather";
    case EventKind::OptimizerStep: return "optimizer_step";
    case EventKind::BucketReady: return "bucket_ready";
    case EventKind::GradReady: return "grad_ready";
    case EventKind::Alloc: return "alloc";
    case EventKind::Free: return "free";
    case EventKind::StepBegin: return "step_begin";
    case EventKind::StepEnd: return "step_end";
    case EventKind::Wait: return "wait";
    case EventKind::Copy: return "copy";
    case EventKind::Broadcast: return "broadcast";
    case EventKind::Error: return "error";
    case EventKind::Kernel: return "kernel";
    case EventKind::CpuOp: return "cpu_op";
    case EventKind::AllToAll: return "all_to_all";
    case EventKind::Launch: return "launch";
    case EventKind::Send: return "send";
    case EventKind::Recv: return "recv";
  }
  return "?";
}

std::string_view categoryName(Category category) {
  switch (category) {
    case Category::Param: return "param";
    case Category::Grad: return "grad";
    case Category::Master: return "master";
    case Category::AdamM: return "adam_m";
    case Category::AdamV: return "adam_v";
    case Category::Gathered: return "gathered";
    case Category::GradFull: return "grad_full";
    case Category::Bucket: return "bucket";
    case Category::Activation: return "activation";
    case Category::Workspace: return "workspace";
  }
  return "?";
}

bool isInstant(EventKind kind) {
  switch (kind) {
    case EventKind::BucketReady:
    case EventKind::GradReady:
    case EventKind::Alloc:
    case EventKind::Free:
    case EventKind::StepBegin:
    case EventKind::StepEnd:
    case EventKind::Error:
      return true;
    default:
      return false;
  }
}

}  // namespace shardscope
