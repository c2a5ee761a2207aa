#!/usr/bin/python3
"""Writes the post-mortem fixtures of tests/core/test_postmortem*.cpp and
tests/cli/test_postmortem_cli.cpp: PyTorch memory snapshots and NCCL
flight-recorder dumps built from their documented formats (the keys PyTorch's
torch/csrc/cuda/memory_snapshot.cpp and c10d/FlightRecorder*.hpp write), with
the stdlib pickle module only. The expected answers are worked by hand in the
tests and in the comments here.

Usage: make_fixtures.py [OUT_DIR]          the small fixtures (committed)
       make_fixtures.py --big N OUT_FILE   a snapshot with N trace entries (bench)
       make_fixtures.py --fr-big RANKS OUT_DIR   RANKS full rings of 2000 entries (memory bench:
                                           64 ranks are 38 MB, as a real job's folder of dumps)
"""

import json
import os
import pickle
import sys

MiB = 1 << 20


def frame(filename, line, name):
    return {"filename": filename, "line": line, "name": name}


OPTIM = [frame("torch/optim/adam.py", 94, "_init_group"), frame("train.py", 120, "step")]
FORWARD = [frame("model.py", 40, "forward"), frame("torch/nn/modules/module.py", 1501, "_call_impl"),
           frame("train.py", 80, "train_step")]
GATHER = [frame("torch/distributed/fsdp/_flat_param.py", 1300, "_all_gather_flat_param"),
          frame("torch/distributed/fsdp/_runtime_utils.py", 400, "_unshard"), frame("train.py", 80, "train_step")]
GRAD = [frame("torch/distributed/fsdp/_runtime_utils.py", 800, "_reduce_grad"),
        frame("torch/distributed/fsdp/_runtime_utils.py", 700, "_post_backward_hook"),
        frame("torch/autograd/graph.py", 700, "_engine_run_backward")]


def te(action, addr, size, t=None, frames=None, stream=0):
    e = {"action": action, "addr": addr, "size": size, "stream": stream}
    if frames is not None:
        e["frames"] = frames
    if t is not None:
        e["time_us"] = t
    return e


def block(addr, size, requested, state, frames=()):
    return {"address": addr, "size": size, "requested_size": requested, "state": state, "frames": list(frames)}


def segment(device, addr, total, blocks, expandable=False):
    return {"device": device, "address": addr, "total_size": total, "allocated_size": 0, "active_size": 0,
            "requested_size": 0, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
            "is_expandable": expandable, "frames": [], "blocks": blocks}


def device0_trace(timed=True):
    # allocated after each entry: 0, 1000000, 1500000, 1800000 (peak, entry 3),
    # 1800000, 1300000, 1300000, 1000000, 1000000, 1000000;
    # reserved: 2 MiB ... 3 MiB after entry 8 (peak), 2 MiB at the end.
    A, B = 0x7F0000000000, 0x7F0000400000
    entries = [
        ("segment_alloc", A, 2 * MiB, None),
        ("alloc", A, 1000000, OPTIM),
        ("alloc", A + MiB, 500000, FORWARD),
        ("alloc", A + MiB + 512 * 1024, 300000, GATHER),
        ("free_requested", A + MiB, 500000, FORWARD),
        ("free_completed", A + MiB, 500000, FORWARD),
        ("free_requested", A + MiB + 512 * 1024, 300000, GATHER),
        ("free_completed", A + MiB + 512 * 1024, 300000, GATHER),
        ("segment_alloc", B, MiB, None),
        ("segment_free", B, MiB, None),
    ]
    out = [te(a, addr, size, t=(1000 + 10 * i if timed else None), frames=f) for i, (a, addr, size, f) in enumerate(entries)]
    segs = [segment(0, A, 2 * MiB, [block(A, MiB, 1000000, "active_allocated", OPTIM), block(A + MiB, MiB, MiB, "inactive")])]
    return out, segs


def device1():
    # Params allocated before the trace (no stack): 2 MiB live throughout.
    # Entry 0: a gradient (reduce-scatter path) of 1 MiB -> 3 MiB, the peak; entry 1 frees it.
    C = 0x7F1000000000
    segs = [segment(1, C, 4 * MiB, [block(C, 2 * MiB, 2 * MiB, "active_allocated"), block(C + 2 * MiB, 2 * MiB, 2 * MiB, "inactive")])]
    trace = [te("alloc", C + 2 * MiB, MiB, 5000, GRAD), te("free_completed", C + 2 * MiB, MiB, 5010, GRAD)]
    return trace, segs


