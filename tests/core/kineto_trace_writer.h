// Writes small PyTorch profiler (Kineto) traces for tests whose numbers are
// worked out by hand: spans on a host thread and on GPU streams, launches
// paired with kernels by correlation. Times are integer ns, written as µs
// with three decimals (Kineto's "1733500000123.456"), so every value a test
// states is what the reader gets. With real_args every event carries the args
// a real trace has (External id, cbid, grid, block, Input Dims, ...) and the
// file the metadata (pg_config, deviceProperties, flows, the Trace span).
#pragma once

#include <QString>
#include <QTemporaryDir>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

class KinetoTraceWriter {
 public:
  static constexpr int64_t kUs = 1000;  // ns
  static constexpr int kHostPid = 1000, kHostTid = 1000, kGpuPid = 0;

  KinetoTraceWriter(int rank, int world, bool real_args = false) : m_rank(rank), m_world(world), m_real(real_args) {}

  // Host spans (tid: the host thread; another tid is another thread of the process).
  void step(int64_t n, int64_t ts, int64_t dur, int tid = kHostTid) {
    host("user_annotation", "ProfilerStep#" + std::to_string(n), ts, dur, tid, annotationArgs());
  }
  void annotation(const std::string& name, int64_t ts, int64_t dur, int tid = kHostTid) {
    host("user_annotation", name, ts, dur, tid, annotationArgs());
  }
  void op(const std::string& name, int64_t ts, int64_t dur, int tid = kHostTid) {
    std::string args;
    if (m_real) {
      const std::string id = std::to_string(++m_external);
      args = "\"External id\": " + id + ", \"Record function id\": 0, \"Ev Idx\": " + id +
             ", \"Sequence number\": " + id +
             ", \"Fwd thread id\": 0, \"Input Dims\": [[8, 16], [16, 16]], \"Input type\": [\"float\", \"float\"], "
             "\"Input Strides\": [[16, 1], [16, 1]], \"Concrete Inputs\": [\"\", \"\"]";
    }
    host("cpu_op", name, ts, dur, tid, args);
  }
  void python(const std::string& name, int64_t ts, int64_t dur, int tid = kHostTid) {
    host("python_function", name, ts, dur, tid,
         m_real ? "\"Python parent id\": 1, \"Python id\": " + std::to_string(++m_external) + ", \"Python thread\": 0"
                : std::string());
  }
  // A launch call (cudaLaunchKernel, cudaMemsetAsync, ...) with its correlation.
  void launch(const std::string& name, int64_t ts, int64_t dur, int64_t correlation, int tid = kHostTid) {
    std::string args = "\"correlation\": " + std::to_string(correlation);
    if (m_real) args = "\"External id\": " + std::to_string(++m_external) + ", \"cbid\": 211, " + args;
    host("cuda_runtime", name, ts, dur, tid, args);
    if (m_real) m_flows.push_back({correlation, ts, tid});
  }
  // A GPU event: cat "kernel", "gpu_memcpy" or "gpu_memset"; correlation -1: none.
  void gpu(const std::string& cat, const std::string& name, int64_t ts, int64_t dur, int64_t correlation,
           int stream = 7) {
    std::string args = "\"stream\": " + std::to_string(stream);
    if (correlation >= 0) args += ", \"correlation\": " + std::to_string(correlation);
    if (m_real) {
      args = "\"External id\": " + std::to_string(++m_external) + ", \"queued\": 0, \"device\": 0, \"context\": 1, " + args;
      if (cat == "kernel")
        args += ", \"registers per thread\": 32, \"shared memory\": 0, \"blocks per SM\": 1.5, \"warps per SM\": 6, "
                "\"grid\": [132, 1, 1], \"block\": [128, 1, 1], \"est. achieved occupancy %\": 9";
      else
        args += ", \"bytes\": 4096, \"memory bandwidth (GB/s)\": 1.25";
      for (auto& f : m_flows)
        if (f.correlation == correlation) f.gpu_ts = ts, f.stream = stream;
    }
    event(cat, name, kGpuPid, stream, ts, dur, args);
  }
  void kernel(const std::string& name, int64_t ts, int64_t dur, int64_t correlation, int stream = 7) {
    gpu("kernel", name, ts, dur, correlation, stream);
  }
  void gpuAnnotation(const std::string& name, int64_t ts, int64_t dur, int stream = 7) {
    event("gpu_user_annotation", name, kGpuPid, stream, ts, dur,
          m_real ? "\"External id\": " + std::to_string(++m_external) + ", \"device\": 0, \"stream\": " +
                       std::to_string(stream)
                 : std::string());
  }

