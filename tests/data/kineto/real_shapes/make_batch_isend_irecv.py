#!/usr/bin/env python3
"""Writes batch_isend_irecv.json: rank 0 of 2 as PyTorch's profiler (Kineto, CUPTI, NCCL
2.21) writes a step of two torch.distributed.batch_isend_irecv calls. Each isend/irecv is a
c10d::send / c10d::recv_ op around a record_param_comms ("Collective name" "send"/"recv",
its element count and dtype) that launches nothing; the group's end is an nccl:coalesced
annotation around a record_param_comms "coalesced" (0 elements) that launches one
ncclDevKernel_SendRecv kernel. Group 1: isend + irecv of 1048576 floats (8 MiB in all);
group 2: isend + irecv of 524288 bf16 and an isend of 1024 floats (2 MiB + 4 KiB). Then an
all-reduce of 262144 floats, which must stay one all-reduce.
Run from this folder: python3 make_batch_isend_irecv.py"""
import json

PID, TID, DEV = 4100, 4100, 0
ext = iter(range(1, 1000))

def x(cat, name, pid, tid, ts, dur, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": round(1760000000000.0 + ts, 3), "dur": dur, "args": args}

def op(name, ts, dur, cat="cpu_op", **args):
    return x(cat, name, PID, TID, ts, dur, **dict({"External id": next(ext), "Record function id": 0, "Ev Idx": 0}, **args))

def comms(name, dtype, nelems, seq):
    return {"Collective name": name, "dtype": dtype, "In msg nelems": nelems, "Out msg nelems": nelems,
            "In split size": "[]", "Out split size": "[]", "Global rank start": 0, "Global rank stride": 1,
            "Group size": 2, "Process Group Name": "0", "Process Group Description": "default_pg",
            "Process Group Ranks": "[0, 1]", "Rank": 0, "Seq": seq}

def p2p(kind, ts, dtype, nelems, seq):
    dispatcher = "c10d::send" if kind == "send" else "c10d::recv_"
    return [op(dispatcher, ts, 3, **{"Input Dims": [[], [], [], []], "Input type": ["GenericList", "ScriptObject", "Int", "Int"]}),
            op("record_param_comms", ts + 0.5, 2, **comms(kind, dtype, nelems, seq))]

def launch(ts, corr):
    return x("cuda_runtime", "cudaLaunchKernel", PID, TID, ts, 4, **{"External id": next(ext), "cbid": 211, "correlation": corr})

def kernel(name, ts, dur, corr):
    return x("kernel", name, DEV, 20, ts, dur, **{"External id": next(ext), "queued": 0, "device": DEV, "context": 1,
             "stream": 20, "correlation": corr, "registers per thread": 96, "shared memory": 0, "blocks per SM": 0.0,
             "warps per SM": 0.0, "grid": [2, 1, 1], "block": [640, 1, 1], "est. achieved occupancy %": 0})

def group(ts, members, seq, corr, kdur):
    ev, t = [], ts
    for kind, dtype, nelems in members:
        ev += p2p(kind, t, dtype, nelems, seq)
        t += 5
    ev += [op("nccl:coalesced", t, 12, cat="user_annotation"),
           op("record_param_comms", t + 0.5, 10, **comms("coalesced", "Float", 0, seq)),
           launch(t + 2, corr),
           kernel("ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)", t + 20, kdur, corr)]
    return ev

events = [op("ProfilerStep#3", 0, 1000, cat="user_annotation")]
events += group(10, [("send", "Float", 1048576), ("recv", "Float", 1048576)], 1, 9001, 80)
events += group(200, [("send", "BFloat16", 524288), ("recv", "BFloat16", 524288), ("send", "Float", 1024)], 2, 9002, 40)
events += [op("record_param_comms", 400, 30, **comms("allreduce", "Float", 262144, 3)),
           op("nccl:all_reduce", 401, 25, cat="user_annotation"),
           launch(405, 9003),
           kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 440, 50, 9003)]
doc = {"schemaVersion": 1,
       "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85024112640}],
       "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2, "pg_count": 1,
                           "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
                                          "pg_size": 2, "ranks": [0, 1]}], "nccl_version": "2.21.5"}}
with open("batch_isend_irecv.json", "w") as f:
    f.write(json.dumps(doc)[:-1] + ',\n  "traceEvents": [\n  ' + ",\n  ".join(json.dumps(e) for e in events) +
            '\n  ],\n  "traceName": "rank0.pt.trace.json"\n}\n')
