"""The optimisation loop, for real on CPU workers: a baseline study run three times, the cockpit's advice for
its 2-worker run, and several changes (bucket sizes, grad_accum, batch size, a strategy) each predicted by the
model the advice uses, each run three times: predicted against measured T with the spread of the repeats, and
whether the advice names the change.

Study A is small and real (local executor, synthetic ECG, 1 and 2 gloo workers of one core each, a fixed
number of steps), run as three studies A1-A3 with the same configurations: the cockpit reads them as three
repeated runs of each configuration, so its advice (cockpit.forecast.advice, as the report prints it) may give a gain
only beyond the spread of T over those repeats (docs/prediction.md). Each change is A's 2-worker run with the
keys set (cockpit.forecast.advice.forecast predicts it from A's recorded runs, as `cockpit plan --what-if` and the
advice do; a change that halves the steps keeps the samples, so T compares), run three times as a 2-worker
study. "advised" is what the advice says of it (cockpit.forecast.advice.options.gain_unclear: predicted faster and by
more than A's spread); "direction" whether the measured median moved the way the prediction said. Study names
carry the process id, so a Slurm study's store (~/.local/share/hlm-cockpit) is never an earlier run's.

Nothing is tuned to the answer: the model is chosen so that the all-reduce is a visible share of a step on two
cores (about 3.4 MB of gradients against a small batch). The machine may be shared: the load average is
printed before and after, and each change's three runs are interleaved with the others' (round-robin), so a
burst of load spreads over all of them rather than one.

    python bench/optimisation_loop.py            # about 5-10 minutes on 2 cores
    sudo python bench/optimisation_loop.py --slurm   # the same on the test Slurm, reached over the test sshd

With --slurm every study runs as Slurm jobs (tests/infra/slurm.sh and Debian's sshd, as the Slurm tests and
bench/site_scale.py need: root): the advice is judged where it will be used, start-up and queue included
outside T.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cockpit.commands.compare import load as load_study_results  # noqa: E402
from cockpit.forecast import advice, prediction  # noqa: E402
from cockpit.forecast.advice.effects import get_key  # noqa: E402
from cockpit.forecast.advice.options import gain_unclear  # noqa: E402
from cockpit.forecast.analysis import analyse  # noqa: E402
from cockpit.report.source import load_input  # noqa: E402
from cockpit.study.spec import AXES  # noqa: E402
from tests.studies import to_toml  # noqa: E402 - the one writer of study TOML

REPEATS = 3


def study_toml(name: str, workdir: Path, args: argparse.Namespace, cluster: dict[str, Any] | None) -> str:
    """Study A: local (one job at a time) unless ``cluster`` is another [cluster] table (--slurm)."""
    table = {"kind": "local", "workdir": str(workdir), "gpus_per_node": 2, "max_concurrent_jobs": 1,
             **(cluster or {})}
    return to_toml({"study": {"name": name}, "cluster": table}) + f"""

[data.datasets.synthetic]
synthetic = true
records = 4
seconds = 120

[data.tokenizer]
name = "samples"
vocab = 256

[model]
layers = {args.layers}
d_model = {args.d_model}
heads = 4

[train]
steps = {args.steps}
lr = 1e-3
cpus_per_task = 1
device = "cpu"
eval = false
metrics_interval_s = 1.0
batch_probe = {'true' if getattr(args, 'batch_probe', False) else 'false'}

