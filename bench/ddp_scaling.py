"""CPU DDP strong scaling: the same run (same windows, same number of samples) with 1 and 2 gloo processes.

Each process gets one core and one intra-op thread (cpus_per_task = 1, so no DataLoader workers); the
per-process batch is fixed, so 2 processes take half the steps of 1 on the same samples. Both runs go
through the real launcher path (`torchrun --standalone -m trainer train --run-dir DIR`) and the figures
come from their result.json files through cockpit.forecast.analysis (speedup, efficiency, overhead, Karp-Flatt).

The model is chosen so compute dominates (about 1 s of forward+backward per step against tens of
milliseconds to all-reduce 7 MB of gradients over loopback): what the benchmark then measures is
whether the loop adds anything besides the unavoidable all-reduce. On a shared machine the other load
on the cores shows up as lost efficiency, so the load average is printed with the results.

    python bench/ddp_scaling.py                      # synthetic ECG (no data needed), about 2 minutes
    python bench/ddp_scaling.py --data ../shared/data/physionet/mitdb
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cockpit.forecast.analysis import scaling_table  # noqa: E402
from runcontract.records import read_result, write_config  # noqa: E402

PHASES = ("data_wait", "compute", "comm", "optimizer", "other")


def count_train_windows(config: dict) -> int:
    """Prepare the shards (once, outside any timing) and count the training windows."""
    from trainer.data import dataset as wd
    from trainer.data.prepare import prepare_dataset

    shard = prepare_dataset(config["data_path"], config["tokenizer"], config["token_cache"], 2,
                            dataset=config["dataset"], synthetic_params=config.get("synthetic_params"))
    manifest = wd.load_manifest(shard)
    return len(wd.WindowDataset(shard, config["window"], "foundation", wd.split_records(manifest, "train")))


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    """The data and model flags the DDP benchmarks share (what bench_config reads)."""
    p.add_argument("--data", default=None, help="PhysioNet-style folder (default: the synthetic generator)")
    p.add_argument("--window", type=int, default=256)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=16, help="per process")


def bench_config(args: argparse.Namespace, workdir: Path, study: str) -> dict:
    """config.json of the benchmark runs: one core and one thread per process, fp32 foundation training;
    `args` gives data, window, layers, d_model and batch_size."""
    return {
        "study": study, "group_id": study, "dataset": "mitdb" if args.data else "synthetic",
        "data_path": str(Path(args.data).resolve()) if args.data else None,
        "synthetic_params": None if args.data else {"records": 5, "seconds": 120},
        "tokenizer": {"name": "samples"}, "token_cache": str(workdir / "tokens"), "mode": "foundation",
        "window": args.window, "precision": "fp32", "batch_size": args.batch_size, "cpus_per_task": 1, "nodes": 1,
        "model": {"layers": args.layers, "d_model": args.d_model, "heads": 4, "dropout": 0.0},
        "train": {"lr": 3e-4, "seed": 0, "device": "cpu", "metrics_interval_s": 5.0, "eval": False},
    }


def run_one(workdir: Path, config: dict, procs: int, steps: int) -> dict:
    run_dir = workdir / f"p{procs}"
    cfg = {**config, "config_id": config.get("config_id") or f"ddp-p{procs}", "gpus_per_node": procs,
           "train": {**config["train"], "steps": steps}}
    write_config(run_dir, cfg)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(procs),
           "-m", "trainer", "train", "--run-dir", str(run_dir)]
    proc = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, check=False)
    result = read_result(run_dir)
    if proc.returncode != 0 or result is None:
        sys.exit(f"run with {procs} process(es) failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_arguments(p)
    p.add_argument("--samples", type=int, default=576, help="samples per run (rounded down to whole global batches)")
    p.add_argument("--bucket-mb", type=float, default=None, help="DDP gradient bucket size (default: DDP's 25 MB)")
    p.add_argument("--workdir", type=Path, default=None, help="keep run directories here (default: a temp dir)")
    p.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    args = p.parse_args()

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="hlm-ddp-"))
    config = bench_config(args, workdir, "ddp-scaling")
    if args.bucket_mb is not None:
        config["train"]["bucket_cap_mb"] = args.bucket_mb
    windows = count_train_windows(config)
    global_batch = 2 * args.batch_size
    k = min(args.samples, windows) // global_batch
    if k < 1:
        sys.exit(f"only {windows} training windows: fewer than one global batch of {global_batch}")
    samples = k * global_batch
    print(f"{config['dataset']}: {windows} training windows of {args.window} tokens; each run trains on the same "
          f"{samples} windows ({samples / windows:.2f} epochs); model {args.layers} x {args.d_model}, "
          f"batch {args.batch_size} per process, 1 thread per process")
    load_before = os.getloadavg()
    results = {1: run_one(workdir, config, 1, 2 * k), 2: run_one(workdir, config, 2, k)}
    load_after = os.getloadavg()

    table = scaling_table(results.values()).set_index("gpus_per_node")
    print(f"\n{'procs':>5} {'T (s)':>8} {'speedup':>8} {'effic.':>7} {'overhead':>9} {'samples/s':>10}   "
          + "  ".join(f"{ph:>15}" for ph in PHASES))
    figures = {}
    for n, r in results.items():
        row = table.loc[n]
        T = r["timing"]["train_time_s"]
        parts = r["breakdown_s"]
        cells = "  ".join(f"{parts[ph]:7.2f} s {parts[ph] / T:5.1%}" for ph in PHASES)
        print(f"{n:>5} {T:8.2f} {row['speedup']:8.3f} {row['efficiency']:7.3f} {row['overhead_s']:8.2f}s "
              f"{r['throughput']['samples_per_s']:10.2f}   {cells}")
        figures[n] = {"train_time_s": T, "speedup": row["speedup"], "efficiency": row["efficiency"],
                      "overhead_s": row["overhead_s"], "karp_flatt": row["karp_flatt"], "breakdown_s": parts,
                      "samples": r["timing"]["samples"], "steps": r["timing"]["steps"],
                      "comm_busy_s": r.get("comm", {}).get("busy_s")}
    e = figures[2]["efficiency"]
    print(f"\nefficiency at 2 processes: {e:.3f} (target >= 0.90: {'met' if e >= 0.90 else 'NOT met'}); "
          f"Karp-Flatt serial fraction {figures[2]['karp_flatt']:.3f}")
    print(f"exposed all-reduce wait per step at 2 processes: "
          f"{1000 * figures[2]['breakdown_s']['comm'] / figures[2]['steps']:.1f} ms "
          f"(all-reduce busy time, overlapping backward: {1000 * (figures[2]['comm_busy_s'] or 0) / k:.1f} ms)")
    per_sample = {n: results[n]["breakdown_s"]["compute"] * n / results[n]["timing"]["samples"] for n in results}
    print(f"compute per sample and process: {1000 * per_sample[1]:.1f} ms alone, {1000 * per_sample[2]:.1f} ms with "
          f"2 processes (x{per_sample[2] / per_sample[1]:.2f}: above 1 means the two cores were not free for "
          "the run - other load or shared memory bandwidth - not overhead of the loop)")
    b1, b2 = results[1]["breakdown_s"], results[2]["breakdown_s"]
    t2_free = figures[2]["train_time_s"] - b2["compute"] + b1["compute"] / 2
    figures[2]["efficiency_at_1proc_compute_rate"] = figures[1]["train_time_s"] / (2 * t2_free)
    print(f"efficiency with compute per sample held at its 1-process rate (what the loop and the all-reduce "
          f"cost on free cores): {figures[2]['efficiency_at_1proc_compute_rate']:.3f}")
    print(f"load average before/after: {load_before[0]:.2f} / {load_after[0]:.2f} on {os.cpu_count()} cores")
    print(f"run directories: {workdir}")
    if args.json:
        args.json.write_text(json.dumps({"figures": figures, "load": [load_before, load_after]}, indent=2))


if __name__ == "__main__":
    main()
