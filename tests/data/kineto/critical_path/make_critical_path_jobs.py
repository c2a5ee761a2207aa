#!/usr/bin/env python3
"""Writes the multi-rank critical-path fixtures (tests/core/test_critical_path.cpp works
their answers by hand):
  late_rank/    2 ranks, one host; rank 1's gemm runs 50 us against rank 0's 20 us, so
                rank 1 starts the all-reduce at 60 us and rank 0's copy (from 30 us) waits.
  real_shaped/  ranks 2 and 3 of a world of 8, an all-reduce in process group "5" (ranks
                [2, 3]), args on every event as Kineto writes them, float timestamps after
                baseTimeNanoseconds, ac2g flows, python_function events, a backward thread,
                a cuda_sync "Stream Wait Event", a memcpy, ProfilerStep#5 and #6.
  event_record.json  one rank whose stream wait's cuda_sync args (wait_on_stream,
                wait_on_cuda_event_record_corr_id) name a cudaEventRecord made after gemm_a
                and before gemm_b on stream 7: the wait is for gemm_a, not the last kernel
                launched onto another stream (gemm_b).
  event_record_no_args.json  the same without those args (the heuristic's case).
Run from this folder: python3 make_critical_path_jobs.py"""
import json
import os

def x(cat, name, pid, tid, ts, dur, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}

def write(path, rank, world, events, **extra):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    doc = {"schemaVersion": 1, "distributedInfo": dict({"backend": "nccl", "rank": rank, "world_size": world}, **extra.get("dist", {}))}
    if "base" in extra:
        doc["baseTimeNanoseconds"] = extra["base"]
    head = json.dumps(doc)[:-1]  # one event a line, as Kineto writes them
    with open(path, "w") as f:
        f.write(head + ', "traceEvents": [\n' + ",\n".join(json.dumps(e) for e in events) + "\n]}\n")

