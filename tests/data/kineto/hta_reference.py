#!/usr/bin/env python3
"""Regenerates hta_reference.json: Holistic Trace Analysis' own numbers for this folder's fixtures.

    python3 tests/data/kineto/hta_reference.py /path/to/HolisticTraceAnalysis [--commit SHA]

Needs an HTA checkout (the folder that holds the `hta` package) and HTA's dependencies (pandas,
numpy, plotly, pyyaml, psutil). Not run by the test suite: tests/core/test_kineto_hta_reference.cpp
reads the JSON it writes and checks ShardScope's analysis against it.

Calls, per fixture job:
  HTA's conventions   Trace(trace_dir=D).load_traces()   (last profiler step left out, float
                      timestamps rounded to whole microseconds)
  whole trace         HTA_DISABLE_NS_ROUNDING=1 and load_traces(include_last_profiler_step=True):
                      HTA's nearest setting to `shardscope-cli analyze --whole-trace`
then BreakdownAnalysis.get_temporal_breakdown, CommunicationAnalysis.get_comm_comp_overlap and,
per rank, the table BreakdownAnalysis.get_gpu_kernel_breakdown sums over ranks
(_get_gpu_kernel_type_time with COMPUTATION, COMMUNICATION, MEMORY), all with visualize=False.
"""

import argparse
import datetime
import importlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> files; HTA reads a directory, so each job is copied into its own folder (data unchanged).
JOBS = {
    "two_ranks": ["two_ranks/rank0_int_ts.json", "two_ranks/rank1_float_ts.json"],
    "fsdp_job": [f"fsdp_job/rank{r}.json.gz" for r in range(4)],
    "epoch_float_job": ["epoch_float_job/rank0.json", "epoch_float_job/rank1.json"],
    "int_ts_float_dur": ["int_ts_float_dur/rank0.json"],
    "torch_ddp_gloo": ["torch_ddp_gloo_rank0.json", "torch_ddp_gloo_rank1.json.gz"],
}


def num(v):
    """A JSON-able number: numpy scalars to Python, NaN to None."""
    v = float(v)
    return None if v != v else v


def analyze(folder, whole_trace):
    # Imported here: the rounding switch is read when the parser runs, the modules come from the checkout.
    from hta.analyzers.breakdown_analysis import BreakdownAnalysis
    from hta.analyzers.communication_analysis import CommunicationAnalysis
    from hta.common.trace import Trace
    from hta.utils.utils import get_kernel_type, KernelType

    t = Trace(trace_dir=folder)
    if whole_trace:
        t.load_traces(include_last_profiler_step=True)
    else:
        t.load_traces()
    temporal = BreakdownAnalysis.get_temporal_breakdown(t, visualize=False)
    overlap = CommunicationAnalysis.get_comm_comp_overlap(t, visualize=False)
    sym = t.symbol_table.get_sym_table()
    types = [KernelType.COMPUTATION.name, KernelType.COMMUNICATION.name, KernelType.MEMORY.name]

    ranks = {}
    for _, row in temporal.iterrows():
        rank = int(row["rank"])
        kt = float(row["kernel_time(ns)"])  # HTA's "(ns)" columns hold the trace's unit, microseconds
        ranks[str(rank)] = {
            "kernel_time_us": num(kt),
            "idle_us": num(row["idle_time(ns)"]),
            "compute_us": num(row["compute_time(ns)"]),
            "non_compute_us": num(row["non_compute_time(ns)"]),
            # unrounded, from HTA's own sums; HTA prints them rounded to 2 decimals (the *_hta fields)
            "idle_pct": num(100.0 * row["idle_time(ns)"] / kt),
            "compute_pct": num(100.0 * row["compute_time(ns)"] / kt),
            "non_compute_pct": num(100.0 * row["non_compute_time(ns)"] / kt),
            "idle_pct_hta": num(row["idle_time_pctg"]),
            "compute_pct_hta": num(row["compute_time_pctg"]),
            "non_compute_pct_hta": num(row["non_compute_time_pctg"]),
        }
    for _, row in overlap.iterrows():
        ranks[str(int(row["rank"]))]["overlap_pct_hta"] = num(row["comp_comm_overlap_pctg"])
    for rank, df in t.traces.items():
        # get_comm_comp_overlap's ratio, unrounded: HTA returns only the rounded column.
        gpu = df[df["stream"].ne(-1)].copy()
        gpu["kernel_type"] = gpu["name"].apply(lambda n: get_kernel_type(sym[n]))
        per_type = BreakdownAnalysis._get_gpu_kernel_type_time(gpu, types)
        ranks[str(rank)]["kernel_types_us"] = {r["kernel_type"]: num(r["sum"]) for _, r in per_type.iterrows()}
    ratio = overlap_ratios(t)
    for rank, v in ratio.items():
        ranks[str(rank)]["overlap_pct"] = num(100.0 * v)

    job_types = BreakdownAnalysis.get_gpu_kernel_breakdown(t, visualize=False, include_memory_kernels=True)[0]
    total = float(job_types["sum"].sum())
    kernel_types = {
        r["kernel_type"]: {"us": num(r["sum"]), "pct": num(100.0 * r["sum"] / total), "pct_hta": num(r["percentage"])}
        for _, r in job_types.iterrows()
    }
    return {"ranks": ranks, "kernel_types": kernel_types}


