// The real-shaped Kineto trace (real_shaped_trace.h). One step: 64 forward
// and 32 backward layer ops, each with the small ops real traces are full of
// (views, transposes, empties), its kernel and launch, [memory] instants and,
// with with_stack, the module's Python frames; an FSDP all-gather before
// every 16 ops and a reduce-scatter after every 16 backward ops on the shard
// group; then the HSDP replicas' all-reduce, the loss all-reduce on the world
// and an MoE-style all-to-all whose record_param_comms carries no args.
#include "real_shaped_trace.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdarg>

namespace shardscope::bench {

namespace {

// Where with_stack finds torch: frames are written whole (literals joined at compile time).
#define SHARDSCOPE_TORCH_SITE "/home/user/.venv/lib/python3.11/site-packages/torch/"

// A layer op of a transformer block: name, its record_shapes args, its kernel and how it is launched.
struct LayerOp {
  const char* name;
  const char* module;  // nn.Module class with_stack names
  const char* source;  // the module's forward, as a with_stack frame
  const char* dims;
  const char* types;
  const char* strides;
  const char* concrete;
  const char* kernel;   // nullptr: a host-only op
  const char* launch;   // cudaLaunchKernel, or cuLaunchKernel for a Triton kernel
};

const LayerOp kLayerOps[] = {
    {"aten::linear", "Linear", SHARDSCOPE_TORCH_SITE "nn/modules/linear.py(125): forward", "[[8, 2048, 4096], [4096, 4096], [4096]]",
     "[\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\"]", "[[8388608, 4096, 1], [4096, 1], [1]]",
     "[\"\", \"\", \"\"]",
     "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
     "cudaLaunchKernel"},
    {"aten::layer_norm", "LayerNorm", SHARDSCOPE_TORCH_SITE "nn/modules/normalization.py(217): forward",
     "[[8, 2048, 4096], [], [4096], [4096], [], []]",
     "[\"c10::BFloat16\", \"\", \"c10::BFloat16\", \"c10::BFloat16\", \"Scalar\", \"Scalar\"]",
     "[[8388608, 4096, 1], [], [1], [1], [], []]", "[\"\", \"[4096]\", \"\", \"\", \"1e-05\", \"True\"]",
     "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, "
     "c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
     "cudaLaunchKernel"},
    {"aten::gelu", "GELU", SHARDSCOPE_TORCH_SITE "nn/modules/activation.py(734): forward", "[[8, 2048, 16384], []]",
     "[\"c10::BFloat16\", \"\"]", "[[33554432, 16384, 1], []]", "[\"\", \"'tanh'\"]", "triton_poi_fused_gelu_0",
     "cuLaunchKernel"},
    {"aten::add_", "Dropout", SHARDSCOPE_TORCH_SITE "nn/modules/dropout.py(70): forward", "[[], [], []]",
     "[\"Scalar\", \"Scalar\", \"Scalar\"]", "[[], [], []]", "[\"1\", \"1\", \"1\"]", nullptr, nullptr},
};

// The small ops under each layer op: few args each.
const char* const kSmallOps[] = {"aten::t", "aten::view", "aten::empty", "aten::transpose", "aten::as_strided",
                                 "aten::detach", "aten::empty_strided", "aten::resolve_conj", "aten::expand",
                                 "aten::reshape", "aten::_unsafe_view", "aten::contiguous", "aten::slice",
                                 "aten::select", "aten::unsqueeze", "aten::squeeze"};


constexpr int64_t kUnitNumel = 100663296;  // an FSDP unit's parameters (4 layers), bf16
constexpr int kComputeStream = 7, kAllGatherStream = 20, kReduceScatterStream = 24, kCopyStream = 9;

class Writer {
 public:
  Writer(const RealShapedOptions& o, RealShapedTally& tally)
      : o_(o), t_(tally), S_(o.shard_group ? o.shard_group : (o.world < 8 ? o.world : 8)), pid_(1427 + o.rank),
        bwd_tid_(pid_ + 31), device_(o.rank % 8) {}

