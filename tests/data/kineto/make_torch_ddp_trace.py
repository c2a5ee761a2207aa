#!/usr/bin/python3
"""Writes torch_ddp_gloo_rank{0,1}.json: a real PyTorch profiler trace of a
2-rank DistributedDataParallel run on CPU with the Gloo backend.

Debian's python3-torch (1.13, built without Kineto) writes the older
autograd-profiler format: a bare JSON array of events, pid "CPU functions",
float microsecond timestamps, no distributedInfo (so the rank has to be given:
shardscope-cli analyze --rank-of FILE=R). Run: /usr/bin/python3 make_torch_ddp_trace.py [OUT_DIR]
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 4


def run(rank: int, world: int, out_dir: str) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29517"
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 16)), bucket_cap_mb=1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 64)
    y = torch.randn(32, 16)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(STEPS):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            prof.step()
    prof.export_chrome_trace(os.path.join(out_dir, f"torch_ddp_gloo_rank{rank}.json"))
    dist.destroy_process_group()


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.set_num_threads(1)
    mp.spawn(run, args=(2, out), nprocs=2, join=True)