def snapshot(segments, traces):
    return {"segments": segments, "device_traces": traces,
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "expandable_segments": False}}


def expandable():
    # An expandable segment grows by segment_map and shrinks by segment_unmap.
    # allocated: 2, 2, 6 (peak, entry 3), 2, 2 MiB; reserved: 2, 2, 6 (peak, entry 2), 6, 6, 4 MiB.
    X = 0x7E0000000000
    trace = [te("segment_map", X, 2 * MiB, 1), te("alloc", X, 2 * MiB, 2, FORWARD),
             te("segment_map", X + 2 * MiB, 4 * MiB, 3), te("alloc", X + 2 * MiB, 4 * MiB, 4, FORWARD),
             te("free_completed", X + 2 * MiB, 4 * MiB, 5, FORWARD), te("segment_unmap", X + 4 * MiB, 2 * MiB, 6)]
    segs = [segment(0, X, 4 * MiB, [block(X, 2 * MiB, 2 * MiB, "active_allocated", FORWARD),
                                    block(X + 2 * MiB, 2 * MiB, 2 * MiB, "inactive")], expandable=True)]
    return snapshot(segs, [trace])


def oom():
    # 8 MiB live; then a 16 MiB request fails with 1 MiB free on the device.
    O = 0x7D0000000000
    trace = [te("segment_alloc", O, 8 * MiB, 10), te("alloc", O, 8 * MiB, 11, FORWARD),
             {"action": "oom", "device_free": MiB, "size": 16 * MiB, "stream": 0, "time_us": 12, "frames": FORWARD}]
    segs = [segment(0, O, 8 * MiB, [block(O, 8 * MiB, 8 * MiB, "active_allocated", FORWARD)])]
    return snapshot(segs, [trace])


def big_snapshot(n):
    # n entries: alloc/free pairs of 1 KiB .. 64 KiB at 256 addresses, one segment.
    S = 0x7C0000000000
    frames = [FORWARD, GRAD, GATHER, OPTIM]
    trace, live = [], {}
    for i in range(n):
        slot = (i * 7919) % 256
        addr = S + slot * 65536
        if addr in live:
            trace.append(te("free_completed", addr, live.pop(addr), i, frames[slot % 4]))
        else:
            size = 1024 * (1 + slot % 64)
            live[addr] = size
            trace.append(te("alloc", addr, size, i, frames[slot % 4]))
    blocks = []
    for slot in range(256):
        addr = S + slot * 65536
        if addr in live:
            blocks.append(block(addr, 65536, live[addr], "active_allocated", frames[slot % 4]))
        else:
            blocks.append(block(addr, 65536, 65536, "inactive"))
    return snapshot([segment(0, S, 256 * 65536, blocks)], [trace])


# Flight recorder ---------------------------------------------------------

BASE_NS = 1700000000000000000  # 2023-11-14 22:13:20 UTC


def c10d_frames(op, user_line, user_name="train_step", user_file="train.py"):
    return [frame("torch/distributed/distributed_c10d.py", 2696, op),
            frame("torch/distributed/c10d_logger.py", 83, "wrapper"),
            frame(user_file, user_line, user_name)]


def fr_entry(record_id, seq, op, state, sizes=((1024,),), dtype="Float", pg=("0", "default_pg"), p2p=False,
             p2p_seq=0, line=88):
    created = BASE_NS + seq * 1000000000 + record_id
    return {
        "record_id": record_id, "pg_id": int(pg[0]) if pg[0].isdigit() else 0, "process_group": tuple(pg),
        "collective_seq_id": seq, "p2p_seq_id": p2p_seq, "op_id": record_id,
        "profiling_name": "nccl:" + op, "time_created_ns": created,
        "input_sizes": [list(s) for s in sizes], "input_dtypes": [dtype] * len(sizes),
        "output_sizes": [list(s) for s in sizes], "output_dtypes": [dtype] * len(sizes),
        "state": state,
        "time_discovered_started_ns": created + 1000000 if state != "scheduled" else None,
        "time_discovered_completed_ns": created + 2000000 if state == "completed" else None,
        "retired": state == "completed", "timeout_ms": 600000, "is_p2p": p2p,
        "thread_id": "1", "thread_name": "pt_main_thread", "duration_ms": 1.5 if state == "completed" else None,
        "frames": c10d_frames(op, line),
    }