  std::string write() {
    s_.reserve(o_.bytes + (1 << 20));
    header();
    while (s_.size() < o_.bytes) step();
    trailer();
    return std::move(s_);
  }

 private:
  // printf into the document.
  void add(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    va_list a;
    va_start(a, fmt);
    const int n = std::vsnprintf(line_, sizeof line_, fmt, a);
    va_end(a);
    s_.append(line_, static_cast<size_t>(n) < sizeof line_ ? static_cast<size_t>(n) : sizeof line_ - 1);
  }
  // A timestamp or duration as the trace writes it.
  std::string us(double v) const {
    char b[48];
    if (o_.integer_ts) std::snprintf(b, sizeof b, "%lld", static_cast<long long>(std::llround(v)));
    else std::snprintf(b, sizeof b, "%.3f", v);
    return b;
  }
  void counted(const char* category) {
    ++t_.events;
    ++t_.by_category[category];
  }
  GeneratedCollective& collective(const char* kind, int group, int64_t bytes) {
    for (auto& c : t_.collectives)
      if (c.kind == kind && c.group_size == group && c.bytes == bytes) return c;
    t_.collectives.push_back({kind, group, bytes, 0});
    return t_.collectives.back();
  }
  std::string rankList(int first, int count, int stride) const {
    std::string r = "[";
    for (int k = 0; k < count; ++k) r += (k ? ", " : "") + std::to_string(first + k * stride);
    return r + "]";
  }
  int shardFirst() const { return o_.rank / S_ * S_; }
  int replicas() const { return o_.world / S_; }

  void header() {
    add("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\n      \"id\": %d, \"name\": \"NVIDIA H100 80GB "
        "HBM3\", \"totalGlobalMem\": 85031714816,\n      \"computeMajor\": 9, \"computeMinor\": 0,\n      "
        "\"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n      \"regsPerBlock\": 65536, "
        "\"regsPerMultiprocessor\": 65536, \"warpSize\": 32,\n      \"sharedMemPerBlock\": 49152, "
        "\"sharedMemPerMultiprocessor\": 233472,\n      \"numSms\": 132, \"sharedMemPerBlockOptin\": 232448\n    }\n  ],\n"
        "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": %d, \"pg_count\": %d, \"pg_config\": "
        "[{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": \"cuda:nccl\", \"pg_size\": %d, \"ranks\": %s}, "
        "{\"pg_name\": \"1\", \"pg_desc\": \"shard\", \"backend_config\": \"cuda:nccl\", \"pg_size\": %d, \"ranks\": %s}",
        device_, o_.rank, o_.world, replicas() > 1 ? 3 : 2, o_.world, rankList(0, o_.world, 1).c_str(), S_,
        rankList(shardFirst(), S_, 1).c_str());
    if (replicas() > 1)
      add(", {\"pg_name\": \"2\", \"pg_desc\": \"replicate\", \"backend_config\": \"cuda:nccl\", \"pg_size\": %d, "
          "\"ranks\": %s}",
          replicas(), rankList(o_.rank % S_, replicas(), S_).c_str());
    add("], \"nccl_version\": \"2.21.5\"},\n  \"record_shapes\": 1,\n  \"profile_memory\": 1,\n  \"with_stack\": %d,\n"
        "  \"traceEvents\": [\n",
        o_.python_stack ? 1 : 0);
  }

