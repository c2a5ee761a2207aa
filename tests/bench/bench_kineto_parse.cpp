// Reading a PyTorch profiler trace: parse + index throughput of core/kineto
// on two generated Kineto traces — "synthetic" (float µs timestamps with ns
// digits, kernels, launches, collectives, memory instants, few args) and
// "real_shaped" (Kineto's own layout and a real trace's arg mix, about 235
// bytes per event) — against simdjson's own full DOM parse of the same buffer
// (the parser's limit) and Python's json.load of the same file (what HTA
// does), timed by /usr/bin/python3 in the same run; and the synthetic trace
// gzipped, inflated by zlib's stream and by libdeflate (whole buffer) in the
// same run, next to a memcpy of the JSON (the memory limit).
// SHARDSCOPE_BENCH_KINETO_MB sets the traces' size (default 200);
// `bench_kineto_parse --write-real-shaped PATH [--mb N] [--rank R] [--world W]`
// writes the real-shaped trace and exits.
#include <benchmark/benchmark.h>
#include <simdjson.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <cstdlib>
#include <fstream>
#include <string>

#include "inspect/event_store.h"
#include "inspect/timeline_layout.h"
#include "kineto/kineto_json_reader.h"
#include "kineto/kineto_walk_tuning.h"
#include "kineto/kineto_parser.h"
#include "kineto/kineto_run_trace.h"
#include "kineto/trace_set.h"
#include "kineto/trace_file.h"
#include "kineto/trace_analysis.h"
#include "kineto/trace_index.h"

using namespace shardscope::kineto;

