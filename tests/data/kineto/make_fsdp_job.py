#!/usr/bin/python3
"""Writes fsdp_job/rank{0..3}.json.gz: a 4-rank FSDP GPU job in the Kineto
format PyTorch 2.x's profiler exports (schemaVersion 1, distributedInfo,
baseTimeNanoseconds, float microsecond timestamps with nanosecond digits).

No GPU is at hand where ShardScope's tests run, so this is synthetic, built
to the published format and to FSDP2's own labels (torch/distributed/fsdp/
_fully_shard/_fsdp_param_group.py: record_function(f"FSDP::all_gather ({fqn})"),
"FSDP::pre_forward", "FSDP::pre_backward", "FSDP::post_backward"):
per step, a forward over four units (the root and layers.0-2) whose
all-gathers run on an NCCL stream (ncclDevKernel_AllGather_RING_LL, launched
inside record_param_comms with its Collective name, In/Out msg nelems, dtype,
Group size and Process Group Ranks), GEMMs on stream 7 under "## forward ##";
backward on the autograd thread (pt_autograd_0) with re-gathers and
reduce-scatters on a second NCCL stream; an AdamW step; [memory] events for
every gathered buffer (allocated inside FSDP::all_gather, freed after use)
and activations. Deterministic: the same files every time.

Run: /usr/bin/python3 make_fsdp_job.py [OUT_DIR]
"""
import gzip
import json
import os
import random
import sys

RANKS = 4
STEPS = 3
UNITS = ["", "layers.0", "layers.1", "layers.2"]  # "" is the root
UNIT_NUMEL = [2_097_152, 8_388_608, 8_388_608, 8_388_608]  # unsharded bf16 elements per unit
BASE_NS = 1_733_000_000_000_000_000


