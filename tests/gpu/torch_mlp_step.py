#!/usr/bin/env python3
"""PyTorch's training step for ShardScope's residual MLP at world size 1, the
reference the GPU check compares ShardScope's `--backend cuda --ranks 1` step
against (tests/gpu/check.sh prints the ratio).

The model is ShardScope's (core/model/mlp_model.cpp): an input projection
io -> D, L blocks x + fc2(gelu_tanh(fc1(LayerNorm(x)))) with fc1 D -> 4D, and an
output projection D -> io; MSE loss; AdamW (lr 1e-3, no weight decay).

Two precisions, both timed, the faster one is the reference:
  bf16-params: what ShardScope does. bf16 weights, activations and gradients,
               fp32 master weights and Adam state, one fused AdamW over the
               masters, then the masters are copied back into the bf16 weights.
  autocast:    PyTorch's usual recipe. fp32 weights, torch.autocast(bf16) for
               the forward, fp32 gradients, fused AdamW.
Prints one line per mode: TORCH_STEP_MS <mode> <median ms>.
"""
import argparse
import statistics

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(nn.functional.gelu(self.fc1(self.ln(x)), approximate="tanh"))


def make_model(layers, hidden, io):
    return nn.Sequential(nn.Linear(io, hidden), *[Block(hidden) for _ in range(layers)], nn.Linear(hidden, io))


def time_steps(step, warmup, reps):
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def copy_all(dst, src):
    """dst[i].copy_(src[i]) for all i, as one foreach launch when PyTorch has it."""
    if hasattr(torch, "_foreach_copy_"):
        torch._foreach_copy_(dst, src)
    else:
        for d, s in zip(dst, src):
            d.copy_(s)


def bf16_params_step(args, x, y):
    model = make_model(args.layers, args.hidden, args.io).cuda()
    masters = [p.detach().clone().float() for p in model.parameters()]
    for m in masters:
        m.grad = torch.zeros_like(m)
    model = model.to(torch.bfloat16)
    params = list(model.parameters())
    opt = torch.optim.AdamW(masters, lr=1e-3, weight_decay=0.0, fused=True)
    xb, yb = x.to(torch.bfloat16), y.to(torch.bfloat16)

    def step():
        for p in params:
            p.grad = None
        loss = nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        copy_all([m.grad for m in masters], [p.grad for p in params])
        opt.step()
        with torch.no_grad():
            copy_all(params, masters)

    return time_steps(step, args.warmup, args.reps)


def autocast_step(args, x, y):
    model = make_model(args.layers, args.hidden, args.io).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0, fused=True)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = nn.functional.mse_loss(model(x).float(), y)
        loss.backward()
        opt.step()

    return time_steps(step, args.warmup, args.reps)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--io", type=int, default=512)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    torch.manual_seed(1)
    x = torch.randn(args.batch, args.io, device="cuda")
    y = torch.randn(args.batch, args.io, device="cuda")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    for name, fn in (("bf16-params", bf16_params_step), ("autocast", autocast_step)):
        print(f"TORCH_STEP_MS {name} {fn(args, x, y):.4f}", flush=True)


if __name__ == "__main__":
    main()