def late_rank(rank, gemm_dur, nccl_ts, nccl_dur):
    comm = {"Collective name": "allreduce", "dtype": "Float", "In msg nelems": 1024, "Out msg nelems": 1024,
            "Group size": 2, "Process Group Name": "0", "Process Group Ranks": "[0, 1]"}
    return [
        {"ph": "M", "name": "thread_name", "pid": 100, "tid": 100, "ts": 0, "args": {"name": "thread 100 (python3)"}},
        x("user_annotation", "ProfilerStep#1", 100, 100, 0, 100),
        x("cpu_op", "aten::mm", 100, 100, 2, 6),
        x("cuda_runtime", "cudaLaunchKernel", 100, 100, 4, 3, correlation=1),
        x("cpu_op", "record_param_comms", 100, 100, 10, 8, **comm),
        x("cuda_runtime", "cudaStreamWaitEvent", 100, 100, 11, 1, correlation=5),
        x("cuda_runtime", "cudaLaunchKernel", 100, 100, 13, 3, correlation=2),
        x("cuda_runtime", "cudaDeviceSynchronize", 100, 100, 20, 65, correlation=6),
        x("kernel", "gemm_kernel", 0, 7, 8, gemm_dur, stream=7, correlation=1),
        x("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 20, nccl_ts, nccl_dur, stream=20, correlation=2),
        x("user_annotation", "ProfilerStep#2", 100, 100, 100, 10),
    ]

write("late_rank/rank0.json", 0, 2, late_rank(0, 20, 30, 50))
write("late_rank/rank1.json", 1, 2, late_rank(1, 50, 60, 20))

BASE = 1700000000000000000

def real_shaped(rank, gemm2_dur, nccl_ts, nccl_dur, memcpy_ts, opt_dur):
    pid, dev, main, bwd = 3000 + rank, rank, 2001, 2002
    t = lambda rel: round(1000.0 + rel, 3)  # us after baseTimeNanoseconds, as Kineto writes them
    ext = iter(range(500, 600))
    def op(name, tid, ts, dur, **args):
        return x("cpu_op", name, pid, tid, t(ts), dur, **dict({"External id": next(ext), "Record function id": 0,
                                                              "Ev Idx": 7, "Fwd thread id": 0, "Sequence number": 311}, **args))
    def rt(name, tid, ts, dur, corr):
        return x("cuda_runtime", name, pid, tid, t(ts), dur, **{"External id": next(ext), "cbid": 211, "correlation": corr})
    def kern(name, stream, ts, dur, corr):
        return x("kernel", name, dev, stream, t(ts), dur, **{"External id": next(ext), "queued": 0, "device": dev,
                 "context": 1, "stream": stream, "correlation": corr, "registers per thread": 168,
                 "shared memory": 90112, "blocks per SM": 1.0, "warps per SM": 4.0, "grid": [132, 1, 1],
                 "block": [128, 1, 1], "est. achieved occupancy %": 6})
    def flow(corr, ts_launch, ts_kernel, stream):
        return [{"ph": "s", "id": corr, "pid": pid, "tid": main, "ts": t(ts_launch), "cat": "ac2g", "name": "ac2g"},
                {"ph": "f", "id": corr, "pid": dev, "tid": stream, "ts": t(ts_kernel), "cat": "ac2g", "name": "ac2g", "bp": "e"}]
    comm = {"Collective name": "allreduce", "dtype": "BFloat16", "In msg nelems": 4194304, "Out msg nelems": 4194304,
            "Group size": 2, "Process Group Name": "5", "Process Group Description": "undefined",
            "Process Group Ranks": "[2, 3]", "Seq": 17, "In split size": "[]", "Out split size": "[]",
            "Input Dims": [[4194304]], "Input type": ["c10::BFloat16"]}
    ev = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": t(0), "args": {"name": "python3"}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": main, "ts": t(0), "args": {"name": "thread %d (python3)" % main}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": bwd, "ts": t(0), "args": {"name": "thread %d (pt_autograd_0)" % bwd}},
        {"ph": "M", "name": "process_labels", "pid": dev, "tid": 0, "ts": t(0), "args": {"labels": "GPU %d" % dev}},
        x("python_function", "train.py(88): train_step", pid, main, t(0), 170, **{"Python id": 1, "Python parent id": 0}),
        x("user_annotation", "ProfilerStep#5", pid, main, t(0), 150, **{"External id": 1}),
        x("python_function", "nn.Module: Linear_0", pid, main, t(1), 29, **{"Python id": 2, "Python parent id": 1}),
        op("aten::linear", main, 2.5, 10, **{"Input Dims": [[64, 1024], [1024, 1024], [1024]], "Input type": ["c10::BFloat16"] * 3}),
        op("aten::addmm", main, 3, 9, **{"Input Dims": [[1024], [64, 1024], [1024, 1024]], "Input type": ["c10::BFloat16"] * 3}),
        rt("cudaLaunchKernel", main, 5, 4, 101),
        kern("sm90_xmma_gemm_bf16bf16_bf16f32", 7, 10, 30, 101),
        op("autograd::engine::evaluate_function: AddmmBackward0", bwd, 20, 15),
        rt("cudaLaunchKernel", bwd, 22, 4, 102),
        kern("sm90_xmma_gemm_bf16bf16_bf16f32_nt", 7, 40, gemm2_dur, 102),
        op("record_param_comms", main, 36, 10, **comm),
        op("nccl:all_reduce", main, 36.5, 9),
        rt("cudaStreamWaitEvent", main, 37, 1, 103),
        x("cuda_sync", "Stream Wait Event", dev, 24, t(38.5), 0, **{"device": dev, "stream": 24, "correlation": 103,
                                                                    "wait_on_stream": 7, "wait_on_cuda_event_record_corr_id": 99}),
        rt("cudaLaunchKernel", main, 40, 4, 104),
        kern("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 24, nccl_ts, nccl_dur, 104),
        op("aten::copy_", main, 50, 10, **{"Input Dims": [[64, 1024], [64, 1024], []], "Input type": ["float", "c10::BFloat16", "Scalar"]}),
        rt("cudaMemcpyAsync", main, 52, 3, 105),
        x("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", dev, 7, t(memcpy_ts), 1, **{"device": dev, "context": 1,
                                                                                      "stream": 7, "correlation": 105, "bytes": 262144, "memory bandwidth (GB/s)": 262.144}),
        rt("cudaStreamSynchronize", main, 61, 64, 107),
        x("user_annotation", "Optimizer.step#AdamW.step", pid, main, t(126), 14, **{"External id": 2}),
        rt("cudaLaunchKernel", main, 128, 3, 106),
        kern("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>>", 7, 132, opt_dur, 106),
        x("user_annotation", "ProfilerStep#6", pid, main, t(150), 20, **{"External id": 3}),
    ]
    for corr, tl, tk, s in [(101, 5, 10, 7), (102, 22, 40, 7), (104, 40, nccl_ts, 24), (106, 128, 132, 7)]:
        ev += flow(corr, tl, tk, s)
    return ev

DIST = {"hostname": "node-1", "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
                                            "pg_size": 8, "ranks": list(range(8))},
                                           {"pg_name": "5", "pg_desc": "undefined", "backend_config": "cuda:nccl",
                                            "pg_size": 2, "ranks": [2, 3]}]}