def fr_dump(entries, ranks):
    d = {"version": "2.10", "comm_lib_version": "2.21.5",
         "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(ranks))}},
         "pg_status": {"0": {"last_enqueued_collective": 0, "last_started_collective": 0, "last_completed_collective": 0}},
         "entries": entries}
    for e in entries:  # the JSON dump has no None: 0 for times never discovered
        if e.get("duration_ms") is None:
            e.pop("duration_ms", None)
    return d


def write_dumps(folder, per_rank, ranks, fmt):
    os.makedirs(folder, exist_ok=True)
    for r, entries in per_rank.items():
        d = fr_dump(entries, ranks)
        if fmt == "json":
            for e in d["entries"]:
                for k in ("time_discovered_started_ns", "time_discovered_completed_ns"):
                    if e[k] is None:
                        e[k] = 0
                e["process_group"] = list(e["process_group"])
            with open(os.path.join(folder, "nccl_trace_rank_%d.json" % r), "w") as f:
                json.dump(d, f, sort_keys=True)
        else:
            with open(os.path.join(folder, "nccl_trace_rank_%d" % r), "wb") as f:
                pickle.dump(d, f, protocol=fmt)


def completed(n, op="all_reduce"):
    return [fr_entry(i, i + 1, op, "completed") for i in range(n)]


def fr_missing_rank(out):
    # Ranks 0, 1, 3 enter all_reduce #4 and wait; rank 2's last collective is #3,
    # called from train.py:88. Expected: missing_ranks, seq 4, ranks [2], waiting [0, 1, 3],
    # since 2023-11-14 22:13:24 UTC (seq 4's start on rank 0: BASE + 4 s + record 3 + 1 ms).
    per = {r: completed(3) + [fr_entry(3, 4, "all_reduce", "started")] for r in (0, 1, 3)}
    per[2] = completed(3)
    write_dumps(os.path.join(out, "fr_missing_rank"), per, range(4), 4)


def fr_size_mismatch(out):
    # All-reduce #2: rank 1 has 2048 elements where ranks 0 and 2 have 1024.
    per = {}
    for r in range(3):
        size = ((2048,),) if r == 1 else ((1024,),)
        per[r] = completed(1) + [fr_entry(1, 2, "all_reduce", "started", sizes=size)]
    write_dumps(os.path.join(out, "fr_size_mismatch"), per, range(3), "json")


def fr_dtype_mismatch(out):
    # Broadcast #3: rank 1 sends BFloat16 where ranks 0 and 2 send Float (protocol 2, as torch's C++ pickler).
    per = {}
    for r in range(3):
        per[r] = completed(2) + [fr_entry(2, 3, "broadcast", "started", dtype="BFloat16" if r == 1 else "Float")]
    write_dumps(os.path.join(out, "fr_dtype_mismatch"), per, range(3), 2)


def fr_op_mismatch(out):
    # The rank-dependent branch: #5 is an all_reduce on ranks 0, 1, 3 and an
    # _allgather_base on rank 2 (called from train.py:91). Expected: op, ranks [2], waiting [0, 1, 3].
    per = {}
    for r in range(4):
        last = fr_entry(4, 5, "_allgather_base" if r == 2 else "all_reduce", "started", line=91 if r == 2 else 88)
        per[r] = completed(4) + [last]
    write_dumps(os.path.join(out, "fr_op_mismatch"), per, range(4), 5)


def fr_p2p(out):
    # A send/recv pair between the all-reduces carries collective_seq_id 1 (p2p
    # ops do not advance it) and must not be matched as collective #1.
    # Then rank 1 never joins all_reduce #2. Expected: missing_ranks, seq 2, ranks [1], waiting [0].
    # PyTorch names them by the recording rank first: "nccl:send 0->1" on rank 0, "nccl:recv 1<-0" on rank 1.
    send = fr_entry(1, 1, "send 0->1", "completed", p2p=True, p2p_seq=1, sizes=((4096,),))
    recv = fr_entry(1, 1, "recv 1<-0", "completed", p2p=True, p2p_seq=1, sizes=((4096,),))
    per = {0: completed(1) + [send, fr_entry(2, 2, "all_reduce", "started")],
           1: completed(1) + [recv]}
    write_dumps(os.path.join(out, "fr_p2p"), per, range(2), 4)


