#!/usr/bin/env python3
"""Writes two PyTorch profiler (Kineto) jobs in the documented trace format
(stdlib only; the outputs are committed beside this script):

straggler_job/rank{0..3}.json: 4 ranks on 2 hosts ("node-a": ranks 0, 1;
"node-b": ranks 2, 3, whose clock reads 1.25 s ahead). Two ProfilerSteps of
four NCCL collectives in process group "0" (record_param_comms with
"Collective name", "In/Out msg nelems", "dtype", "Group size", "Process Group
Name/Ranks" and "Seq"; the nccl:* op; the cudaLaunchKernel; the kernel).
Planted straggler: rank 2 starts every collective 5 ms late; ranks 0, 1, 3
start at T, T + 10 us, T + 30 us. Every kernel ends when the last one has
run its transfer (T + 5000 us + transfer), except rank 3's, 4 us later on
collectives 1, 4 and 6 (0-based): node-b's offset is still exactly -1.25 s
(the median), with a residual of 2 us.

mismatch_job/rank{0,1}.json: 2 ranks, no host names and no Seq (matched by
order): #0 agrees, #1 all_reduce vs reduce_scatter, #2 all_gather 8 MiB vs
4 MiB, #3 only on rank 0.

Run: python3 make_straggler_job.py (writes next to itself).
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# (Collective name, nccl op, kernel, in nelems, out nelems, transfer us)
KINDS = {
    "ar4": ("allreduce", "nccl:all_reduce", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1048576, 1048576, 400),
    "ag8": ("_allgather_base", "nccl:_all_gather_base", "ncclDevKernel_AllGather_RING_LL", 524288, 2097152, 600),
    "ag4": ("_allgather_base", "nccl:_all_gather_base", "ncclDevKernel_AllGather_RING_LL", 262144, 1048576, 600),
    "rs8": ("_reduce_scatter_base", "nccl:_reduce_scatter_base", "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL",
            2097152, 524288, 500),
    "ar1": ("allreduce", "nccl:all_reduce", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 262144, 262144, 200),
}


class Rank:
    def __init__(self, rank, world, hostname, clock_us, with_seq):
        self.rank, self.world, self.hostname = rank, world, hostname
        self.clock_us = clock_us  # this host's clock minus the true time
        self.with_seq = with_seq
        self.events = []
        self.correlation = 0
        self.pid, self.tid = 1000 + rank, 1000 + rank

    def host_event(self, cat, name, ts, dur, args=None):
        e = {"ph": "X", "cat": cat, "name": name, "pid": self.pid, "tid": self.tid, "ts": ts + self.clock_us, "dur": dur}
        if args is not None:
            e["args"] = args
        self.events.append(e)

    def launch(self, ts, kernel, kstart, kdur, stream):
        self.correlation += 1
        c = self.correlation
        self.host_event("cuda_runtime", "cudaLaunchKernel", ts, 5, {"correlation": c})
        self.events.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": "stream %d" % stream,
                            "ts": kstart + self.clock_us, "dur": kdur, "args": {"stream": stream, "correlation": c}})

    def collective(self, kind, seq, kstart, kend):
        name, op, kernel, n_in, n_out, _ = KINDS[kind]
        cpu = kstart - 100
        args = {"Collective name": name, "dtype": "Float", "In msg nelems": n_in, "Out msg nelems": n_out,
                "Group size": self.world, "Process Group Name": "0",
                "Process Group Ranks": "[" + ", ".join(str(r) for r in range(self.world)) + "]"}
        if self.with_seq:
            args["Seq"] = seq
        self.host_event("cpu_op", "record_param_comms", cpu, 80, args)
        self.host_event("cpu_op", op, cpu + 5, 60)
        self.launch(cpu + 10, kernel, kstart, kend - kstart, 20)

    def write(self, path):
        info = {"backend": "nccl", "rank": self.rank, "world_size": self.world, "pg_count": 1,
                "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
                               "ranks": list(range(self.world)), "pg_size": self.world}]}
        if self.hostname:
            info["hostname"] = self.hostname
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write('{\n  "schemaVersion": 1,\n  "distributedInfo": ' + json.dumps(info) + ',\n  "traceEvents": [\n')
            f.write(",\n".join("  " + json.dumps(e) for e in self.events))
            f.write("\n  ]\n}\n")


def straggler_job():
    world, late_rank, late_us = 4, 2, 5000
    hosts = {0: ("node-a", 0), 1: ("node-a", 0), 2: ("node-b", 1250000), 3: ("node-b", 1250000)}
    ranks = [Rank(r, world, hosts[r][0], hosts[r][1], True) for r in range(world)]
    order = ["ar4", "ag8", "rs8", "ar1"]
    seq = 0
    for step in range(2):
        step_start = 1000000 + step * 100000
        for rk in ranks:
            rk.host_event("user_annotation", "ProfilerStep#%d" % (5 + step), step_start, 90000)
            rk.launch(step_start + 50, "ampere_sgemm_128x64_tn", step_start + 100, 500, 7)
        for j, kind in enumerate(order):
            t = step_start + 1000 + j * 20000
            end = t + late_us + KINDS[kind][5]
            for rk in ranks:
                start = t + (late_us if rk.rank == late_rank else 10 * rk.rank)
                jitter = 4 if rk.rank == 3 and seq in (1, 4, 6) else 0
                rk.collective(kind, seq + 1, start, end + jitter)
            seq += 1
    for rk in ranks:
        rk.write(os.path.join(HERE, "straggler_job", "rank%d.json" % rk.rank))


def mismatch_job():
    ranks = [Rank(r, 2, "", 0, False) for r in range(2)]
    calls = {0: ["ar4", "ar4", "ag8", "ar1"], 1: ["ar4", "rs8", "ag4"]}
    for rk in ranks:
        rk.host_event("user_annotation", "ProfilerStep#1", 1000000, 90000)
        for j, kind in enumerate(calls[rk.rank]):
            t = 1001000 + j * 20000
            start = t + 100 * rk.rank
            rk.collective(kind, 0, start, t + 100 + KINDS[kind][5])
        rk.write(os.path.join(HERE, "mismatch_job", "rank%d.json" % rk.rank))


if __name__ == "__main__":
    straggler_job()
    mismatch_job()