write("real_shaped/rank2.json", 2, 8, real_shaped(2, 48, 90, 30, 88, 18), dist=DIST, base=BASE)
write("real_shaped/rank3.json", 3, 8, real_shaped(3, 30, 72, 48, 70, 26), dist=DIST, base=BASE)

def event_record(with_args):
    pid, tid, dev = 100, 100, 0
    rt = lambda name, ts, dur, corr: x("cuda_runtime", name, pid, tid, ts, dur, **{"External id": corr + 40, "cbid": 211, "correlation": corr})
    def kern(name, stream, ts, dur, corr):
        return x("kernel", name, dev, stream, ts, dur, **{"External id": corr + 40, "queued": 0, "device": dev, "context": 1,
                 "stream": stream, "correlation": corr, "registers per thread": 32, "shared memory": 0,
                 "blocks per SM": 1.0, "warps per SM": 4.0, "grid": [132, 1, 1], "block": [128, 1, 1],
                 "est. achieved occupancy %": 6})
    sync = {"cuda_sync_kind": "Stream Wait Event", "stream": 20, "correlation": 4, "device": dev, "context": 1}
    if with_args:
        sync.update({"wait_on_stream": 7, "wait_on_cuda_event_record_corr_id": 2, "wait_on_cuda_event_id": 1})
    return [
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "ts": 0, "args": {"name": "thread 100 (python3)"}},
        x("user_annotation", "ProfilerStep#1", pid, tid, 0, 100, **{"External id": 1}),
        x("cpu_op", "aten::mm", pid, tid, 2, 6, **{"External id": 2, "Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}),
        rt("cudaLaunchKernel", 3, 2, 1),
        rt("cudaEventRecord", 9, 1, 2),
        x("cpu_op", "aten::mm", pid, tid, 12, 6, **{"External id": 3, "Input Dims": [[64, 64], [64, 64]], "Input type": ["float", "float"]}),
        rt("cudaLaunchKernel", 13, 2, 3),
        rt("cudaStreamWaitEvent", 20, 1, 4),
        x("cuda_sync", "Stream Wait Event", dev, 20, 21, 0, **sync),
        rt("cudaLaunchKernel", 22, 2, 5),
        rt("cudaDeviceSynchronize", 50, 47, 6),
        kern("gemm_a", 7, 10, 20, 1),
        kern("gemm_b", 7, 30, 40, 3),
        kern("vectorized_elementwise_kernel", 20, 35, 60, 5),
        x("user_annotation", "ProfilerStep#2", pid, tid, 100, 10, **{"External id": 4}),
    ]

write("event_record.json", 0, 1, event_record(True))
write("event_record_no_args.json", 0, 1, event_record(False))