namespace {

size_t targetBytes() {
  const char* mb = std::getenv("SHARDSCOPE_BENCH_KINETO_MB");
  return static_cast<size_t>(mb ? std::atof(mb) : 200.0) * 1000 * 1000;
}

// A trace shaped like a Kineto export of a DDP step loop.
std::string generateTrace(size_t bytes) {
  std::string s;
  s.reserve(bytes + (1 << 20));
  s += "{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 8},\n"
       "\"traceEvents\": [\n";
  char line[4096];
  int64_t corr = 1, step = 1;
  double t = 1000.0;
  while (s.size() < bytes) {
    const double step_start = t;
    for (int op = 0; op < 200 && s.size() < bytes; ++op, ++corr) {
      std::snprintf(line, sizeof line,
                    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": 4242, \"tid\": 4242, "
                    "\"ts\": %.3f, \"dur\": 12.125, \"args\": {\"External id\": %lld, \"Record function id\": 0, "
                    "\"Ev Idx\": %lld}},\n"
                    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 4242, "
                    "\"tid\": 4242, \"ts\": %.3f, \"dur\": 4.250, \"args\": {\"External id\": %lld, \"cbid\": 211, "
                    "\"correlation\": %lld}},\n"
                    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize"
                    "128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas\", \"pid\": 0, \"tid\": 7, "
                    "\"ts\": %.3f, \"dur\": 35.517, \"args\": {\"External id\": %lld, \"queued\": 0, \"device\": 0, "
                    "\"context\": 1, \"stream\": 7, \"correlation\": %lld, \"registers per thread\": 168, "
                    "\"shared memory\": 213248, \"blocks per SM\": 0.5, \"warps per SM\": 2, \"grid\": [66, 1, 1], "
                    "\"block\": [384, 1, 1], \"est. achieved occupancy %%\": 3}},\n"
                    "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": "
                    "4242, \"tid\": 4242, \"ts\": %.3f, \"args\": {\"Device Type\": 1, \"Device Id\": 0, \"Addr\": "
                    "139872261980160, \"Bytes\": %lld, \"Total Allocated\": %lld, \"Total Reserved\": 4294967296}},\n",
                    t, (long long)corr, (long long)corr, t + 1.5, (long long)corr, (long long)corr, t + 20.0,
                    (long long)corr, (long long)corr, t + 2.0,
                    // an activation allocated on even ops and freed on odd ones, so the totals agree with the deltas
                    (long long)(op % 2 == 0 ? 2097152 : -2097152), (long long)(1000000000 + (op % 2 == 0 ? 2097152 : 0)));
      s += line;
      if (op % 20 == 19) {
        std::snprintf(line, sizeof line,
                      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": 4242, \"tid\": "
                      "4242, \"ts\": %.3f, \"dur\": 30.000, \"args\": {\"Collective name\": \"allreduce\", \"dtype\": "
                      "\"BFloat16\", \"In msg nelems\": 6553600, \"Out msg nelems\": 6553600, \"Group size\": 8, "
                      "\"Process Group Name\": \"0\", \"Process Group Ranks\": \"[0, 1, 2, 3, 4, 5, 6, 7]\"}},\n"
                      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*"
                      ", unsigned long, ncclWork*)\", \"pid\": 0, \"tid\": 20, \"ts\": %.3f, \"dur\": 410.250, \"args\": "
                      "{\"queued\": 0, \"device\": 0, \"context\": 1, \"stream\": 20, \"correlation\": %lld}},\n",
                      t + 5.0, t + 40.0, (long long)corr);
        s += line;
      }
      t += 40.123;
    }
    std::snprintf(line, sizeof line,
                  "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%lld\", \"pid\": 4242, "
                  "\"tid\": 4242, \"ts\": %.3f, \"dur\": %.3f, \"args\": {}},\n",
                  (long long)step++, step_start, t - step_start);
    s += line;
  }
  s += "{\"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\", \"pid\": \"\", \"tid\": \"\", \"ts\": 1}\n],\n"
       "\"traceName\": \"generated\", \"baseTimeNanoseconds\": 1700000000000000000}\n";
  return s;
}

// A trace shaped like a real Kineto export (PyTorch 2.x, record_shapes on) of
// a DDP step loop: Kineto's own layout (an event over several indented
// lines), args on most events (cpu_op: External id, Record function id,
// Sequence number, Fwd thread id, Ev Idx, Input Dims, Input type; launches:
// External id, cbid, correlation; kernels: every arg CUPTI gives), ac2g flow
// pairs, [memory] instants, memcpy and memset, ProfilerStep#N, and every 16
// ops a record_param_comms + nccl:all_reduce + its NCCL kernel with the
// collective's args; distributedInfo and deviceProperties before the events.
// About 235 bytes per event; real traces have 200-250 (the HTA test trace
// issue 34 measured, repeated to 187.5 MB: 217).
std::string generateRealShapedTrace(size_t bytes, int rank = 0, int world = 8) {
  std::string s;
  s.reserve(bytes + (1 << 20));
  char line[8192];
  std::snprintf(line, sizeof line,
                "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\n      \"id\": %d, \"name\": \"NVIDIA H100 80GB HBM3\", "
                "\"totalGlobalMem\": 85031714816,\n      \"computeMajor\": 9, \"computeMinor\": 0,\n      "
                "\"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n      \"regsPerBlock\": 65536, "
                "\"regsPerMultiprocessor\": 65536, \"warpSize\": 32,\n      \"sharedMemPerBlock\": 49152, "
                "\"sharedMemPerMultiprocessor\": 233472,\n      \"numSms\": 132, \"sharedMemPerBlockOptin\": 232448\n    }\n  ],\n"
                "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": %d, \"pg_count\": 1, "
                "\"pg_config\": [{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": \"cuda:nccl\", "
                "\"pg_size\": %d, \"ranks\": [",
                rank % 8, rank, world, world);
  s += line;
  for (int r = 0; r < world; ++r) s += (r ? ", " : "") + std::to_string(r);
  s += "]}], \"nccl_version\": \"2.20.5\"},\n  \"record_shapes\": 1,\n  \"with_stack\": 0,\n  \"traceEvents\": [\n";
  const int pid = 1427 + rank, tid = pid, bwd_tid = pid + 31;
  // The forward ops of a transformer block: name, input dims, input types.
  struct Op {
    const char* name;
    const char* dims;
    const char* types;
    const char* kernel;
  };
  static const Op kOps[] = {
      {"aten::linear", "[[8, 2048, 4096], [4096, 4096], [4096]]", "[\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\"]",
       "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"},
      {"aten::layer_norm", "[[8, 2048, 4096], [], [4096], [4096], [], []]",
       "[\"c10::BFloat16\", \"\", \"c10::BFloat16\", \"c10::BFloat16\", \"Scalar\", \"Scalar\"]",
       "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, "
       "c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)"},
      {"aten::gelu", "[[8, 2048, 16384], []]", "[\"c10::BFloat16\", \"\"]",
       "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(...)::{lambda()#2}, "
       "at::detail::Array<char*, 2> >(int, ...)"},
      {"aten::add_", "[[], [], []]", "[\"Scalar\", \"Scalar\", \"Scalar\"]", nullptr},  // a host-side step counter
  };
  int64_t corr = 1, ext = 1, seq = 1, ev_idx = 0, step = 1;
  double t = 5124000000.125;  // µs, relative to baseTimeNanoseconds as Kineto writes it
  const auto cpuOp = [&](const char* name, double ts, double dur, int thread, const char* dims, const char* types,
                         bool seq_nr) {
    char args[1024];
    if (dims)
      std::snprintf(args, sizeof args,
                    "\"External id\": %lld,\"Record function id\": 0, %s\"Ev Idx\": %lld, \"Input Dims\": %s, "
                    "\"Input type\": %s",
                    (long long)ext, seq_nr ? ("\"Sequence number\": " + std::to_string(seq) + ", \"Fwd thread id\": 0, ").c_str() : "",
                    (long long)ev_idx, dims, types);
    else
      std::snprintf(args, sizeof args, "\"External id\": %lld,\"Record function id\": 0, \"Ev Idx\": %lld",
                    (long long)ext, (long long)ev_idx);
    std::snprintf(line, sizeof line,
                  "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d,\n"
                  "    \"ts\": %.3f, \"dur\": %.3f,\n    \"args\": {\n      %s\n    }\n  },\n",
                  name, pid, thread, ts, dur, args);
    s += line;
    ++ext;
    ++ev_idx;
  };
  const auto launch = [&](const char* name, int cbid, double ts, double dur, int thread) {
    std::snprintf(line, sizeof line,
                  "  {\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d,\n"
                  "    \"ts\": %.3f, \"dur\": %.3f,\n    \"args\": {\n      \"External id\": %lld,\n      \"cbid\": %d, "
                  "\"correlation\": %lld\n    }\n  },\n"
                  "  {\n    \"ph\": \"s\", \"id\": %lld, \"pid\": %d, \"tid\": %d, \"ts\": %.3f,\n    \"cat\": \"ac2g\", "
                  "\"name\": \"ac2g\"\n  },\n",
                  name, pid, thread, ts, dur, (long long)ext - 1, cbid, (long long)corr, (long long)corr, pid, thread, ts);
    s += line;
  };
  const auto flowEnd = [&](int stream, double ts) {
    std::snprintf(line, sizeof line,
                  "  {\n    \"ph\": \"f\", \"id\": %lld, \"pid\": %d, \"tid\": %d, \"ts\": %.3f,\n    \"cat\": \"ac2g\", "
                  "\"name\": \"ac2g\", \"bp\": \"e\"\n  },\n",
                  (long long)corr, rank % 8, stream, ts);
    s += line;
  };
  const auto kernel = [&](const char* name, double ts, double dur, int stream, const char* grid, const char* block,
                          const std::string& extra) {
    std::snprintf(line, sizeof line,
                  "  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d,\n"
                  "    \"ts\": %.3f, \"dur\": %.3f,\n    \"args\": {\n      \"External id\": %lld,\n      \"queued\": 0, "
                  "\"device\": %d, \"context\": 1,\n      \"stream\": %d, \"correlation\": %lld,\n      "
                  "\"registers per thread\": 168,\n      \"shared memory\": 213248,\n      \"blocks per SM\": 0.5,\n      "
                  "\"warps per SM\": 6,\n      \"grid\": %s,\n      \"block\": %s,\n      "
                  "\"est. achieved occupancy %%\": 9%s\n    }\n  },\n",
                  name, rank % 8, stream, ts, dur, (long long)ext - 1, rank % 8, stream, (long long)corr, grid, block,
                  extra.c_str());
    s += line;
    flowEnd(stream, ts);
    ++corr;
  };
  // A memcpy or memset on a stream (its launch written just before), and its flow's end.
  const auto gpuCopy = [&](const char* cat, const char* name, int stream, double ts, double dur, long long bytes,
                           const char* bandwidth) {
    std::snprintf(line, sizeof line,
                  "  {\n    \"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d,\n"
                  "    \"ts\": %.3f, \"dur\": %.3f,\n    \"args\": {\n      \"External id\": %lld,\n      \"device\": %d, "
                  "\"context\": 1,\n      \"stream\": %d, \"correlation\": %lld,\n      \"bytes\": %lld, "
                  "\"memory bandwidth (GB/s)\": %s\n    }\n  },\n",
                  cat, name, rank % 8, stream, ts, dur, (long long)ext - 1, rank % 8, stream, (long long)corr, bytes,
                  bandwidth);
    s += line;
    flowEnd(stream, ts);
    ++corr;
  };
  const auto memory = [&](double ts, long long delta, long long total) {
    std::snprintf(line, sizeof line,
                  "  {\n    \"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\",\n"
                  "    \"pid\": %d, \"tid\": %d,\n    \"ts\": %.3f,\n    \"args\": {\n      \"Total Reserved\": "
                  "25769803776, \"Total Allocated\": %lld, \"Bytes\": %lld, \"Addr\": %lld, \"Device Id\": %d, "
                  "\"Device Type\": 1\n    }\n  },\n",
                  pid, tid, ts, total, delta, 139872261980160LL + (long long)(ev_idx % 4096) * 2097152, rank % 8);
    s += line;
  };
  const std::string ranks_text = [&] {
    std::string r = "[";
    for (int k = 0; k < world; ++k) r += (k ? ", " : "") + std::to_string(k);
    return r + "]";
  }();
  const std::string comm_args = ",\n      \"Collective name\": \"allreduce\", \"dtype\": \"BFloat16\", \"In msg nelems\": "
                                "26214400, \"Out msg nelems\": 26214400, \"Group size\": " + std::to_string(world) +
                                ", \"Process Group Name\": \"0\", \"Process Group Ranks\": \"" + ranks_text + "\"";
  long long allocated = 12884901888LL;
  while (s.size() < bytes) {
    const double step_start = t;
    for (int op = 0; op < 96 && s.size() < bytes; ++op) {
      const Op& o = kOps[op % 4];
      const bool backward = op >= 64;
      const int thread = backward ? bwd_tid : tid;
      if (backward) {
        cpuOp("autograd::engine::evaluate_function: AddmmBackward0", t, 38.5, thread, nullptr, nullptr, false);
        t += 0.75;
      }
      cpuOp(o.name, t, 31.25, thread, o.dims, o.types, !backward);
      // The small ops real traces are full of (views, transposes, empties): few args each.
      static const char* const kSmallOps[] = {"aten::t", "aten::view", "aten::empty", "aten::transpose",
                                              "aten::as_strided", "aten::detach", "aten::empty_strided",
                                              "aten::resolve_conj", "aten::expand", "aten::reshape",
                                              "aten::_unsafe_view", "aten::contiguous", "aten::slice",
                                              "aten::select", "aten::unsqueeze", "aten::squeeze"};
      double at = t + 0.5;
      for (const char* small : kSmallOps) {
        cpuOp(small, at, 0.25, thread, nullptr, nullptr, false);
        at += 0.375;
      }
      if (op % 4 == 0) {  // linear: its addmm child
        cpuOp("aten::addmm", t + 2.5, 25.5, thread, "[[4096], [16384, 4096], [4096, 4096], [], []]",
              "[\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\", \"Scalar\", \"Scalar\"]", !backward);
      }
      if (o.kernel) {
        launch("cudaLaunchKernel", 211, t + 8.0, 5.125, thread);
        kernel(o.kernel, t + 14.0, op % 4 == 0 ? 29.75 : 8.5, 7, "[66, 1, 1]", "[384, 1, 1]", "");
      }
      if (op % 4 == 1) {
        allocated += op % 2 ? -67108864 : 67108864;
        memory(t + 1.0, op % 2 ? -67108864 : 67108864, allocated);
      }
      if (op % 12 == 5) {
        cpuOp("aten::copy_", t + 20.0, 9.5, thread, "[[8, 2048], [8, 2048], []]", "[\"long int\", \"long int\", \"Scalar\"]",
              false);
        launch("cudaMemcpyAsync", 41, t + 21.0, 6.5, thread);
        gpuCopy("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 9, t + 24.0, 5.375, 131072, "24.37");
      }
      if (op % 24 == 11) {
        cpuOp("aten::zero_", t + 30.0, 4.5, thread, "[[4096, 4096]]", "[\"c10::BFloat16\"]", false);
        launch("cudaMemsetAsync", 51, t + 31.0, 3.25, thread);
        gpuCopy("gpu_memset", "Memset (Device)", 7, t + 45.0, 4.25, 33554432, "2210.5");
      }
      if (backward && op % 16 == 15) {  // a DDP bucket's all-reduce
        std::snprintf(line, sizeof line,
                      "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": %d, "
                      "\"tid\": %d,\n    \"ts\": %.3f, \"dur\": %.3f,\n    \"args\": {\n      \"External id\": %lld,"
                      "\"Record function id\": 0, \"Ev Idx\": %lld%s\n    }\n  },\n",
                      pid, thread, t + 40.0, 30.0, (long long)ext, (long long)ev_idx, comm_args.c_str());
        s += line;
        ++ext;
        ++ev_idx;
        cpuOp("nccl:all_reduce", t + 41.0, 28.0, thread, nullptr, nullptr, false);
        launch("cudaLaunchKernelExC", 430, t + 44.0, 9.0, thread);
        kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", t + 50.0, 596.5, 20,
               "[32, 1, 1]", "[640, 1, 1]", comm_args);
      }
      if (!backward) ++seq;
      t += 42.125;
    }
    std::snprintf(line, sizeof line,
                  "  {\n    \"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%lld\", \"pid\": %d, "
                  "\"tid\": %d,\n    \"ts\": %.3f, \"dur\": %.3f,\n    \"args\": {\n      \"External id\": %lld,"
                  "\"Record function id\": 0, \"Ev Idx\": %lld\n    }\n  },\n"
                  "  {\n    \"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"ProfilerStep#%lld\", \"pid\": %d, "
                  "\"tid\": 7,\n    \"ts\": %.3f, \"dur\": %.3f,\n    \"args\": {\n      \"External id\": %lld\n    }\n  },\n",
                  (long long)step, pid, tid, step_start, t - step_start, (long long)ext, (long long)ev_idx,
                  (long long)step, rank % 8, step_start + 14.0, t - step_start, (long long)ext);
    s += line;
    ++step;
    ++ext;
    ++ev_idx;
  }
  std::snprintf(line, sizeof line,
                "  {\n    \"name\": \"process_name\", \"ph\": \"M\", \"ts\": %.3f, \"pid\": %d, \"tid\": 0,\n"
                "    \"args\": {\n      \"name\": \"python\"\n    }\n  },\n"
                "  {\n    \"name\": \"process_labels\", \"ph\": \"M\", \"ts\": %.3f, \"pid\": %d, \"tid\": 0,\n"
                "    \"args\": {\n      \"labels\": \"GPU %d\"\n    }\n  },\n"
                "  {\n    \"name\": \"thread_name\", \"ph\": \"M\", \"ts\": %.3f, \"pid\": %d, \"tid\": %d,\n"
                "    \"args\": {\n      \"name\": \"thread %d (python)\"\n    }\n  },\n"
                "  {\n    \"ph\": \"X\", \"cat\": \"Trace\", \"ts\": 5123999999.000, \"dur\": %.3f,\n    \"pid\": \"Spans\", "
                "\"tid\": \"PyTorch Profiler\",\n    \"name\": \"PyTorch Profiler (0)\",\n    \"args\": {\n      "
                "\"Op count\": 0\n    }\n  },\n"
                "  {\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n    \"pid\": \"\", \"tid\": \"\", "
                "\"ts\": %.3f\n  }\n],\n  \"traceName\": \"rank%d.pt.trace.json\",\n  \"displayTimeUnit\": \"ms\",\n"
                "  \"baseTimeNanoseconds\": 1727000000000000000}\n",
                5123999999.0, pid, 5123999999.0, rank % 8, rank % 8, 5123999999.0, pid, tid, tid, t - 5123999999.0, t + 1.0,
                rank);
  s += line;
  return s;
}

// The generated traces, written once to /tmp and reused by later runs.
const std::string& tracePath() {
  static const std::string path = [] {
    const size_t bytes = targetBytes();
    const std::string p = "/tmp/shardscope_bench_kineto_v2_" + std::to_string(bytes / 1000000) + "MB.json";
    std::ifstream probe(p, std::ios::binary | std::ios::ate);
    if (!probe || static_cast<size_t>(probe.tellg()) < bytes) std::ofstream(p, std::ios::binary) << generateTrace(bytes);
    return p;
  }();
  return path;
}

const std::string& realShapedPath() {
  static const std::string path = [] {
    const size_t bytes = targetBytes();
    const std::string p = "/tmp/shardscope_bench_kineto_real_v1_" + std::to_string(bytes / 1000000) + "MB.json";
    std::ifstream probe(p, std::ios::binary | std::ios::ate);
    if (!probe || static_cast<size_t>(probe.tellg()) < bytes)
      std::ofstream(p, std::ios::binary) << generateRealShapedTrace(bytes);
    return p;
  }();
  return path;
}

// The same trace gzipped (zlib level 6, like Python's gzip default 9 but quicker to make).
const std::string& gzipPath() {
  static const std::string path = [] {
    const std::string p = tracePath() + ".gz";
    std::ifstream probe(p, std::ios::binary);
    if (!probe) {
      std::ifstream in(tracePath(), std::ios::binary);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      gzFile gz = gzopen(p.c_str(), "wb6");
      gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
      gzclose(gz);
    }
    return p;
  }();
  return path;
}

const PaddedBuffer& traceBuffer() {
  static const PaddedBuffer b = readTraceFile(tracePath());
  return b;
}

const PaddedBuffer& realShapedBuffer() {
  static const PaddedBuffer b = readTraceFile(realShapedPath());
  return b;
}

// Which generated trace a benchmark reads: the synthetic one (few args) or the real-shaped one.
struct Trace {
  const std::string& (*path)();
  const PaddedBuffer& (*buffer)();
};
const Trace kSynthetic{tracePath, traceBuffer};
const Trace kRealShaped{realShapedPath, realShapedBuffer};

// Arg 0: the whole document as one simdjson document; 1: its events in
// windows, on every core (what parseKinetoTrace does with a large document);
// 2: windows on one thread. Wall time: the walk runs on several threads.
void BM_KinetoParseIndex(benchmark::State& state, Trace trace) {
  const PaddedBuffer& json = trace.buffer();
  const bool windows = state.range(0) >= 1;
  setKinetoChunkBytes(windows ? 0 : size_t(1) << 40);
  if (state.range(0) != 1) setKinetoWalkThreads(1);
  size_t events = 0, held = 0;
  uint32_t walked_windows = 0, parts = 0;
  for (auto _ : state) {
    RankTrace t = parseKinetoTrace(json, trace.path());
    TraceIndex idx = buildTraceIndex(t);
    benchmark::DoNotOptimize(idx.collectives.data());
    events = t.events.size();
    held = t.memoryBytes();
    walked_windows = t.json_windows;
    parts = t.json_parts;
  }
  setKinetoChunkBytes(0);
  setKinetoWalkThreads(0);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * json.size));
  state.counters["events_per_s"] = benchmark::Counter(double(events) * double(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["bytes_per_event"] = double(held) / double(events);
  state.counters["events"] = double(events);
  state.counters["windows"] = walked_windows;
  state.counters["threads"] = parts;
  state.counters["avx2_walk"] = kinetoAvx2WalkUsed() ? 1 : 0;
  state.SetLabel(!windows ? "whole document" : state.range(0) == 1 ? "windows, every core" : "windows, one thread");
}
BENCHMARK_CAPTURE(BM_KinetoParseIndex, synthetic, kSynthetic)
    ->Arg(0)->Arg(2)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK_CAPTURE(BM_KinetoParseIndex, real_shaped, kRealShaped)
    ->Arg(2)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

// From the file to the index, as `shardscope-cli analyze` reads one file (and
// as Python's json.load(open(...)) below reads it): the read into fresh
// memory included.
// Arg 0: one thread (streamed through a buffer of a few windows); 1: every
// core, a part of the file each (read with pread, walked in windows).
void BM_KinetoLoadFile(benchmark::State& state, Trace trace) {
  if (state.range(0) == 0) setKinetoWalkThreads(1);
  size_t bytes = 0;
  uint32_t parts = 0;
  for (auto _ : state) {
    RankTrace t = loadKinetoFile(trace.path());
    TraceIndex idx = buildTraceIndex(t);
    benchmark::DoNotOptimize(idx.collectives.data());
    bytes = t.json_bytes;
    parts = t.json_parts;
  }
  setKinetoWalkThreads(0);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["threads"] = parts;
}
BENCHMARK_CAPTURE(BM_KinetoLoadFile, synthetic, kSynthetic)
    ->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();
BENCHMARK_CAPTURE(BM_KinetoLoadFile, real_shaped, kRealShaped)
    ->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

// What `shardscope-cli analyze FILE` does after the program has started: the
// load (read, parse, index) and every analysis, without printing.
void BM_KinetoAnalyze(benchmark::State& state, Trace trace) {
  size_t bytes = 0;
  for (auto _ : state) {
    const TraceSet set = loadTraceSet({trace.path()}, {.rank_of = {{trace.path(), 0}}});
    const JobAnalysis job = analyzeTraceSet(set, HtaOptions{});
    benchmark::DoNotOptimize(job.ranks.data());
    bytes = set.ranks[0].json_bytes;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK_CAPTURE(BM_KinetoAnalyze, real_shaped, kRealShaped)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

// What File ▸ Open does with a job once read: parse + index, the import into
// the views' events, the store, the timeline's first index and one frame's
// layout (zoomed out) — the time until the trace is on screen, less painting.
void BM_KinetoOpenInViews(benchmark::State& state) {
  const PaddedBuffer& json = traceBuffer();
  size_t events = 0;
  for (auto _ : state) {
    TraceSet set;
    set.ranks.push_back(parseKinetoTrace(json, tracePath()));
    set.indexes.push_back(buildTraceIndex(set.ranks.back()));
    shardscope::EventStore store;
    store.setFromTrace(importedRunTrace(std::move(set)));
    shardscope::TimelineLayout layout;
    layout.sync(store);
    layout.layout(static_cast<double>(store.beginNs()), static_cast<double>(store.endNs()), 1600, 0,
                  static_cast<int>(layout.rows().size()) - 1);
    benchmark::DoNotOptimize(layout.items().data());
    events = store.eventCount();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * json.size));
  state.counters["view_events"] = double(events);
}
BENCHMARK(BM_KinetoOpenInViews)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();

// Arg 0: zlib's streaming inflate; 1: libdeflate, whole buffer (what
// readTraceFile picks when built with it).
void BM_KinetoReadGzip(benchmark::State& state) {
  const std::string& gz = gzipPath();
  const bool fast = state.range(0) == 1;
  if (fast && !haveLibdeflate()) {
    state.SkipWithError("built without libdeflate");
    return;
  }
  std::ifstream probe(gz, std::ios::binary | std::ios::ate);
  const auto gz_bytes = static_cast<double>(probe.tellg());
  size_t json = 0;
  for (auto _ : state) {
    const PaddedBuffer b = readTraceFile(gz, kMaxTraceBytes, fast ? GzipInflater::Fastest : GzipInflater::Zlib);
    json = b.size;
    benchmark::DoNotOptimize(b.data.get());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * json));  // inflated bytes
  state.counters["gz_MB"] = gz_bytes / 1e6;
  state.SetLabel(fast ? "libdeflate" : "zlib");
}
BENCHMARK(BM_KinetoReadGzip)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(2);

// From the .gz file to the index, as `analyze` and File ▸ Open read one:
// inflated whole (libdeflate when built with it), then walked on every core.
void BM_KinetoLoadGzipFile(benchmark::State& state) {
  const std::string& gz = gzipPath();
  size_t bytes = 0;
  for (auto _ : state) {
    RankTrace t = loadKinetoFile(gz);
    TraceIndex idx = buildTraceIndex(t);
    benchmark::DoNotOptimize(idx.collectives.data());
    bytes = t.json_bytes;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));  // inflated bytes
}
BENCHMARK(BM_KinetoLoadGzipFile)->Unit(benchmark::kMillisecond)->Iterations(2)->UseRealTime();