class RankWriter:
    def __init__(self, rank):
        self.rank = rank
        self.events = []
        self.corr = 1
        self.rng = random.Random(1000 + rank)
        self.host_pid, self.host_tid, self.bwd_tid = 4100 + rank, 4100 + rank, 4200 + rank
        self.gpu = rank
        self.allocated = 3_221_225_472  # sharded params, grads and optimizer state before the window
        self.reserved = 4_294_967_296
        self.addr = 0x7F0000000000 + rank * 0x100000000
        self.live = {}

    def us(self, t_ns):
        return round(t_ns / 1000.0, 3)

    def x(self, cat, name, tid, t, dur, args=None, pid=None):
        ev = {"ph": "X", "cat": cat, "name": name, "pid": self.host_pid if pid is None else pid, "tid": tid,
              "ts": self.us(t), "dur": self.us(dur)}
        if args is not None:
            ev["args"] = args
        self.events.append(ev)

    def launch(self, tid, t, stream, kernel, k_start, k_dur, kargs=None):
        corr = self.corr
        self.corr += 1
        self.x("cuda_runtime", "cudaLaunchKernel", tid, t, 4_000, {"cbid": 211, "correlation": corr})
        args = {"queued": 0, "device": self.gpu, "context": 1, "stream": stream, "correlation": corr,
                "registers per thread": 128, "grid": [132, 1, 1], "block": [256, 1, 1]}
        args.update(kargs or {})
        self.x("kernel", kernel, stream, k_start, k_dur, args, pid=self.gpu)
        self.events.append({"ph": "s", "id": corr, "pid": self.host_pid, "tid": tid, "ts": self.us(t),
                            "cat": "ac2g", "name": "ac2g"})
        self.events.append({"ph": "f", "id": corr, "pid": self.gpu, "tid": stream, "ts": self.us(k_start),
                            "cat": "ac2g", "name": "ac2g", "bp": "e"})

    def memory(self, tid, t, nbytes, key):
        if nbytes > 0:
            self.addr += 0x10000000
            self.live[key] = (self.addr, nbytes)
            addr = self.addr
        else:
            addr, size = self.live.pop(key)
            nbytes = -size
        self.allocated += nbytes
        while self.reserved < self.allocated + 268_435_456:
            self.reserved += 1_073_741_824
        self.events.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
                            "pid": self.host_pid, "tid": tid, "ts": self.us(t),
                            "args": {"Device Type": 1, "Device Id": self.gpu, "Addr": addr, "Bytes": nbytes,
                                     "Total Allocated": self.allocated, "Total Reserved": self.reserved}})

    def all_gather(self, tid, t, unit, gpu_ready):
        """FSDP::all_gather (fqn) with its record_param_comms and NCCL kernel; returns (host end, kernel end)."""
        numel = UNIT_NUMEL[unit]
        label = "FSDP::all_gather (%s)" % UNITS[unit]
        self.memory(tid, t + 2_000, numel * 2, ("ag", unit))
        comm_args = {"Collective name": "_allgather_base", "dtype": "BFloat16", "In msg nelems": numel // RANKS,
                     "Out msg nelems": numel, "Group size": RANKS, "Process Group Name": "0",
                     "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1, 2, 3]"}
        self.x("cpu_op", "record_param_comms", tid, t + 5_000, 20_000, comm_args)
        k_start = max(gpu_ready, t + 12_000) + self.rng.randint(0, 3_000)
        k_dur = int(numel * 2 / 150.0) + self.rng.randint(0, 20_000)  # ~150 GB/s of busbw-ish
        self.launch(tid, t + 12_000, 20, "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                    k_start, k_dur)
        self.x("user_annotation", label, tid, t, 30_000)
        return t + 30_000, k_start + k_dur

    def reduce_scatter(self, tid, t, unit, gpu_ready):
        numel = UNIT_NUMEL[unit]
        comm_args = {"Collective name": "_reduce_scatter_base", "dtype": "BFloat16", "In msg nelems": numel,
                     "Out msg nelems": numel // RANKS, "Group size": RANKS, "Process Group Name": "0",
                     "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1, 2, 3]"}
        self.x("cpu_op", "record_param_comms", tid, t + 3_000, 18_000, comm_args)
        k_start = max(gpu_ready, t + 8_000) + self.rng.randint(0, 3_000)
        k_dur = int(numel * 2 / 140.0) + self.rng.randint(0, 20_000)
        self.launch(tid, t + 8_000, 24, "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, "
                    "ncclWork*)", k_start, k_dur)
        self.x("user_annotation", "FSDP::post_backward (%s)" % UNITS[unit], tid, t, 25_000)
        return t + 25_000, k_start + k_dur

    def gemm(self, tid, t, gpu_ready, name, dur):
        k_start = max(gpu_ready, t + 4_000)
        self.x("cpu_op", name, tid, t, 9_000, {"External id": self.corr})
        self.launch(tid, t + 3_000, 7, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas",
                    k_start, dur)
        return t + 9_000, k_start + dur

    def step(self, n, t):
        host, bwd = self.host_tid, self.bwd_tid
        start = t
        compute_ready = t
        ag_done = {}
        fwd_start = t
        # forward: each unit's all-gather, then its GEMMs once the gather landed
        for u in range(len(UNITS)):
            t0 = t
            t, ag_done[u] = self.all_gather(host, t + 1_000, u, compute_ready if u == 0 else ag_done[u - 1])
            self.x("user_annotation", "FSDP::pre_forward (%s)" % UNITS[u], host, t0, t - t0 + 1_000)
            for g in range(3):
                gpu_ready = max(compute_ready, ag_done[u])
                t, compute_ready = self.gemm(host, t + 2_000, gpu_ready, "aten::linear", 180_000 + 20_000 * g
                                             + self.rng.randint(0, 9_000))
                self.memory(host, t, 33_554_432, ("act", u, g))
            if u > 0:  # reshard after forward: the unit's gathered parameters go
                self.memory(host, t + 1_000, 0, ("ag", u))
        self.x("user_annotation", "## forward ##", host, fwd_start, t - fwd_start + 2_000)
        # backward on the autograd thread: re-gather, GEMMs, reduce-scatter, in reverse
        t += 10_000
        bwd_start = t
        comm_ready = compute_ready
        for u in reversed(range(len(UNITS))):
            t0 = t
            if u > 0:
                t, ag_done[u] = self.all_gather(bwd, t + 1_000, u, comm_ready)
            self.x("user_annotation", "FSDP::pre_backward (%s)" % UNITS[u], bwd, t0, t - t0 + 1_000)
            for g in range(3):
                e0 = t + 1_000
                gpu_ready = max(compute_ready, ag_done[u])
                t, compute_ready = self.gemm(bwd, e0 + 1_000, gpu_ready, "aten::mm", 2 * (170_000 + 15_000 * g)
                                             + self.rng.randint(0, 9_000))
                self.x("cpu_op", "autograd::engine::evaluate_function: MmBackward0", bwd, e0, t - e0 + 500)
                self.memory(bwd, t + 500, 0, ("act", u, g))
            t, comm_ready = self.reduce_scatter(bwd, t + 1_000, u, compute_ready)
            self.memory(bwd, t + 1_000, 0, ("ag", u))
        self.x("user_annotation", "## backward ##", bwd, bwd_start, t - bwd_start + 2_000)
        # optimizer: AdamW over the shards, once the last reduce-scatter landed
        t += 10_000
        opt_start = t
        gpu = max(compute_ready, comm_ready)
        for k in range(4):
            t, gpu = self.gemm(host, t + 1_000, gpu, "aten::_foreach_add_", 40_000)
        self.x("cpu_op", "Optimizer.step#AdamW.step", host, opt_start, t - opt_start + 1_000)
        end = max(t, gpu) + 20_000
        self.x("user_annotation", "ProfilerStep#%d" % n, host, start, end - start)
        return end

    def write(self, path):
        t = 50_000
        for n in range(STEPS):
            t = self.step(10 + n, t) + 30_000 + self.rng.randint(0, 5_000)
        meta = [
            {"ph": "M", "name": "process_name", "pid": self.host_pid, "tid": 0, "args": {"name": "python3"}},
            {"ph": "M", "name": "thread_name", "pid": self.host_pid, "tid": self.host_tid,
             "args": {"name": "thread %d (python3)" % self.host_tid}},
            {"ph": "M", "name": "thread_name", "pid": self.host_pid, "tid": self.bwd_tid,
             "args": {"name": "thread %d (pt_autograd_0)" % self.bwd_tid}},
            {"ph": "M", "name": "process_name", "pid": self.gpu, "tid": 0, "args": {"name": "python3"}},
            {"ph": "M", "name": "process_labels", "pid": self.gpu, "tid": 0, "args": {"labels": "GPU %d" % self.gpu}},
        ]
        for stream in (7, 20, 24):
            meta.append({"ph": "M", "name": "thread_name", "pid": self.gpu, "tid": stream,
                         "args": {"name": "stream %d" % stream}})
        doc = {
            "schemaVersion": 1,
            "distributedInfo": {"backend": "nccl", "rank": self.rank, "world_size": RANKS, "pg_count": 1},
            "deviceProperties": [{"id": self.gpu, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85_032_042_496}],
            "displayTimeUnit": "ms",
            "baseTimeNanoseconds": BASE_NS,
            "traceEvents": meta + sorted(self.events, key=lambda e: e["ts"]),
            "traceName": path,
        }
        with gzip.GzipFile(path, "wb", mtime=0) as f:
            f.write(json.dumps(doc, separators=(",", ":")).encode())


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "fsdp_job")
    os.makedirs(out, exist_ok=True)
    for r in range(RANKS):
        RankWriter(r).write(os.path.join(out, "rank%d.json.gz" % r))


if __name__ == "__main__":
    main()