  // A CPU op; `shapes`: its record_shapes args (Input Dims, Input type, Input Strides, Concrete Inputs).
  void cpuOp(const char* name, double ts, double dur, int thread, const LayerOp* shapes, bool forward_seq,
             const std::string& extra_args = "") {
    std::string args = "\"External id\": " + std::to_string(ext_) + ",\"Record function id\": 0, ";
    if (forward_seq) args += "\"Sequence number\": " + std::to_string(seq_) + ", \"Fwd thread id\": 0, ";
    args += "\"Ev Idx\": " + std::to_string(ev_idx_);
    if (shapes)
      args += std::string(", \"Input Dims\": ") + shapes->dims + ", \"Input type\": " + shapes->types +
              ", \"Input Strides\": " + shapes->strides + ", \"Concrete Inputs\": " + shapes->concrete;
    args += extra_args;
    add("  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d,\n"
        "    \"ts\": %s, \"dur\": %s,\n    \"args\": {\n      %s\n    }\n  },\n",
        name, pid_, thread, us(ts).c_str(), us(dur).c_str(), args.c_str());
    counted("cpu_op");
    ++ext_;
    ++ev_idx_;
  }
  void userAnnotation(const char* name, double ts, double dur, int thread, const std::string& args = "") {
    add("  {\n    \"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d,\n"
        "    \"ts\": %s, \"dur\": %s,\n    \"args\": {\n      \"External id\": %lld,\"Record function id\": 0, "
        "\"Ev Idx\": %lld%s\n    }\n  },\n",
        name, pid_, thread, us(ts).c_str(), us(dur).c_str(), (long long)ext_, (long long)ev_idx_, args.c_str());
    counted("user_annotation");
    ++ext_;
    ++ev_idx_;
  }
  void pythonFunction(const std::string& name, double ts, double dur, int thread, int64_t parent, int64_t module_id) {
    const int64_t id = python_id_++;
    add("  {\n    \"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d,\n"
        "    \"ts\": %s, \"dur\": %s,\n    \"args\": {\n      \"Python parent id\": %lld, \"Python id\": %lld, "
        "\"Python thread\": 0%s\n    }\n  },\n",
        name.c_str(), pid_, thread, us(ts).c_str(), us(dur).c_str(), (long long)parent, (long long)id,
        module_id >= 0 ? (", \"Python module id\": " + std::to_string(module_id)).c_str() : "");
    counted("python_function");
  }
  // A launch (cuda_runtime, or cuda_driver for cuLaunchKernel) and its flow's start.
  void launch(const char* api, double ts, double dur, int thread) {
    const bool driver = api[0] == 'c' && api[1] == 'u' && api[2] != 'd';
    const int cbid = driver ? 307 : std::string(api) == "cudaLaunchKernelExC" ? 430
                                  : std::string(api) == "cudaMemcpyAsync" ? 41
                                  : std::string(api) == "cudaMemsetAsync" ? 51 : 211;
    add("  {\n    \"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d,\n"
        "    \"ts\": %s, \"dur\": %s,\n    \"args\": {\n      \"External id\": %lld,\n      \"cbid\": %d, "
        "\"correlation\": %lld\n    }\n  },\n"
        "  {\n    \"ph\": \"s\", \"id\": %lld, \"pid\": %d, \"tid\": %d, \"ts\": %s,\n    \"cat\": \"ac2g\", "
        "\"name\": \"ac2g\"\n  },\n",
        driver ? "cuda_driver" : "cuda_runtime", api, pid_, thread, us(ts).c_str(), us(dur).c_str(), (long long)ext_ - 1,
        cbid, (long long)corr_, (long long)corr_, pid_, thread, us(ts).c_str());
    counted(driver ? "cuda_driver" : "cuda_runtime");
    counted("ac2g");
    ++t_.launches[api];
  }
  void flowEnd(int stream, double ts) {
    add("  {\n    \"ph\": \"f\", \"id\": %lld, \"pid\": %d, \"tid\": %d, \"ts\": %s,\n    \"cat\": \"ac2g\", "
        "\"name\": \"ac2g\", \"bp\": \"e\"\n  },\n",
        (long long)corr_, device_, stream, us(ts).c_str());
    counted("ac2g");
  }
  void kernel(const char* name, double ts, double dur, int stream, const char* grid, const char* block,
              const std::string& extra = "") {
    add("  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d,\n"
        "    \"ts\": %s, \"dur\": %s,\n    \"args\": {\n      \"External id\": %lld,\n      \"queued\": 0, "
        "\"device\": %d, \"context\": 1,\n      \"stream\": %d, \"correlation\": %lld,\n      "
        "\"registers per thread\": 168,\n      \"shared memory\": 213248,\n      \"blocks per SM\": 0.5,\n      "
        "\"warps per SM\": 6,\n      \"grid\": %s,\n      \"block\": %s,\n      "
        "\"est. achieved occupancy %%\": 9%s\n    }\n  },\n",
        name, device_, stream, us(ts).c_str(), us(dur).c_str(), (long long)ext_ - 1, device_, stream, (long long)corr_,
        grid, block, extra.c_str());
    counted("kernel");
    ++t_.gpu_events;
    flowEnd(stream, ts);
    ++corr_;
  }
  void gpuCopy(const char* cat, const char* name, int stream, double ts, double dur, long long bytes,
               const char* bandwidth) {
    add("  {\n    \"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d,\n"
        "    \"ts\": %s, \"dur\": %s,\n    \"args\": {\n      \"External id\": %lld,\n      \"device\": %d, "
        "\"context\": 1,\n      \"stream\": %d, \"correlation\": %lld,\n      \"bytes\": %lld, "
        "\"memory bandwidth (GB/s)\": %s\n    }\n  },\n",
        cat, name, device_, stream, us(ts).c_str(), us(dur).c_str(), (long long)ext_ - 1, device_, stream,
        (long long)corr_, bytes, bandwidth);
    counted(cat);
    ++t_.gpu_events;
    flowEnd(stream, ts);
    ++corr_;
  }
  void memory(double ts, long long delta) {
    allocated_ += delta;
    ++t_.memory_samples;
    t_.peak_allocated = std::max<int64_t>(t_.peak_allocated, allocated_);
    add("  {\n    \"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\",\n"
        "    \"pid\": %d, \"tid\": %d,\n    \"ts\": %s,\n    \"args\": {\n      \"Total Reserved\": "
        "25769803776, \"Total Allocated\": %lld, \"Bytes\": %lld, \"Addr\": %lld, \"Device Id\": %d, "
        "\"Device Type\": 1\n    }\n  },\n",
        pid_, pid_, us(ts).c_str(), allocated_, delta, 139872261980160LL + (long long)(ev_idx_ % 4096) * 2097152,
        device_);
    counted("cpu_instant_event");
  }