// Copying the JSON once: what any reader of the buffer pays at least. The
// copy's pages are touched before the clock starts (a first touch is a page
// fault, not memory bandwidth).
void BM_MemcpyTrace(benchmark::State& state, Trace trace) {
  const PaddedBuffer& json = trace.buffer();
  std::unique_ptr<char[]> copy(new char[json.size]);
  std::memset(copy.get(), 1, json.size);
  for (auto _ : state) {
    std::memcpy(copy.get(), json.data.get(), json.size);
    benchmark::DoNotOptimize(copy.get());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * json.size));
}
BENCHMARK_CAPTURE(BM_MemcpyTrace, synthetic, kSynthetic)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK_CAPTURE(BM_MemcpyTrace, real_shaped, kRealShaped)->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_SimdjsonDomParse(benchmark::State& state, Trace trace) {
  const PaddedBuffer& json = trace.buffer();
  simdjson::dom::parser parser;
  simdjson::dom::element warm;  // one untimed parse: the parser's buffers touched once, as when reused
  if (parser.parse(json.data.get(), json.size, false).get(warm)) state.SkipWithError("simdjson parse failed");
  for (auto _ : state) {
    simdjson::dom::element doc;
    if (parser.parse(json.data.get(), json.size, false).get(doc)) state.SkipWithError("simdjson parse failed");
    benchmark::DoNotOptimize(doc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * json.size));
  state.SetLabel(simdjson::get_active_implementation()->name());
}
BENCHMARK_CAPTURE(BM_SimdjsonDomParse, synthetic, kSynthetic)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_SimdjsonDomParse, real_shaped, kRealShaped)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_PythonJsonLoad(benchmark::State& state, Trace trace) {
  const std::string cmd = "/usr/bin/python3 -c \"import json,sys,time; t=time.perf_counter(); "
                          "json.load(open(sys.argv[1])); print(time.perf_counter()-t)\" " + trace.path();
  for (auto _ : state) {
    std::FILE* p = popen(cmd.c_str(), "r");
    double seconds = -1;
    if (!p || std::fscanf(p, "%lf", &seconds) != 1) state.SkipWithError("/usr/bin/python3 did not report a time");
    if (p) pclose(p);
    state.SetIterationTime(seconds);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * trace.buffer().size));
}
BENCHMARK_CAPTURE(BM_PythonJsonLoad, synthetic, kSynthetic)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);
BENCHMARK_CAPTURE(BM_PythonJsonLoad, real_shaped, kRealShaped)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);

}  // namespace