def fr_p2p_hang(out):
    # A two-stage pipeline: rank 0 sends each microbatch's activations to rank 1
    # ("nccl:send 0->1"), rank 1 receives them ("nccl:recv 1<-0"). Microbatches 1
    # and 2 pass; rank 0's third send is started, but rank 1 went on to the
    # all-reduce #2 of the default group instead of posting its third receive.
    # Expected: p2p, rank 1 never posted the recv matching rank 0's send #3,
    # rank 0 waiting in it (an all-reduce #2 only rank 1 entered comes later).
    def sends(n, state_last):
        return [fr_entry(10 + k, 1, "send 0->1", "completed" if k < n - 1 else state_last, p2p=True, p2p_seq=k + 1,
                         sizes=((8, 1024),)) for k in range(n)]
    def recvs(n):
        return [fr_entry(10 + k, 1, "recv 1<-0", "completed", p2p=True, p2p_seq=k + 1, sizes=((8, 1024),))
                for k in range(n)]
    per = {0: completed(1) + sends(3, "started"),
           1: completed(1) + recvs(2) + [fr_entry(12, 2, "all_reduce", "started")]}
    write_dumps(os.path.join(out, "fr_p2p_hang"), per, range(2), 4)


def snapshot_unwinder_frames():
    # As a C++-and-Python stack (torch.cuda.memory._record_memory_history(stacks="all"))
    # records it: the unwinder's own frames first, then the allocator, a dispatcher and
    # interpreter frames, then the user's Python. A 2 MiB allocation with such a stack
    # and a 1 MiB one with only the unwinder's two frames, both live at the end.
    unwind = [{"filename": "??", "line": 0, "name": "torch::unwind::unwind()"},
              {"filename": "??", "line": 0, "name": "torch::CapturedTraceback::gather(bool, bool, bool)"},
              {"filename": "??", "line": 0, "name": "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::"
                                                   "malloc(signed char, unsigned long, CUstream_st*)"},
              {"filename": "/opt/conda/lib/python3.10/site-packages/torch/include/ATen/core/boxing/impl/boxing.h",
               "line": 0, "name": "c10::impl::BoxedKernelWrapper"},
              {"filename": "Python/ceval.c", "line": 0, "name": "_PyEval_EvalFrameDefault"},
              {"filename": "??", "line": 0, "name": "PyObject_Call"}]
    fwd = unwind + [{"filename": "/work/model.py", "line": 40, "name": "forward"},
                    {"filename": "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", "line": 1501,
                     "name": "_call_impl"},
                    {"filename": "/work/train.py", "line": 80, "name": "train_step"},
                    {"filename": "??", "line": 0, "name": "__libc_start_main"},
                    {"filename": "??", "line": 0, "name": "_start"}]
    only = unwind[:2]
    base = 0x7F0000000000
    blocks = [block(base, 2 * MiB, 2 * MiB, "active_allocated", fwd),
              block(base + 2 * MiB, MiB, MiB, "active_allocated", only),
              block(base + 3 * MiB, MiB, MiB, "inactive")]
    trace = [te("segment_alloc", base, 4 * MiB, t=100), te("alloc", base, 2 * MiB, t=110, frames=fwd),
             te("alloc", base + 2 * MiB, MiB, t=120, frames=only)]
    return snapshot([segment(0, base, 4 * MiB, blocks)], [trace])


def fr_truncated_ring(out):
    # Both rings hold 3 entries (one TORCH_NCCL_TRACE_BUFFER_SIZE for the job) and
    # wrapped: rank 1's kept records 3..5 (collectives #4..#6), rank 0's records
    # 4..6 (#5..#7): #1..#4 are not mismatches. Rank 0 then waits in all_reduce
    # #7, which rank 1 never joined.
    per = {0: (completed(6) + [fr_entry(6, 7, "all_reduce", "started")])[4:],
           1: completed(6)[3:]}
    write_dumps(os.path.join(out, "fr_truncated_ring"), per, range(2), 4)


def fr_ring_not_full(out):
    # Rank 1's dump starts at record 2 but holds 2 entries where rank 0's ring
    # holds 5: a ring of 5 that held 2 never wrapped (an only-active dump, or a
    # reset recorder). Nothing was overwritten; rank 0 waits in #5, which rank 1
    # (last #4) never joined.
    per = {0: completed(4) + [fr_entry(4, 5, "all_reduce", "started")],
           1: completed(4)[2:]}
    write_dumps(os.path.join(out, "fr_ring_not_full"), per, range(2), 4)


def coalesced(record_id, seq, sizes, state, ops=None):
    # As ProcessGroupNCCL records a coalescing region (PyTorch >= 2.7, fr_trace's
    # find_coalesced_group_with_non_p2p): each op inside it with its own sizes and
    # the region's collective_seq_id, never started (no events of its own), then
    # "nccl:coalesced" with that seq_id and no tensors, whose state is the group's.
    ops = ops or ["all_reduce"] * len(sizes)
    out = [fr_entry(record_id + i, seq, op, "scheduled", sizes=((n,),)) for i, (op, n) in enumerate(zip(ops, sizes))]
    end = fr_entry(record_id + len(sizes), seq, "coalesced", state)
    end["input_sizes"], end["output_sizes"], end["input_dtypes"], end["output_dtypes"] = [], [], [], []
    return out + [end]