[sweep]
window = [{args.window}]
batch_size = [{args.batch_size}]
gpus_per_node = [1, 2]
"""


# the changes tried, as functions of the arguments: two bucket sizes, gradient accumulation and a doubled batch
# at the same samples (half the steps), a sharded strategy
CHANGES: tuple[Callable[[argparse.Namespace], tuple[tuple[str, Any], ...]], ...] = (
    lambda a: (("train.bucket_cap_mb", 0.5),),
    lambda a: (("train.bucket_cap_mb", 0.1),),
    lambda a: (("train.grad_accum", 2), ("train.steps", max(1, a.steps // 2))),
    lambda a: (("batch_size", 2 * a.batch_size), ("train.steps", max(1, a.steps // 2))),
    lambda a: (("strategy", "zero1"),),
)


def run_study(path: Path) -> list[dict[str, Any]]:
    """`cockpit run --headless` (no preflight: nothing to check on this machine); the study's results."""
    proc = subprocess.run([sys.executable, "-m", "cockpit", "run", "--headless", "--skip-preflight", str(path),
                           "--out", str(path.parent / f"{path.stem}-report")],
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{path.name} failed:\n{proc.stdout}\n{proc.stderr}")
    return load_input(path).results


def variant(raw: dict[str, Any], name: str, keys: tuple[tuple[str, Any], ...]) -> str:
    """A's study file with the keys set, its 2-worker configuration only."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items()}
    out["study"] = {**out["study"], "name": name}
    out["sweep"] = {**out["sweep"], "gpus_per_node": [2]}
    for key, value in keys:
        if key in AXES:
            out["sweep"][key] = [value]
        else:
            section, field = key.split(".", 1)
            out[section] = {**out.get(section, {}), field: value}
    return to_toml(out)


def two_worker(results: list[dict[str, Any]]) -> dict[str, Any]:
    return next(r for r in results if (r.get("config") or {}).get("gpus_per_node") == 2)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--window", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch-probe", action="store_true",
                   help="study A's baseline times compute at twice its batch at start-up (train.batch_probe)")
    p.add_argument("--keep", action="store_true", help="keep the studies' directory and print it")
    p.add_argument("--slurm", action="store_true", help="run every study on the test Slurm (needs root)")
    args = p.parse_args()
    t0 = time.perf_counter()
    print(f"load average before: {load_average()} on {os.cpu_count()} cores")
    tmp = Path(tempfile.mkdtemp(prefix="hlm-loop-"))
    with test_slurm(args.slurm) as cluster:
        loop(args, tmp, cluster, t0)
    return 0


@contextlib.contextmanager
def test_slurm(wanted: bool) -> Iterator[dict[str, Any] | None]:
    """The [cluster] table of the test Slurm over the test sshd (bench/cluster.py), or None."""
    if not wanted:
        yield None
        return
    from bench.cluster import test_cluster
    from tests.control.conftest import slurm_cluster_table

    with test_cluster("bench/optimisation_loop.py --slurm", "loop") as c:
        yield slurm_cluster_table(c.sshd, c.env, workdir=str(c.work), max_concurrent_jobs=1, gpus_per_node=2)


def loop(args: argparse.Namespace, tmp: Path, cluster: dict[str, Any] | None, t0: float) -> dict[str, Any]:
    """Study A three times, each change three times, round-robin; then the advice against the measurements.
    Returns A's results and 2-worker T, and each change tried (keys, measured T, forecast, advice words)."""
    where = "the test Slurm" if cluster else "the local executor"
    print(f"   on {where}")
    print(f"1. study A: 1 and 2 workers, d_model {args.d_model} x {args.layers} layers, window {args.window}, batch "
          f"{args.batch_size}, {args.steps} steps; and {len(CHANGES)} changes of its 2-worker run; {REPEATS} rounds, "
          "each A then every change once (round-robin, so load that comes and goes falls on all of them)")
    a_results: list[dict[str, Any]] = []
    a_path = tmp / "A1.toml"
    tried: list[dict[str, Any]] = [{"keys": change(args), "t": [], "runs": []} for change in CHANGES]
    for rep in range(1, REPEATS + 1):
        path = tmp / f"A{rep}.toml"
        path.write_text(study_toml(f"loop{os.getpid()}-a{rep}", tmp / "work", args, cluster))
        a_results += run_study(path)
        raw = tomllib.loads(path.read_text())
        for i, c in enumerate(tried):
            path = tmp / f"C{i}-{rep}.toml"
            path.write_text(variant(raw, f"loop{os.getpid()}-c{i}-{rep}", c["keys"]))
            c["runs"].append(two_worker(run_study(path)))
            c["t"].append(float(c["runs"][-1]["timing"]["train_time_s"]))
    _, _, site = load_study_results(a_path)
    links = prediction.merge(prediction.measured_links(a_results), site)
    recorded = advice.Recorded(a_results)
    row = next(r for r in analyse(a_results, site) if r.get("workers") == 2)
    run = row["result"]
    t_a = [float(r["timing"]["train_time_s"]) for r in a_results if r["config"]["gpus_per_node"] == 2]
    key = tuple(advice.axes_of(run)[a] for a in AXES)
    print(f"2. A's 2-worker T over {len(t_a)} runs: {spread(t_a)} s (median [min-max]); the median run: {row['verdict']}")
    print("   the cockpit's advice for it (A1-A3 read as repeated runs of one study):")
    for item in row["advice_items"]:
        print(f"    {item.text()}")
        for other in item.alternatives:
            print(f"      or {other.text(head=False)}")
    cfg = advice.config_of(run)
    for c in tried:
        f = advice.forecast(advice.changed(cfg, c["keys"]), recorded, links,
                            [(k, get_key(cfg, k), v) for k, v in c["keys"]])
        c["forecast"] = f
        c["advised"] = (f"not predicted: {f.reason}" if isinstance(f, prediction.NoPrediction) else
                        gain_unclear(row["train_time_s"], f.t_s, recorded.spread.get(key)) or "advised")
    print(f"   link: {next((c['forecast'].link for c in tried if not isinstance(c['forecast'], prediction.NoPrediction)), '')}")

    t_med = statistics.median(t_a)
    print(f"3. predicted against measured T of the 2-worker run (s; A: {spread(t_a)}):")
    print(f"   {'change':58}{'predicted T':>12}{'gain':>7}{'measured T [min-max]':>23}{'gain':>7}  direction  advice")
    for c in tried:
        setting = " and ".join(advice.study_key(k, v) for k, v in c["keys"])
        if isinstance(c["forecast"], prediction.NoPrediction):
            print(f"   {setting:58}{'-':>12}{'':7}{spread(c['t']):>23}{t_med - statistics.median(c['t']):+7.2f}  "
                  f"{'-':9}  {c['advised']}")
            continue
        pt = c["forecast"].t_s
        mt = statistics.median(c["t"])
        noise = max(max(t_a) - min(t_a), max(c["t"]) - min(c["t"]))
        right = "right" if (t_med - pt) * (t_med - mt) > 0 else ("within noise" if abs(t_med - mt) <= noise else "WRONG")
        print(f"   {setting:58}{pt:12.2f}{t_med - pt:+7.2f}{spread(c['t']):>23}{t_med - mt:+7.2f}  {right:9}  "
              f"{c['advised']}")
    print(f"wall: {time.perf_counter() - t0:.0f} s; load average after: {load_average()}")
    if args.keep:
        print(f"kept: {tmp}")
    else:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return {"a_results": a_results, "t_a": t_a, "tried": tried, "links": links}


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
