"""Predicted vs measured: the scaling model of cockpit.forecast.prediction against real gloo DDP runs on this machine.

1. `hlm-train probe` under torchrun measures this machine's all-reduce bus bandwidth between 2 processes:
   the figure a site profile would carry (intra_node_busbw_gbs), known before any training.
2. The 1-process baseline trains (strong scaling: every run processes the same samples).
3. From the baseline's result.json and that figure alone, cockpit.forecast.prediction predicts T for 2 and 4
   workers; then the 2-worker run (and, with --four, the 4-worker run) trains and the two are printed side
   by side with the error. On a 2-core machine 4 one-core workers oversubscribe the cores: that run is only
   shown, not a target.
4. Each prediction carries its 90% interval (cockpit.forecast.interval: the prior, as no configuration of this
   bench has finished with a first prediction before it). With --repeats R the 2-worker run trains R times: the
   first prediction is set beside each measurement, the prediction is refit from the runs' own probes (link,
   alpha-beta fits, contention: cockpit.forecast.prediction.measured_links), the spread of the repeats and the
   misses give the interval the next study would get, and the coverage (measured values inside the first 90%
   interval) is printed.

    python bench/prediction.py --data ../shared/data/physionet/mitdb      # about 3 minutes on 2 cores
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

from ddp_scaling import add_run_arguments, bench_config, count_train_windows, run_one  # noqa: E402

from cockpit.forecast import interval  # noqa: E402
from cockpit.forecast.prediction import Link, Links, NoPrediction, measured_links, merge, predict  # noqa: E402
from cockpit.forecast.prediction_words import moved_term  # noqa: E402


def probe_busbw(nbytes: int) -> float:
    """Bus bandwidth (bytes/s) of a 2-process gloo all-reduce of `nbytes`, via `hlm-train probe`."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "trainer",
           "probe", "--device", "cpu", "--bytes", str(nbytes)]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=True,
                         env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}).stdout
    return json.loads(out.strip().splitlines()[-1])["links"]["intra_node"]["busbw_bytes_per_s"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_arguments(p)
    p.add_argument("--samples", type=int, default=1152, help="samples per run")
    p.add_argument("--four", action="store_true", help="also run 4 workers (oversubscribed on 2 cores)")
    p.add_argument("--workdir", type=Path, default=None)
    p.add_argument("--repeats", type=int, default=1, help="times the 2-worker run trains (coverage and refit)")
    args = p.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="hlm-predict-"))
    config = bench_config(args, workdir, "prediction")
    windows = count_train_windows(config)
    k = min(args.samples, windows) // (4 * args.batch_size)  # steps of the 4-worker run
    if k < 1:
        sys.exit(f"only {windows} training windows: fewer than one global batch of 4 x {args.batch_size}")
    print(f"{config['dataset']}: every run trains on the same {4 * k * args.batch_size} windows of {args.window} "
          f"tokens; model {args.layers} x {args.d_model}, batch {args.batch_size} per process, 1 core each")
    load0 = os.getloadavg()[0]
    base = run_one(workdir, config, 1, 4 * k)
    busbw = probe_busbw(base["comm"]["grad_bytes"])
    links = Links(intra_node=Link(busbw, 0.0, "hlm-train probe on this machine"))
    print(f"baseline: T1 = {base['timing']['train_time_s']:.2f} s over {base['timing']['steps']} steps; "
          f"gradients {base['comm']['grad_bytes'] / 2**20:.1f} MiB in {base['comm']['buckets']} bucket(s); "
          f"gloo bus bandwidth {busbw / 1e9:.2f} GB/s (probe)")
    print(f"\n{'N':>2} {'predicted T':>12} {'measured T':>11} {'error':>7}   {'pred. S':>7} {'meas. S':>7}   "
          "predicted parts (s): data / compute / comm / optimizer / other")
    runs = [2, 4] if args.four else [2]
    prior = interval.error_model([])
    inside, measured_runs, firsts, times = 0, [], {}, []
    for n in [2, 4]:
        pred = predict(base, 1, n, 1.0, links)
        if isinstance(pred, NoPrediction):
            print(f"{n:>2} cannot predict: {pred.reason}")
            continue
        firsts[n] = pred
        parts = " / ".join(f"{pred.parts[x]:.2f}" for x in ("data_wait", "compute", "comm", "optimizer", "other"))
        t90 = interval.interval(pred.t_s, prior)
        if n not in runs:
            print(f"{n:>2} {pred.t_s:12.2f} {'(not run)':>11} {'':>7}   {pred.speedup:7.2f} {'':>7}   {parts}")
            print(f"{'':>2} T {t90.words('s')} ({prior.basis})")
            continue
        for repeat in range(args.repeats if n == 2 else 1):
            meas = run_one(workdir / f"r{repeat}", config, n, 4 * k // n)
            measured_runs.append(meas)
            t = meas["timing"]["train_time_s"]
            times += [t] if n == 2 else []
            s = base["timing"]["train_time_s"] / t
            inside += t90.contains(t)
            note = "  (4 processes on 2 cores: oversubscribed)" if n > (os.cpu_count() or 1) else ""
            print(f"{n:>2} {pred.t_s:12.2f} {t:11.2f} {(pred.t_s - t) / t:+7.1%}   {pred.speedup:7.2f} {s:7.2f}   "
                  f"{parts}{note}")
            mb = meas["breakdown_s"]
            print(f"{'':>2} {'':>12} measured parts (s): " + " / ".join(
                f"{mb[x]:.2f}" for x in ("data_wait", "compute", "comm", "optimizer", "other")))
            print(f"{'':>2} first prediction T {t90.words('s')}: measured {'inside' if t90.contains(t) else 'OUTSIDE'}")
    if measured_runs:
        refit_links = merge(measured_links(measured_runs), links)
        refit = predict(base, 1, 2, 1.0, refit_links)
        spread = interval.error_model(interval.log_misses((firsts[2].t_s, t) for t in times), [times])
        if not isinstance(refit, NoPrediction):
            r90 = interval.interval(refit.t_s, spread)
            print(f"\nrefit from the runs' own probes: T {r90.words('s')} ({spread.basis}); moved: "
                  f"{moved_term(firsts[2], refit) or 'nothing'}; link: {refit.link}")
        print(f"coverage: {inside} of {len(measured_runs)} measured T inside the first prediction's 90% interval")
    print(f"\nload average before/after: {load0:.2f} / {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
          f"run directories: {workdir}")


if __name__ == "__main__":
    main()