def fr_coalesced(out):
    # all_reduce #1, a coalesced group #2 of three all-reduces (1024, 2048, 4096
    # elements), all_reduce #3: every rank completed everything. No mismatch.
    per = {r: completed(1) + coalesced(1, 2, [1024, 2048, 4096], "completed") +
              [fr_entry(5, 3, "all_reduce", "completed")] for r in range(2)}
    write_dumps(os.path.join(out, "fr_coalesced"), per, range(2), 4)


def fr_coalesced_size_mismatch(out):
    # Coalesced group #2: rank 1's second all-reduce has 3072 elements where
    # ranks 0 and 2 have 2048; the coalesced entries themselves agree (no tensors).
    # Expected: size, ranks [1], the others' sizes (1024, 2048, 4096).
    per = {}
    for r in range(3):
        per[r] = completed(1) + coalesced(1, 2, [1024, 3072 if r == 1 else 2048, 4096], "started")
    write_dumps(os.path.join(out, "fr_coalesced_size_mismatch"), per, range(3), "json")


def fr_all_complete(out):
    per = {r: completed(3) for r in range(2)}
    write_dumps(os.path.join(out, "fr_all_complete"), per, range(2), "json")


def fr_big(out, ranks):
    # PyTorch's default ring (TORCH_NCCL_TRACE_BUFFER_SIZE=2000), each entry with
    # an eight-frame stack as a training loop's backward hook records it. The
    # last rank never joins the final all-reduce: a hang, as such folders are read.
    def stack(i):
        return c10d_frames("all_reduce", 88 + i % 7) + [
            frame("torch/distributed/fsdp/_runtime_utils.py", 700 + i % 5, "_post_backward_hook"),
            frame("torch/autograd/graph.py", 744, "_engine_run_backward"), frame("torch/_tensor.py", 521, "backward"),
            frame("train.py", 140, "main"), frame("train.py", 160, "<module>")]
    per = {}
    for r in range(ranks):
        n = 1999 if r == ranks - 1 else 2000
        per[r] = []
        for i in range(n):
            e = fr_entry(i, i + 1, "all_reduce", "completed" if i < 1999 else "started")
            e["frames"] = stack(i)
            per[r].append(e)
    write_dumps(out, per, range(ranks), 4)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--fr-big":
        fr_big(sys.argv[3], int(sys.argv[2]))
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--big":
        with open(sys.argv[3], "wb") as f:
            pickle.dump(big_snapshot(int(sys.argv[2])), f, protocol=4)
        return
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    t0, s0 = device0_trace()
    with open(os.path.join(out, "snapshot_one_device.pickle"), "wb") as f:
        pickle.dump(snapshot(s0, [t0]), f, protocol=4)
    t0n, s0n = device0_trace(timed=False)
    with open(os.path.join(out, "snapshot_no_time.json"), "w") as f:
        json.dump(snapshot(s0n, [t0n]), f)
    t1, s1 = device1()
    with open(os.path.join(out, "snapshot_two_devices.pickle"), "wb") as f:
        pickle.dump(snapshot(s0 + s1, [t0, t1]), f, protocol=2)
    with open(os.path.join(out, "snapshot_expandable.pickle"), "wb") as f:
        pickle.dump(expandable(), f, protocol=5)
    with open(os.path.join(out, "snapshot_oom.pickle"), "wb") as f:
        pickle.dump(oom(), f, protocol=4)
    # Refused: a pickle that would construct an object (an OrderedDict: GLOBAL + REDUCE).
    import collections
    with open(os.path.join(out, "refused_object.pickle"), "wb") as f:
        pickle.dump({"segments": collections.OrderedDict()}, f, protocol=4)
    with open(os.path.join(out, "snapshot_unwinder_frames.json"), "w") as f:
        json.dump(snapshot_unwinder_frames(), f)
    for fn in (fr_missing_rank, fr_size_mismatch, fr_dtype_mismatch, fr_op_mismatch, fr_p2p, fr_p2p_hang,
               fr_truncated_ring, fr_all_complete, fr_ring_not_full, fr_coalesced, fr_coalesced_size_mismatch):
        fn(out)


if __name__ == "__main__":
    main()
