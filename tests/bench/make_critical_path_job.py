#!/usr/bin/env python3
"""A large synthetic PyTorch profiler job for timing analyze's critical path:
RANKS ranks, STEPS ProfilerSteps of OPS launches each (aten::mm > cudaLaunchKernel
> a 5 us gemm, every 100th followed by an all-reduce matched by Seq).
usage: make_critical_path_job.py OUT_DIR [RANKS=4] [STEPS=3] [OPS=20000]
then:  time shardscope-cli analyze OUT_DIR"""
import json
import os
import sys

out = sys.argv[1]
ranks, steps, ops = (int(a) for a in (sys.argv[2:] + ["4", "3", "20000"][len(sys.argv) - 2:])[:3])
os.makedirs(out, exist_ok=True)
for r in range(ranks):
    ev, t, corr, seq = [], 0.0, 0, 0
    for s in range(steps):
        st, body = t, []
        for i in range(ops):
            corr += 1
            body.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": round(t + 1, 3), "dur": 6, "args": {"External id": corr}})
            body.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": round(t + 2, 3), "dur": 3, "args": {"correlation": corr}})
            body.append({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": round(t + 5 + r * 0.5, 3), "dur": 5, "args": {"stream": 7, "correlation": corr}})
            if i % 100 == 99:
                corr += 1
                seq += 1
                body.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": round(t + 7.5, 3), "dur": 2,
                             "args": {"Collective name": "allreduce", "dtype": "Float", "In msg nelems": 1024, "Out msg nelems": 1024,
                                      "Group size": ranks, "Process Group Name": "0", "Seq": seq}})
                body.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": round(t + 8, 3), "dur": 1, "args": {"correlation": corr}})
                body.append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce", "pid": 0, "tid": 20, "ts": round(t + 10 + r, 3), "dur": 3, "args": {"stream": 20, "correlation": corr}})
            t += 10
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % s, "pid": 1, "tid": 1, "ts": round(st, 3), "dur": round(t - st, 3)})
        ev += body
        t += 5
    with open(os.path.join(out, "rank%d.json" % r), "w") as f:
        f.write('{"distributedInfo": {"rank": %d, "world_size": %d}, "traceEvents": [\n' % (r, ranks))
        f.write(",\n".join(json.dumps(e) for e in ev) + "]}\n")