// bench_kineto_parse --write-real-shaped PATH [--mb N] [--rank R] [--world W]:
// writes the real-shaped trace (N MB, default 200) and exits, so that
// `shardscope-cli analyze` and Python can be timed on the same file.
int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "--write-real-shaped") == 0) {
    double mb = 200;
    int rank = 0, world = 8;
    for (int i = 3; i + 1 < argc; i += 2) {
      if (std::strcmp(argv[i], "--mb") == 0) mb = std::atof(argv[i + 1]);
      else if (std::strcmp(argv[i], "--rank") == 0) rank = std::atoi(argv[i + 1]);
      else if (std::strcmp(argv[i], "--world") == 0) world = std::atoi(argv[i + 1]);
      else {
        std::fprintf(stderr, "error: --write-real-shaped takes --mb N, --rank R, --world W, not '%s'\n", argv[i]);
        return 2;
      }
    }
    if (mb <= 0 || rank < 0 || world < 1 || rank >= world) {
      std::fprintf(stderr, "error: --mb must be above 0 and --rank in [0, --world)\n");
      return 2;
    }
    std::ofstream out(argv[2], std::ios::binary);
    out << generateRealShapedTrace(static_cast<size_t>(mb * 1e6), rank, world);
    if (!out.flush()) {
      std::fprintf(stderr, "error: cannot write %s\n", argv[2]);
      return 1;
    }
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