  // record_param_comms' args as PyTorch 2.4+ writes them.
  std::string commArgs(const char* name, const char* dtype, int64_t in, int64_t out, int group_size_arg,
                       const char* pg, const char* pg_desc, const std::string& pg_ranks) {
    std::string a = std::string(",\n      \"Collective name\": \"") + name + "\", \"dtype\": \"" + dtype +
                    "\", \"In msg nelems\": " + std::to_string(in) + ", \"Out msg nelems\": " + std::to_string(out) +
                    ", \"In split size\": \"[]\", \"Out split size\": \"[]\", \"Group size\": " +
                    std::to_string(group_size_arg) + ", \"Process Group Name\": \"" + pg +
                    "\", \"Process Group Description\": \"" + pg_desc + "\"";
    if (!pg_ranks.empty()) a += ", \"Process Group Ranks\": \"" + pg_ranks + "\"";
    return a;
  }

  // FSDP's all-gather of a unit on the shard group, as FSDP2 issues it: c10d::_allgather_base_ (its
  // Input Dims give output and input), record_param_comms whose "Group size" is the world's (the shape
  // that reported the world for the group), an arg-less nccl:_all_gather_base, a cudaLaunchKernelExC.
  void allGather(double ts, int thread) {
    const int64_t shard = kUnitNumel / S_;
    const std::string dims = "[[" + std::to_string(kUnitNumel) + "], [" + std::to_string(shard) + "], [], [], []]";
    const LayerOp shapes{"", "", "", dims.c_str(), "[\"c10::BFloat16\", \"c10::BFloat16\", \"ScalarList\", \"Bool\", \"Int\"]",
                         "[[1], [1], [], [], []]", "[\"\", \"\", \"\", \"False\", \"0\"]", nullptr, nullptr};
    cpuOp("c10d::_allgather_base_", ts, 14.5, thread, &shapes, false);
    const std::string args = commArgs("_allgather_base", "BFloat16", shard, kUnitNumel, o_.world, "1", "shard", "");
    cpuOp("record_param_comms", ts + 0.5, 13.5, thread, nullptr, false, args);
    userAnnotation("nccl:_all_gather_base", ts + 1.0, 12.0, thread);
    launch("cudaLaunchKernelExC", ts + 3.0, 8.5, thread);
    kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", ts + 20.0, 300.25, kAllGatherStream,
           "[24, 1, 1]", "[512, 1, 1]", args);
    ++collective("all_gather", S_, 2 * kUnitNumel).count;
  }
  // The gradients' reduce-scatter: record_param_comms with "Process Group Ranks".
  void reduceScatter(double ts, int thread) {
    const int64_t shard = kUnitNumel / S_;
    const std::string args = commArgs("_reduce_scatter_base", "BFloat16", kUnitNumel, shard, S_, "1", "shard",
                                      rankList(shardFirst(), S_, 1));
    cpuOp("record_param_comms", ts, 16.0, thread, nullptr, false, args);
    userAnnotation("nccl:_reduce_scatter_base", ts + 0.5, 15.0, thread);
    launch("cudaLaunchKernelExC", ts + 2.0, 9.0, thread);
    kernel("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", ts + 30.0, 596.5,
           kReduceScatterStream, "[24, 1, 1]", "[512, 1, 1]", args);
    ++collective("reduce_scatter", S_, 2 * kUnitNumel).count;
  }
  // "allreduce" without the underscore, fp32, an arg-less nccl:all_reduce inside.
  void allReduce(double ts, int thread, int64_t numel, int group, const char* pg, const char* desc,
                 const std::string& ranks, int stream, double kernel_us) {
    const std::string args = commArgs("allreduce", "Float", numel, numel, group, pg, desc, ranks);
    cpuOp("record_param_comms", ts, 20.0, thread, nullptr, false, args);
    userAnnotation("nccl:all_reduce", ts + 0.5, 19.0, thread);
    launch("cudaLaunchKernelExC", ts + 2.0, 9.0, thread);
    kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", ts + 25.0, kernel_us, stream,
           "[32, 1, 1]", "[640, 1, 1]", args);
    ++collective("all_reduce", group, numel * 4).count;
  }
  // An MoE dispatch: an arg-less outer record_param_comms, the size only in nccl:all_to_all's
  // Input Dims, then the wait's arg-less record_param_comms.
  void allToAll(double ts, int thread) {
    cpuOp("record_param_comms", ts, 40.0, thread, nullptr, false);
    userAnnotation("nccl:all_to_all", ts + 1.0, 38.0, thread,
                   ", \"Input Dims\": [[8, 1024, 8816]], \"Input type\": [\"float\"]");
    launch("cudaLaunchKernelExC", ts + 3.0, 9.0, thread);
    kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", ts + 45.0, 180.0, kAllGatherStream, "[16, 1, 1]",
           "[640, 1, 1]");
    cpuOp("record_param_comms", ts + 230.0, 6.0, thread, nullptr, false);
    ++collective("all_to_all", 0, int64_t(8) * 1024 * 8816 * 4).count;
  }

  // One layer op: its Python frames, the op, its small ops, its kernel, memory.
  void layerOp(int op, bool backward, int thread) {
    const LayerOp& l = kLayerOps[op % 4];
    if (o_.python_stack && !backward) {
      const int64_t module = python_id_;
      pythonFunction(std::string("nn.Module: ") + l.module + "_" + std::to_string(op), t_us_ - 3.0, 40.0, thread,
                     module - 1, op);
      pythonFunction(SHARDSCOPE_TORCH_SITE "nn/modules/module.py(1736): _wrapped_call_impl", t_us_ - 2.5, 39.0,
                     thread, module, -1);
      pythonFunction(SHARDSCOPE_TORCH_SITE "nn/modules/module.py(1747): _call_impl", t_us_ - 2.0, 38.0, thread,
                     module + 1, -1);
      pythonFunction(l.source, t_us_ - 1.5, 37.0, thread, module + 2, -1);
    }
    if (backward) {
      cpuOp("autograd::engine::evaluate_function: AddmmBackward0", t_us_, 38.5, thread, nullptr, false);
      t_us_ += 0.75;
    }
    cpuOp(l.name, t_us_, 31.25, thread, &l, !backward);
    double at = t_us_ + 0.5;
    for (const char* small : kSmallOps) {
      cpuOp(small, at, 0.25, thread, nullptr, false);
      at += 0.375;
    }
    if (op % 4 == 0) {
      static const LayerOp addmm{"", "", "", "[[4096], [16384, 4096], [4096, 4096], [], []]",
                                 "[\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\", \"Scalar\", \"Scalar\"]",
                                 "[[1], [4096, 1], [1, 4096], [], []]", "[\"\", \"\", \"\", \"1\", \"1\"]", nullptr,
                                 nullptr};
      cpuOp("aten::addmm", t_us_ + 2.5, 25.5, thread, &addmm, !backward);
    }
    if (l.kernel) {
      launch(l.launch, t_us_ + 8.0, 5.125, thread);
      kernel(l.kernel, t_us_ + 14.0, op % 4 == 0 ? 29.75 : 8.5, kComputeStream, "[66, 1, 1]", "[384, 1, 1]");
    }
    // A workspace allocated by one op and freed by the next; an activation every other layer.
    memory(t_us_ + 1.0, op % 2 ? -2097152 : 2097152);
    if (op % 4 == 1) memory(t_us_ + 1.5, op % 8 == 1 ? 67108864 : -67108864);
    if (op % 12 == 5) {
      static const LayerOp copy{"", "", "", "[[8, 2048], [8, 2048], []]", "[\"long int\", \"long int\", \"Scalar\"]",
                                "[[2048, 1], [2048, 1], []]", "[\"\", \"\", \"True\"]", nullptr, nullptr};
      cpuOp("aten::copy_", t_us_ + 20.0, 9.5, thread, &copy, false);
      launch("cudaMemcpyAsync", t_us_ + 21.0, 6.5, thread);
      gpuCopy("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", kCopyStream, t_us_ + 24.0, 5.375, 131072, "24.37");
    }
    if (op % 24 == 11) {
      static const LayerOp zero{"", "", "", "[[4096, 4096]]", "[\"c10::BFloat16\"]", "[[4096, 1]]", "[\"\"]", nullptr,
                                nullptr};
      cpuOp("aten::zero_", t_us_ + 30.0, 4.5, thread, &zero, false);
      launch("cudaMemsetAsync", t_us_ + 31.0, 3.25, thread);
      gpuCopy("gpu_memset", "Memset (Device)", kComputeStream, t_us_ + 45.0, 4.25, 33554432, "2210.5");
    }
    if (!backward) ++seq_;
    t_us_ += 42.125;
  }

  void step() {
    const double start = t_us_;
    for (int op = 0; op < 96; ++op) {
      const bool backward = op >= 64;
      const int thread = backward ? bwd_tid_ : pid_;
      if (op % 16 == 0) {
        allGather(t_us_, thread);
        t_us_ += 15.0;
      }
      layerOp(op, backward, thread);
      if (backward && op % 16 == 15) {
        reduceScatter(t_us_, thread);
        t_us_ += 17.0;
      }
    }
    t_us_ += 650.0;  // the last reduce-scatter drains before the optimizer
    if (replicas() > 1) {
      allReduce(t_us_, pid_, kUnitNumel / S_, replicas(), "2", "replicate", rankList(o_.rank % S_, replicas(), S_),
                kReduceScatterStream, 420.0);
      t_us_ += 450.0;
    }
    allReduce(t_us_, pid_, 1, o_.world, "0", "default_pg", rankList(0, o_.world, 1), kAllGatherStream, 12.5);
    t_us_ += 40.0;
    allToAll(t_us_, pid_);
    t_us_ += 240.0;
    ++t_.steps;
    userAnnotationStep(start);
  }
  void userAnnotationStep(double start) {
    add("  {\n    \"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%lld\", \"pid\": %d, "
        "\"tid\": %d,\n    \"ts\": %s, \"dur\": %s,\n    \"args\": {\n      \"External id\": %lld,"
        "\"Record function id\": 0, \"Ev Idx\": %lld\n    }\n  },\n"
        "  {\n    \"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"ProfilerStep#%lld\", \"pid\": %d, "
        "\"tid\": %d,\n    \"ts\": %s, \"dur\": %s,\n    \"args\": {\n      \"External id\": %lld\n    }\n  },\n",
        (long long)step_number_, pid_, pid_, us(start).c_str(), us(t_us_ - start).c_str(), (long long)ext_,
        (long long)ev_idx_, (long long)step_number_, device_, kComputeStream, us(start + 14.0).c_str(),
        us(t_us_ - start).c_str(), (long long)ext_);
    counted("user_annotation");
    counted("gpu_user_annotation");
    ++step_number_;
    ++ext_;
    ++ev_idx_;
  }

  void trailer() {
    const double begin = 5123999999.0;
    add("  {\n    \"name\": \"process_name\", \"ph\": \"M\", \"ts\": %s, \"pid\": %d, \"tid\": 0,\n"
        "    \"args\": {\n      \"name\": \"python\"\n    }\n  },\n"
        "  {\n    \"name\": \"process_labels\", \"ph\": \"M\", \"ts\": %s, \"pid\": %d, \"tid\": 0,\n"
        "    \"args\": {\n      \"labels\": \"GPU %d\"\n    }\n  },\n"
        "  {\n    \"name\": \"thread_name\", \"ph\": \"M\", \"ts\": %s, \"pid\": %d, \"tid\": %d,\n"
        "    \"args\": {\n      \"name\": \"thread %d (python)\"\n    }\n  },\n",
        us(begin).c_str(), pid_, us(begin).c_str(), device_, device_, us(begin).c_str(), pid_, pid_, pid_);
    for (int k = 0; k < 3; ++k) counted("(metadata)");
    add("  {\n    \"ph\": \"X\", \"cat\": \"Trace\", \"ts\": %s, \"dur\": %s,\n    \"pid\": \"Spans\", "
        "\"tid\": \"PyTorch Profiler\",\n    \"name\": \"PyTorch Profiler (0)\",\n    \"args\": {\n      "
        "\"Op count\": 0\n    }\n  },\n"
        "  {\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"\", \"tid\": \"\", "
        "\"ts\": %s\n  }\n],\n  \"traceName\": \"rank%d.pt.trace.json\",\n  \"displayTimeUnit\": \"ms\",\n"
        "  \"baseTimeNanoseconds\": 1727000000000000000}\n",
        us(begin).c_str(), us(t_us_ - begin).c_str(), us(t_us_ + 1.0).c_str(), o_.rank);
    counted("Trace");
    counted("(none)");
  }

  const RealShapedOptions& o_;
  RealShapedTally& t_;
  const int S_, pid_, bwd_tid_, device_;
  std::string s_;
  char line_[16384];
  int64_t corr_ = 1, ext_ = 1, seq_ = 1, ev_idx_ = 0, step_number_ = 1, python_id_ = 1;
  long long allocated_ = 12884901888LL;
  double t_us_ = 5124000000.125;  // µs, relative to baseTimeNanoseconds as Kineto writes it
};

#undef SHARDSCOPE_TORCH_SITE

}  // namespace

std::string realShapedOptionsError(const RealShapedOptions& o) {
  if (o.bytes == 0) return "--mb must be above 0";
  if (o.world < 1) return "--world must be at least 1";
  if (o.rank < 0 || o.rank >= o.world) return "--rank must be in [0, --world)";
  const int s = o.shard_group ? o.shard_group : (o.world < 8 ? o.world : 8);
  if (s < 1 || o.world % s != 0) return "--shard-group must divide --world";
  if (kUnitNumel % s != 0) return "--shard-group must divide 100663296 (an FSDP unit's parameters)";
  return {};
}

std::string writeRealShapedTrace(const RealShapedOptions& o, RealShapedTally* tally) {
  RealShapedTally scratch;
  return Writer(o, tally ? *tally : scratch).write();
}

}  // namespace shardscope::bench