  // Writes <dir>/<name> and returns its path.
  std::string write(const QTemporaryDir& dir, const std::string& name) const {
    const std::string path = dir.filePath(QString::fromStdString(name)).toStdString();
    std::ofstream f(path);
    f << "{\n  \"schemaVersion\": 1,\n  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": " << m_rank
      << ", \"world_size\": " << m_world;
    if (m_real)
      f << ", \"pg_count\": 1, \"pg_config\": [{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": "
           "\"cuda:nccl\", \"pg_size\": "
        << m_world << ", \"ranks\": []}], \"nccl_version\": \"2.21.5\"";
    f << "},\n";
    if (m_real)
      f << "  \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 85032042496, "
           "\"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132}],\n  \"cupti_version\": 24, \"cuda_runtime_version\": "
           "12040, \"cuda_driver_version\": 12040,\n";
    f << "  \"traceEvents\": [\n";
    std::string sep;
    if (m_real) {
      const std::string rank = std::to_string(m_rank);
      f << "  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " << kHostPid
        << ", \"tid\": 0, \"args\": {\"name\": \"python3\"}},\n"
        << "  {\"ph\": \"M\", \"name\": \"process_labels\", \"pid\": " << kGpuPid
        << ", \"tid\": 0, \"args\": {\"labels\": \"GPU 0\"}},\n"
        << "  {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " << kHostPid << ", \"tid\": " << kHostTid
        << ", \"args\": {\"name\": \"thread " << kHostTid << " (python3)\"}},\n"
        << "  {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " << kGpuPid
        << ", \"tid\": 7, \"args\": {\"name\": \"stream 7\"}}";
      sep = ",\n";
    }
    for (const std::string& e : m_events) {
      f << sep << "  " << e;
      sep = ",\n";
    }
    for (const Flow& fl : m_flows) {
      if (fl.gpu_ts < 0) continue;
      f << sep << "  {\"ph\": \"s\", \"id\": " << fl.correlation << ", \"pid\": " << kHostPid << ", \"tid\": " << fl.tid
        << ", \"ts\": " << us(fl.host_ts) << ", \"cat\": \"ac2g\", \"name\": \"ac2g\"},\n"
        << "  {\"ph\": \"f\", \"id\": " << fl.correlation << ", \"pid\": " << kGpuPid << ", \"tid\": " << fl.stream
        << ", \"ts\": " << us(fl.gpu_ts) << ", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}";
    }
    if (m_real && !m_events.empty())
      f << sep << "  {\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"PyTorch Profiler (0)\", \"pid\": \"Spans\", "
                  "\"tid\": \"PyTorch Profiler\", \"ts\": "
        << us(m_first) << ", \"dur\": " << us(m_last - m_first) << ", \"args\": {\"Op count\": 0}}";
    f << "\n  ]";
    if (m_real) f << ",\n  \"traceName\": \"rank" << m_rank << ".pt.trace.json\", \"displayTimeUnit\": \"ms\"";
    f << "\n}\n";
    return path;
  }

  // ns -> µs text with three decimals ("12.500").
  static std::string us(int64_t ns) {
    std::string s = std::to_string(ns / 1000) + ".";
    const std::string frac = std::to_string(ns % 1000);
    return s + std::string(3 - frac.size(), '0') + frac;
  }

 private:
  struct Flow {
    int64_t correlation = 0, host_ts = 0;
    int tid = 0;
    int64_t gpu_ts = -1;
    int stream = 7;
  };

  // Whole µs as integers in a hand-written trace (HTA's float rule stays off), else three decimals.
  std::string time(int64_t ns) const { return !m_real && ns % 1000 == 0 ? std::to_string(ns / 1000) : us(ns); }
  std::string annotationArgs() {
    if (!m_real) return {};
    const std::string id = std::to_string(++m_external);
    return "\"External id\": " + id + ", \"Record function id\": 0, \"Ev Idx\": " + id;
  }
  void host(const std::string& cat, const std::string& name, int64_t ts, int64_t dur, int tid, const std::string& args) {
    event(cat, name, kHostPid, tid, ts, dur, args);
  }
  void event(const std::string& cat, const std::string& name, int pid, int tid, int64_t ts, int64_t dur,
             const std::string& args) {
    std::string e = "{\"ph\": \"X\", \"cat\": \"" + cat + "\", \"name\": \"" + name + "\", \"pid\": " +
                    std::to_string(pid) + ", \"tid\": " + std::to_string(tid) + ", \"ts\": " + time(ts) +
                    ", \"dur\": " + time(dur);
    if (!args.empty()) e += ", \"args\": {" + args + "}";
    m_events.push_back(e + "}");
    if (m_events.size() == 1 || ts < m_first) m_first = ts;
    m_last = std::max(m_last, ts + dur);
  }

  int m_rank, m_world;
  bool m_real;
  int64_t m_external = 0;
  int64_t m_first = 0, m_last = 0;
  std::vector<std::string> m_events;
  std::vector<Flow> m_flows;
};
