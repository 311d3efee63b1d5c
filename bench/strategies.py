"""Data-parallel strategies side by side on 2 gloo processes: T, communication by kind and memory per rank,
measured and as cockpit.forecast.prediction predicts them from the 1-process baseline.

One 1-process baseline (with one worker every strategy is the plain model), then the same samples on 2
processes with each strategy (ddp, zero1, fsdp, fsdp_noreshard), all through the real launcher path
(`torchrun --standalone -m trainer train`). The prediction uses the baseline's result.json and the link
figure the 2-process runs' start-up probe measured (cockpit.forecast.prediction.measured_links), as the cockpit does.
Memory is rank 0's: the bytes of parameters, gradients and optimizer state it holds (counted from the tensors)
and its peak resident memory (CPU: the process's, torch and the loader included).

    python bench/strategies.py                 # synthetic ECG, about 5 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from ddp_scaling import add_run_arguments, bench_config, count_train_windows, run_one  # noqa: E402

from cockpit.forecast.prediction import NoPrediction, measured_links, predict  # noqa: E402
from runcontract.axes import STRATEGIES  # noqa: E402
from runcontract.contract import COMM_KINDS  # noqa: E402

MIB = 2**20


def _kinds(by_kind: dict[str, float]) -> str:
    return " ".join(f"{k.replace('_', '-')} {v:.2f}" for k, v in by_kind.items() if v > 0) or "-"


def measure(workdir: Path, config: dict, k: int, strategies: tuple[str, ...] = STRATEGIES, baseline_runs: int = 1
            ) -> tuple[list[dict], dict[str, dict]]:
    """The 1-process baseline over 2k steps (`baseline_runs` times), then each strategy on 2 processes over k
    steps: their result.json."""
    bases = [run_one(workdir / ("baseline" if i == 0 else f"baseline{i + 1}"), config, 1, 2 * k)
             for i in range(baseline_runs)]
    return bases, {s: run_one(workdir / s, {**config, "strategy": s, "config_id": f"{s}-p2"}, 2, k) for s in strategies}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_arguments(p)
    p.add_argument("--samples", type=int, default=256, help="samples per run")
    p.add_argument("--workdir", type=Path, default=None)
    args = p.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="hlm-strategies-"))
    config = bench_config(args, workdir, "strategies")
    windows = count_train_windows(config)
    k = min(args.samples, windows) // (2 * args.batch_size)  # steps of a 2-process run
    if k < 1:
        sys.exit(f"only {windows} training windows: fewer than one global batch of 2 x {args.batch_size}")
    print(f"{config['dataset']}: every run trains on the same {2 * k * args.batch_size} windows of {args.window} "
          f"tokens; model {args.layers} x {args.d_model}, batch {args.batch_size} per process, 1 core each")
    load0 = os.getloadavg()[0]
    (base,), runs = measure(workdir, config, k)
    load1 = os.getloadavg()[0]
    links = measured_links(runs.values())
    link = links.intra_node
    print(f"baseline (1 process): T {base['timing']['train_time_s']:.2f} s; model states "
          f"{base['memory']['model_states_bytes'] / MIB:.2f} MiB; link {link.busbw / 1e9 if link else 0:.3g} GB/s "
          "(the 2-process runs' start-up probe)\n")
    print(f"{'strategy':<15} {'T meas':>7} {'T pred':>7} {'err':>6}   {'comm meas (s)':<34} {'comm pred (s)':<34} "
          f"{'states meas':>11} {'pred':>6} {'peak meas':>9} {'pred':>6} (MiB)")
    for s, r in runs.items():
        pr = predict(base, 1, 2, 1.0, links, strategy=s)
        t = r["timing"]["train_time_s"]
        measured = {k: v["exposed_s"] for k, v in r["comm"]["by_kind"].items()}
        mem = r["memory"]
        if isinstance(pr, NoPrediction):
            print(f"{s:<15} {t:7.2f}   not predicted: {pr.reason}")
            continue
        pm = pr.memory or {}
        print(f"{s:<15} {t:7.2f} {pr.t_s:7.2f} {pr.t_s / t - 1:+6.0%}   {_kinds(measured):<34} "
              f"{_kinds(pr.comm_by_kind):<34} {mem['model_states_bytes'] / MIB:11.2f} "
              f"{pm.get('model_states_bytes', 0) / MIB:6.2f} {mem['peak_bytes'] / MIB:9.0f} "
              f"{pm.get('peak_bytes', 0) / MIB:6.0f}")
    print("\nbytes per step by kind (measured, rank 0): " + "; ".join(
        f"{s}: " + ", ".join(f"{k.replace('_', '-')} {r['comm']['by_kind'][k]['bytes'] / k_steps / MIB:.2f} MiB"
                             for k in COMM_KINDS if k in r["comm"]["by_kind"])
        for s, r in runs.items() for k_steps in [r["timing"]["steps"]]))
    print(f"load average before/after: {load0:.2f} / {load1:.2f} on {os.cpu_count()} cores; run directories: {workdir}")


if __name__ == "__main__":
    main()
