#!/usr/bin/python3
"""The PyTorch peer of bench_step's ddp row: one DDP training step of the same
residual MLP on P CPU processes over Gloo (Debian's python3-torch, 1.13).

Model and step as ShardScope's CPU engine runs them (core/model/mlp_model.h):
input projection io -> D, L blocks y = x + W2 gelu(W1 LN(x) + b1) + b2 (inner
4D), head D -> io, MSE against a fixed teacher's targets, Adam; the math is
fp32 in both. Gradients are all-reduced as PyTorch's CPU DDP does by default,
in fp32: twice the bytes of ShardScope's bf16 gradients. PyTorch 1.13 has no
16-bit reduce worth using on CPU: its bf16 hook refuses without CUDA, Gloo
has no bf16 sum, and --fp16-grads (the same bytes as ShardScope) measured
4x slower than fp32 here. One thread per
process: ShardScope's ranks are threads sharing the machine's cores, PyTorch's
are processes, each with one intra-op thread.

Prints the median step time over steps 1.. (step 0 warms up), and with
--figures the line "figure torch_ddp_step MS ms" scripts/bench reads.
Usage: torch_ddp_step.py [--ranks P] [--steps S] [--fp16-grads] [--figures]
"""
import argparse
import os
import statistics
import sys
import time


def half_allreduce_hook(_, bucket):
    """DDP's fp16_compress_hook, written out: each bucket is all-reduced in 16
    bits (1.13's bf16 hook refuses without CUDA, and Gloo has no bf16 sum)."""
    import torch
    import torch.distributed as dist

    buffer = bucket.buffer()
    compressed = buffer.to(torch.float16).div_(dist.get_world_size())
    future = dist.all_reduce(compressed, async_op=True).get_future()

    def decompress(fut):
        buffer.copy_(fut.value()[0])
        return buffer

    return future.then(decompress)


def rank_main(rank, args, port, result_path):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    torch.manual_seed(0)
    d, io, layers = args.hidden, args.io, args.layers

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = torch.nn.LayerNorm(d)
            self.fc1 = torch.nn.Linear(d, 4 * d)
            self.fc2 = torch.nn.Linear(4 * d, d)

        def forward(self, x):
            return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln(x))))

    model = torch.nn.Sequential(torch.nn.Linear(io, d), *[Block() for _ in range(layers)], torch.nn.Linear(d, io))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    if args.fp16_grads:
        ddp.register_comm_hook(None, half_allreduce_hook)
    opt = torch.optim.Adam(ddp.parameters(), lr=1e-4)
    local = args.batch // args.ranks
    gen = torch.Generator().manual_seed(1 + rank)
    teacher = torch.nn.Linear(io, io)
    times = []
    for _ in range(args.steps):
        x = torch.randn(local, io, generator=gen)
        with torch.no_grad():
            y = teacher(x)
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
        dist.barrier()  # the step ends when every rank's has
        times.append(time.perf_counter() - t0)
    if rank == 0:
        with open(result_path, "w") as f:
            f.write(" ".join(str(t) for t in times))
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--io", type=int, default=64)
    p.add_argument("--batch", type=int, default=0, help="global batch (default 8 per rank)")
    p.add_argument("--fp16-grads", action="store_true", help="all-reduce gradients in fp16 (ShardScope's bytes)")
    p.add_argument("--figures", action="store_true")
    args = p.parse_args()
    if args.batch == 0:
        args.batch = 8 * args.ranks
    if args.ranks < 1 or args.steps < 2 or args.batch % args.ranks:
        sys.exit("--ranks >= 1, --steps >= 2 and a global batch that the ranks divide")
    try:
        import torch.multiprocessing as mp
    except ImportError:
        sys.exit("PyTorch is missing: apt-get install python3-torch (Debian's, run with /usr/bin/python3)")
    import socket
    import tempfile

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "times")
        # spawn() joins every rank and raises when one fails, so a crash never waits forever.
        mp.spawn(rank_main, args=(args, port, result), nprocs=args.ranks, join=True)
        with open(result) as f:
            times = [float(t) for t in f.read().split()]
    step_ms = statistics.median(times[1:]) * 1e3
    print(f"PyTorch DDP/Gloo, {args.ranks} CPU processes, {args.layers} blocks x {args.hidden}, "
          f"global batch {args.batch}: median step {step_ms:.1f} ms (steps 1..{args.steps - 1})")
    if args.figures:
        print(f"figure torch_ddp_step {step_ms:.3f} ms")


if __name__ == "__main__":
    main()