def overlap_ratios(t):
    """get_comm_comp_overlap's per-rank ratio before HTA rounds it: the function builds a frame with a
    "comp_comm_overlap_ratio" column but returns only the rounded percentage, so the column is read
    as the function reads it (a spy on DataFrame.__getitem__) instead of recomputing it here."""
    from hta.analyzers.communication_analysis import CommunicationAnalysis
    import pandas as pd

    captured = {}
    original = pd.DataFrame.__getitem__

    def spy(self, key):
        if isinstance(key, str) and key == "comp_comm_overlap_ratio" and "rank" in self.columns:
            captured.update(zip(self["rank"], original(self, key)))
        return original(self, key)

    pd.DataFrame.__getitem__ = spy
    try:
        CommunicationAnalysis.get_comm_comp_overlap(t, visualize=False)
    finally:
        pd.DataFrame.__getitem__ = original
    return captured


def run_job(name, files, whole_trace):
    with tempfile.TemporaryDirectory() as folder:
        for f in files:
            shutil.copy(os.path.join(HERE, f), folder)
        try:
            return analyze(folder, whole_trace)
        except Exception as e:  # what HTA says about a trace it cannot read is part of the reference
            return {"hta_error": f"{type(e).__name__}: {e}"}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("hta_checkout", help="folder holding the hta package")
    p.add_argument("--commit", help="HTA commit (default: git rev-parse HEAD in the checkout)")
    p.add_argument("--sources", help="JSON file: which HTA file versions the checkout holds, copied into the header "
                   "(for a checkout rebuilt from several commits)")
    p.add_argument("--out", default=os.path.join(HERE, "hta_reference.json"))
    args = p.parse_args()

    sys.path.insert(0, os.path.abspath(args.hta_checkout))
    commit = args.commit
    if not commit:
        try:
            commit = subprocess.check_output(["git", "-C", args.hta_checkout, "rev-parse", "HEAD"], text=True).strip()
        except (OSError, subprocess.CalledProcessError):
            commit = "unknown"
    pd = importlib.import_module("pandas")
    np = importlib.import_module("numpy")

    out = {
        "generator": "tests/data/kineto/hta_reference.py",
        "hta_repository": "facebookresearch/HolisticTraceAnalysis",
        "hta_commit": commit,
        "hta_sources": json.load(open(args.sources)) if args.sources else None,
        "date": datetime.date.today().isoformat(),
        "python": platform.python_version(),
        "pandas": pd.__version__,
        "numpy": np.__version__,
        "calls": {
            "hta": "Trace(trace_dir=D).load_traces(); BreakdownAnalysis.get_temporal_breakdown(t, visualize=False); "
            "CommunicationAnalysis.get_comm_comp_overlap(t, visualize=False); "
            "BreakdownAnalysis.get_gpu_kernel_breakdown(t, visualize=False, include_memory_kernels=True) "
            "and, per rank, its _get_gpu_kernel_type_time(kernels with stream != -1, [COMPUTATION, COMMUNICATION, MEMORY])",
            "whole_trace": "the same with HTA_DISABLE_NS_ROUNDING=1 and load_traces(include_last_profiler_step=True)",
        },
        "units": "microseconds (HTA's '(ns)' columns hold the trace's unit); percentages unrounded, *_hta as HTA prints them",
        "jobs": {},
    }
    for name, files in JOBS.items():
        os.environ.pop("HTA_DISABLE_NS_ROUNDING", None)
        hta = run_job(name, files, whole_trace=False)
        os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
        whole = run_job(name, files, whole_trace=True)
        os.environ.pop("HTA_DISABLE_NS_ROUNDING", None)
        out["jobs"][name] = {"files": files, "hta": hta, "whole_trace": whole}

    with open(args.out, "w") as f:
        json.dump(out, f, indent=1, sort_keys=False)
        f.write("\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
