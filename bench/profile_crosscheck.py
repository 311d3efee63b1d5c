"""Cross-check: the cockpit's step breakdown against torch.profiler, on the same steps of a real 2-rank run.

One 2-process gloo run through the real launcher path (`torchrun --standalone -m trainer train`) with
`[train] profile_*` set and a metrics line per step. For every recorded step and rank, three measurements
of data wait, compute and exposed all-reduce:

- trainer: metrics.jsonl, the figures result.json and the cockpit add up (the loop's marks);
- ranges: the trainer's `hlm:<part>` record_function ranges as the profiler's clock recorded them;
- torch: torch's own events, independent of the trainer's marks (cockpit.figures.traces.torch_view): the
  DataLoader's `__next__` ranges, the torch operations of forward and backward, and the time from the
  launch of the last gradient bucket's all-reduce (`c10d::allreduce_`) to the end of backward.

Each is summed over the recorded steps per rank and compared with the trainer's figure; agreement means
within 10%. The profiler slows the steps it records (most visibly the all-reduce launch), so the figures
are those of profiled steps, not of the run's unprofiled ones: what is checked is the accounting.

    python bench/profile_crosscheck.py              # synthetic ECG, about a minute
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
sys.path.insert(0, str(REPO / "bench"))

from ddp_scaling import add_run_arguments, bench_config, count_train_windows  # noqa: E402

from cockpit.figures import traces  # noqa: E402
from runcontract.contract import METRICS_FILE  # noqa: E402
from runcontract.files import read_jsonl  # noqa: E402
from runcontract.records import read_result, write_config  # noqa: E402

CHECKED = ("data_wait", "compute", "comm")
TOLERANCE = 0.10
WHY = {
    ("torch", "data_wait"): "the DataLoader's __next__ range leaves out the copy to the device and the "
                            "loop's bookkeeping of the batch, which the trainer's data wait holds",
    ("torch", "compute"): "torch's operations leave out the Python between them (module calls, autograd "
                          "set-up), which the trainer's compute holds",
    ("torch", "comm"): "the last bucket's launch is found from torch's c10d::allreduce_ op, a few "
                       "microseconds after the trainer's mark in the comm hook",
    ("ranges", "data_wait"): "the range opens and closes inside the trainer's marks",
    ("ranges", "compute"): "the range opens and closes inside the trainer's marks",
    ("ranges", "comm"): "the range opens just after the trainer's mark in the comm hook",
}


def run(workdir: Path, config: dict, steps: int, schedule: dict[str, int]) -> Path:
    run_dir = workdir / "profiled"
    cfg = {**config, "config_id": "profile-crosscheck", "gpus_per_node": 2,
           "train": {**config["train"], "steps": steps, "metrics_interval_s": 1e-6,
                     **{f"profile_{k}": v for k, v in schedule.items()}}}
    write_config(run_dir, cfg)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "-m", "trainer", "train", "--run-dir", str(run_dir)]
    proc = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or read_result(run_dir) is None:
        sys.exit(f"the profiled run failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return run_dir


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_arguments(p)
    p.add_argument("--steps", type=int, default=10, help="optimizer steps of the run")
    p.add_argument("--wait", type=int, default=3, help="profile_wait")
    p.add_argument("--warmup", type=int, default=1, help="profile_warmup")
    p.add_argument("--active", type=int, default=4, help="profile_active: the recorded steps")
    p.add_argument("--workdir", type=Path, default=None, help="keep the run directory here (default: a temp dir)")
    p.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    args = p.parse_args()

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="hlm-profile-"))
    config = bench_config(args, workdir, "profile-crosscheck")
    count_train_windows(config)  # prepares the shards outside the run
    schedule = {"wait": args.wait, "warmup": args.warmup, "active": args.active, "repeat": 1}
    load_before = os.getloadavg()
    run_dir = run(workdir, config, args.steps, schedule)
    load_after = os.getloadavg()
    result = read_result(run_dir)
    assert result is not None
    profile = result["profile"]
    per_step = {(r["rank"], r["step"]): r for r in read_jsonl(run_dir / METRICS_FILE).records
                if not r.get("final")}
    print(f"2 gloo ranks, model {args.layers} x {args.d_model}, window {args.window}, batch {args.batch_size} per "
          f"rank; T {result['timing']['train_time_s']:.2f} s over {result['timing']['steps']} steps, of which "
          f"{result['timing']['profiled_steps']} ran under the profiler ({profile['traced_s']:.2f} s of T: warm-up "
          f"{profile['warmup_steps']}, recorded {profile['steps']}); the profiler's own work outside T: "
          f"{result['timing']['profile_s']:.2f} s")
    under = set(profile["steps"]) | set(profile["warmup_steps"])
    walls = {True: [], False: []}
    for (_rank, n), rec in per_step.items():
        if n > 1:  # the first step holds the loader's start
            walls[n in under].append(rec["interval_s"])
    mean = {k: sum(v) / len(v) if v else float("nan") for k, v in walls.items()}
    print(f"step wall time: {mean[True]:.3f} s under the profiler, {mean[False]:.3f} s without "
          f"(x{mean[True] / mean[False]:.2f}; other load on the cores moves both)")
    figures: dict[str, dict] = {"step_wall_s": {"profiled": mean[True], "unprofiled": mean[False]}}
    worst: dict[tuple[str, str], float] = {}
    for rel in profile["traces"]:
        path = run_dir / rel
        s = traces.summarise(traces.load(path.read_bytes(), str(path)), str(path))
        view = traces.torch_view(s)
        rank = s.rank if s.rank is not None else -1
        steps = [n for n in s.train.steps if (rank, n) in per_step]
        if sorted(steps) != sorted(profile["steps"]):
            sys.exit(f"{rel}: steps {s.train.steps} in the trace, metrics lines for {steps}: expected {profile['steps']}")
        sums = {"trainer": {part: sum(per_step[(rank, n)][f"{part}_s"] for n in steps) for part in CHECKED},
                "ranges": {part: sum(s.parts_s[n][part] for n in steps) for part in CHECKED},
                "torch": {part: sum(view[n][part] for n in steps) for part in CHECKED}}
        figures[f"rank{rank}"] = sums
        print(f"\nrank {rank}, steps {steps[0]}-{steps[-1]} (sums over {len(steps)} steps, ms)")
        print(f"  {'part':<10} {'trainer':>9} {'ranges':>9} {'ratio':>7} {'torch':>9} {'ratio':>7}")
        for part in CHECKED:
            base = sums["trainer"][part]
            cells = []
            for how in ("ranges", "torch"):
                ratio = sums[how][part] / base if base > 0 else float("nan")
                worst[(how, part)] = max(worst.get((how, part), 0.0), abs(ratio - 1.0))
                cells.append(f"{1e3 * sums[how][part]:9.2f} {ratio:7.3f}")
            print(f"  {part:<10} {1e3 * base:9.2f} " + " ".join(cells))
    print()
    for (how, part), dev in sorted(worst.items()):
        verdict = "agrees" if dev <= TOLERANCE else "DIFFERS"
        line = f"{how:>6} vs trainer, {part:<9}: {verdict} (worst rank off by {100 * dev:.1f}%)"
        if dev > 0.01:
            line += f": {WHY[(how, part)]}"
        print(line)
    print(f"load average before/after: {load_before[0]:.2f} / {load_after[0]:.2f} on {os.cpu_count()} cores")
    print(f"run directory: {run_dir}  (cockpit trace {run_dir})")
    if args.json:
        args.json.write_text(json.dumps({"figures": figures, "worst": {f"{h}:{p}": v for (h, p), v in worst.items()},
                                         "profile": profile, "timing": result["timing"]}, indent=2))


if __name__ == "__main__":
    main()
