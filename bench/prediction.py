"""Predicted against measured, the whole picture in one run: every study the prediction benches measure, each
figure predicted twice (first, and refit just before it ran) with its 90% interval, beside the measurement.

The parts, each a real study of this machine (`--parts`, all by default):

- ``ddp``: a DDP row of 2 local gloo workers from the 1-worker baseline (strong scaling, the same samples),
  trained `--repeats` times (bench/ddp_scaling.py's runs).
- ``strategies``: the same on 2 gloo ranks with each strategy (ddp, zero1, fsdp, fsdp_noreshard;
  bench/strategies.py's runs): T and the memory per rank.
- ``nodes``: 2 nodes x 1 worker on the test Slurm from each study's own 1-node baseline, `--repeats` studies
  (a fixed number of steps: twice the samples on 2 workers). Needs root, as the Slurm tests do.
- ``scripts``: the image and the LM example (examples/workloads/, bench/workload_examples.py's shapes) on 2 local
  workers from each study's own 1-worker baseline, `--repeats` studies of each: scripts run unmodified
  (`runcontract`), their comm from their own start-up probe.
- ``loop``: the optimisation loop on the test Slurm (bench/optimisation_loop.py --slurm): each change the advice
  can name, predicted from study A's runs, run three times; the predicted gain against the measured gain.

Each baseline (of ddp, strategies and each nodes and scripts study) runs `--baseline-runs` times and the
predictions are made from their mean, as a study with [study].baseline_runs does (cockpit.forecast.baseline_runs);
their spread is a repeat the intervals' noise is pooled from.

"first" is the prediction made before any N-worker run of the part: the baseline's result.json and the link as
`hlm-train probe` measures it on this machine before training (bandwidth, per-call latency, each collective's
alpha-beta fit, the contention probe: what a preflight knows), the overlap assumed, its interval from the noise
prior and the terms it models (cockpit.forecast.interval.for_terms).
"refit" is the prediction as the cockpit makes it just before that run starts: the runs of the part finished
before it refit the link, the contention and the overlap (cockpit.forecast.prediction.measured_links), and its
interval is cockpit.forecast.interval.error_model over the misses of those runs against the refit model, and
the spread of their repeats, widened by its own terms, as the plan's (docs/prediction.md). Coverage counts the measured values inside each.

    python bench/prediction.py --parts ddp,strategies       # local only, a few minutes on 2 cores
    sudo python bench/prediction.py                          # all five parts, about 20 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import optimisation_loop  # noqa: E402
import strategies  # noqa: E402
import workload_examples  # noqa: E402
from ddp_scaling import add_run_arguments, bench_config, count_train_windows, run_one  # noqa: E402

from cockpit.figures.explain import PARTS as T_PARTS  # noqa: E402 - the parts of T, in their order
from cockpit.forecast import baseline_runs, interval  # noqa: E402
from cockpit.forecast.prediction import (  # noqa: E402
    Links,
    NoPrediction,
    Prediction,
    measured_links,
    merge,
    predict,
    work_for,
)
from cockpit.forecast.prediction_words import moved_term  # noqa: E402
from cockpit.study.spec import load_study  # noqa: E402
from tests.studies import to_toml  # noqa: E402 - the one writer of study TOML

PARTS = ("ddp", "strategies", "nodes", "scripts", "loop")
REPEATED_PARTS = ("ddp", "nodes", "scripts")  # the parts whose one configuration runs --repeats times
REPEAT_SUFFIX = re.compile(r", (run|study) \d+$")  # a row's repeat in its `what`: "2 workers, run 2"
TARGETS = {"ddp": 0.05, "nodes": 0.10, "strategies": 0.25, "scripts": 0.05, "loop": 0.25}  # each part's target, as bench/README.md states it
MIB = 2**20


@dataclass(frozen=True)
class Row:
    """One measured figure beside its two predictions."""

    part: str
    what: str
    figure: str
    first: interval.Interval | None
    refit: interval.Interval | None
    measured: float


def probe_links(nbytes: int, nodes: int = 1) -> Links:
    """What a preflight knows before any training: `hlm-train probe` on 2 gloo processes of this machine
    (``nodes`` 2: the figure labelled across nodes, as the test Slurm's two nodes are this machine, and that
    host named as carrying both, as the preflight finds it: PreflightReport.shared_host)."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "trainer",
           "probe", "--device", "cpu", "--bytes", str(nbytes), "--nodes", str(nodes)]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=True,
                         env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}).stdout
    probe = json.loads(out.strip().splitlines()[-1])
    links = measured_links([{"comm": {"probe": probe}, "world_size": 2}])
    named = {k: replace(v, source="hlm-train probe before training", latency_source="hlm-train probe")
             for k in ("intra_node", "inter_node") if (v := getattr(links, k)) is not None}
    return replace(links, **named, shared_host=socket.gethostname() if nodes > 1 else "")


Predictor = Callable[..., "Prediction | NoPrediction"]  # (links, config_id="") -> the prediction of one run


class Learner:
    """The runs of one part finished so far, and the prediction of the next as the cockpit would make it."""

    def __init__(self, first_links: Links, bases: Sequence[dict[str, Any]] = ()) -> None:
        self.first_links = first_links
        self.bases = list(bases)  # the 1-worker runs: what the per-step parts of the others are refit against
        self.done: list[tuple[dict[str, Any], Predictor, str]] = []

    def links(self) -> Links:
        return merge(measured_links([*self.bases, *(r for r, _, _ in self.done)]), self.first_links)

    def spread(self) -> interval.Spread:
        """error_model over the finished runs' misses against the refit model, and their repeats (by key; the
        baseline's runs one more)."""
        links = self.links()
        pairs, by_key = [], {"baseline": [baseline_runs.t_of(b) for b in self.bases]}
        runs = 1
        for result, predictor, key in self.done:
            p = predictor(links, str(result.get("config_id") or ""))  # its own runs do not refit it, as in the plan
            t = float(result["timing"]["train_time_s"])
            if isinstance(p, Prediction):
                pairs.append((p.t_s, t))
                runs = p.baseline_runs
            by_key.setdefault(key, []).append(t)
        return interval.error_model(interval.log_misses(pairs), [v for v in by_key.values() if len(v) > 1], runs)

    def before(self, predictor: Predictor
               ) -> tuple[Prediction | NoPrediction, interval.Spread]:
        return predictor(self.links()), self.spread()

    def finished(self, result: dict[str, Any], predictor: Predictor,
                 key: str) -> None:
        self.done.append((result, predictor, key))


def first_spread(bases: Sequence[dict[str, Any]]) -> interval.Spread:
    """The spread of a first prediction: the noise prior, pooled with the baseline's runs where it repeated."""
    return interval.error_model([], [[baseline_runs.t_of(b) for b in bases]])


def baselines(workdir: Path, config: dict[str, Any], steps: int, runs: int) -> list[dict[str, Any]]:
    """The 1-worker baseline run `runs` times (`base`, `base2`, ...): their result.json."""
    return [run_one(workdir / ("base" if i == 0 else f"base{i + 1}"), config, 1, steps) for i in range(runs)]


def t_rows(part: str, what: str, first: Prediction, refit: Prediction | NoPrediction, spread: interval.Spread,
           base: dict[str, Any], meas: dict[str, Any], work: float, prior: interval.Spread) -> list[Row]:
    """T and S of one run; S = the baseline's T / (T / work): its interval is T's, inverted; `prior`: the first
    prediction's spread (first_spread)."""
    t = float(meas["timing"]["train_time_s"])
    s = float(base["timing"]["train_time_s"]) / (t / work)
    r = refit if isinstance(refit, Prediction) else None
    f_own, r_own = own(prior, first), r and own(spread, r)
    return [Row(part, what, "T s", interval.interval(first.t_s, f_own), r and interval.interval(r.t_s, r_own), t),
            Row(part, what, "S", interval.interval(first.speedup, f_own, inverse=True),
                r and interval.interval(r.speedup, r_own, inverse=True), s)]


def own(spread: interval.Spread, p: Prediction) -> interval.Spread:
    """The prediction's own spread, as the plan gives it: the study's, widened by the terms it models."""
    return interval.for_terms(spread, p.t_s, p.term_sd, p.baseline_runs)


def memory_rows(part: str, what: str, first: Prediction, refit: Prediction | NoPrediction, spread: interval.Spread,
                meas: dict[str, Any], prior: interval.Spread) -> list[Row]:
    """Peak memory per rank and the model states it holds, where both were predicted and measured."""
    out = []
    for key, name in (("peak_bytes", "peak MiB"), ("model_states_bytes", "model states MiB")):
        got, pf = (meas.get("memory") or {}).get(key), (first.memory or {}).get(key)
        pr = (refit.memory or {}).get(key) if isinstance(refit, Prediction) else None
        if got and pf:
            out.append(Row(part, what, name, interval.interval(pf / MIB, own(prior, first), timed=False),
                           interval.interval(pr / MIB, own(spread, refit), timed=False)
                           if pr and isinstance(refit, Prediction) else None, got / MIB))
    return out


def missing_term(pred: Prediction, meas: dict[str, Any]) -> str:
    """The part of T whose prediction is furthest from its measurement, in seconds."""
    return furthest(pred.parts, meas.get("breakdown_s") or {})


def furthest(predicted: dict[str, float], measured: dict[str, float]) -> str:
    diffs = {p: float(measured.get(p, 0.0)) - predicted.get(p, 0.0) for p in T_PARTS}
    p = max(diffs, key=lambda k: abs(diffs[k]))
    return f"{p} {measured.get(p, 0.0):.2f} s measured, {predicted.get(p, 0.0):.2f} s predicted"


def error(pred: float, measured: float) -> str:
    return f"{pred / measured - 1:+.1%}"


# ---------------------------------------------------------------------------------------------------- the parts


def part_ddp(args: argparse.Namespace, workdir: Path, verdicts: list[str]) -> list[Row]:
    config = bench_config(args, workdir, "prediction")
    k = min(args.samples, count_train_windows(config)) // (2 * args.batch_size)
    if k < 1:
        sys.exit(f"too few training windows for one global batch of 2 x {args.batch_size}")
    bases = baselines(workdir, config, 2 * k, args.baseline_runs)
    base, prior = baseline_runs.pooled(bases), first_spread(bases)
    learner = Learner(probe_links(base["comm"]["grad_bytes"]), bases)

    def two(links: Links, config_id: str = "") -> Prediction | NoPrediction:
        return predict(base, 1, 2, 1.0, links, config_id=config_id)

    first = two(learner.first_links)
    assert isinstance(first, Prediction), first
    print(f"ddp: {2 * k * args.batch_size} windows of {args.window} tokens, model {args.layers} x {args.d_model}, "
          f"batch {args.batch_size} per process; T1 {base['timing']['train_time_s']:.2f} s "
          f"({baseline_runs.words(base) or 'one run'}); first: {first.link}")
    rows: list[Row] = []
    times: list[float] = []
    for rep in range(args.repeats):
        refit, spread = learner.before(two)
        meas = run_one(workdir / f"r{rep}", config, 2, k)
        learner.finished(meas, two, "2 workers")
        t = float(meas["timing"]["train_time_s"])
        times.append(t)
        rows += t_rows("ddp", f"2 workers, run {rep + 1}", first, refit, spread, base, meas, 1.0, prior)
        rows += memory_rows("ddp", f"2 workers, run {rep + 1}", first, refit, spread, meas, prior)
        last = refit if isinstance(refit, Prediction) else first
        print(f"  run {rep + 1}: T {t:.2f} s; first {first.t_s:.2f} ({error(first.t_s, t)}), refit {last.t_s:.2f} "
              f"({error(last.t_s, t)}); furthest part: {missing_term(last, meas)}")
    final, _ = learner.before(two)
    mean = statistics.fmean(times)
    fin = final if isinstance(final, Prediction) else first
    verdicts.append(_verdict("ddp", "the 2-worker DDP row (mean of the runs)", first.t_s, fin.t_s, mean,
                             f"refit moved {moved_term(first, fin) or 'nothing'}; the runs spread "
                             f"{(max(times) - min(times)) / mean:.0%}"))
    return rows


def part_strategies(args: argparse.Namespace, workdir: Path, verdicts: list[str]) -> list[Row]:
    config = bench_config(args, workdir, "strategies")
    k = min(args.strategy_samples, count_train_windows(config)) // (2 * args.batch_size)
    bases, runs = strategies.measure(workdir / "strategies", config, k, baseline_runs=args.baseline_runs)
    base, prior = baseline_runs.pooled(bases), first_spread(bases)
    learner = Learner(probe_links(base["comm"]["grad_bytes"]), bases)
    rows: list[Row] = []
    print(f"strategies: T1 {base['timing']['train_time_s']:.2f} s; {2 * k * args.batch_size} windows on 2 ranks")
    for s, meas in runs.items():  # in the order they ran

        def pred(links: Links, config_id: str = "", s: str = s) -> Prediction | NoPrediction:
            return predict(base, 1, 2, 1.0, links, strategy=s, config_id=config_id)

        first = pred(learner.first_links)
        if not isinstance(first, Prediction):
            print(f"  {s}: not predicted: {first.reason}")
            continue
        refit, spread = learner.before(pred)
        learner.finished(meas, pred, s)
        rows += t_rows("strategies", s, first, refit, spread, base, meas, 1.0, prior)
        rows += memory_rows("strategies", s, first, refit, spread, meas, prior)
        r = refit if isinstance(refit, Prediction) else first
        t = float(meas["timing"]["train_time_s"])
        print(f"  {s:15} T {t:.2f} s; first {first.t_s:.2f} ({error(first.t_s, t)}); refit {r.t_s:.2f} "
              f"({error(r.t_s, t)}); furthest part: {missing_term(r, meas)}")
        verdicts.append(_verdict("strategies", s, first.t_s, r.t_s, t, missing_term(r, meas)))
    return rows


def repeated_studies(part: str, what: str, make: Callable[[int], Path], repeats: int, verdicts: list[str]
                     ) -> list[Row]:
    """`repeats` studies of one 1-worker baseline (run --baseline-runs times) and one N-worker configuration, each
    run whole by `cockpit run --headless`: its N-worker T predicted first from its own pooled baseline and the
    probe before training, and refit from the studies finished before it (their baselines one more repeated
    configuration, as in a study that ran it again). ``make(rep)`` writes study `rep`'s file."""
    rows: list[Row] = []
    learner: Learner | None = None
    firsts, refits, times = [], [], []
    for rep in range(1, repeats + 1):
        path = make(rep)
        study = load_study(path)
        results = optimisation_loop.run_study(path)
        (path.parent / f"{path.stem}-results.json").write_text(json.dumps(results, indent=1))  # kept: the test Slurm's work is not
        bases = [r for r in results if int(r.get("world_size") or 1) == 1]
        base, prior = baseline_runs.pooled(bases), first_spread(bases)
        meas = next(r for r in results if int(r.get("world_size") or 1) > 1)
        cfg = meas["config"]
        nodes, gpus = int(cfg.get("nodes") or 1), int(cfg.get("gpus_per_node") or 1)
        work = work_for(study.train, nodes * gpus, study.workload.work_per_worker)
        if learner is None:
            learner = Learner(probe_links(base["comm"]["grad_bytes"], nodes=nodes))
        learner.bases.extend(bases)  # the baseline runs of every study so far: one configuration, repeated

        def pred(links: Links, config_id: str = "", base: dict[str, Any] = base, work: float = work,
                 nodes: int = nodes, gpus: int = gpus) -> Prediction | NoPrediction:
            return predict(base, nodes, gpus, work, links, config_id=config_id)

        first = pred(learner.first_links)
        assert isinstance(first, Prediction), first
        refit, spread = learner.before(pred)
        learner.finished(meas, pred, what)
        rows += t_rows(part, f"{what}, study {rep}", first, refit, spread, base, meas, work, prior)
        r = refit if isinstance(refit, Prediction) else first
        t = float(meas["timing"]["train_time_s"])
        firsts.append(first.t_s)
        refits.append(r.t_s)
        times.append(t)
        print(f"  study {rep}: {what} T {t:.2f} s (1-worker {baseline_runs.t_of(base):.2f} s, "
              f"{baseline_runs.words(base) or 'one run'}); first {first.t_s:.2f} ({error(first.t_s, t)}); refit "
              f"{r.t_s:.2f} ({error(r.t_s, t)}); furthest part: {missing_term(r, meas)}")
    # each study's N-worker row against its own baseline's prediction: the mean error over the studies
    verdicts.append(_verdict(part, f"{what} (mean over the studies)", statistics.fmean(firsts),
                             statistics.fmean(refits), statistics.fmean(times),
                             f"the studies' {what} T spread {(max(times) - min(times)) / statistics.fmean(times):.0%}"))
    return rows


def part_nodes(args: argparse.Namespace, tmp: Path, cluster: dict[str, Any], multi: str,
               verdicts: list[str]) -> list[Row]:
    def make(rep: int) -> Path:
        raw = tomllib.loads(optimisation_loop.study_toml(f"nodes{os.getpid()}-{rep}", tmp / "work", args.loop,
                                                        {**cluster, "partition": multi, "gpus_per_node": 1}))
        raw["sweep"] = {**raw["sweep"], "gpus_per_node": [1], "nodes": [1, 2]}
        raw["study"] = {**raw["study"], "baseline_runs": args.baseline_runs}
        path = tmp / f"N{rep}.toml"
        path.write_text(to_toml(raw))
        return path

    print("nodes (2 nodes x 1 on the test Slurm, each study from its own 1-node runs)")
    return repeated_studies("nodes", "2 nodes x 1", make, args.repeats, verdicts)


def part_scripts(args: argparse.Namespace, tmp: Path, verdicts: list[str]) -> list[Row]:
    rows: list[Row] = []
    for name, example, sweep, keys in workload_examples.STUDIES[:2]:  # the image and the LM example, 1 and 2 workers
        def make(rep: int, name: str = name, example: str = example, sweep: dict = sweep, keys: dict = keys
                 ) -> Path:
            (tmp / "scripts").mkdir(parents=True, exist_ok=True)
            path = workload_examples.study(tmp / "scripts", f"{name}-{rep}", example, sweep, keys)
            raw = tomllib.loads(path.read_text())
            raw["study"] = {**raw["study"], "baseline_runs": args.baseline_runs}
            path.write_text(to_toml(raw))
            return path

        print(f"scripts: {example} (examples/workloads/{example}.toml: {keys}), 2 local workers")
        rows += repeated_studies("scripts", f"{example} 2 workers", make, args.repeats, verdicts)
    return rows


def part_loop(args: argparse.Namespace, tmp: Path, cluster: dict[str, Any], verdicts: list[str]) -> list[Row]:
    (tmp / "loop").mkdir(parents=True, exist_ok=True)
    out = optimisation_loop.loop(args.loop, tmp / "loop", cluster, time.perf_counter())
    a_results, t_a = out["a_results"], out["t_a"]
    # the spread the plan gives study A: A's 2-worker runs against the refit model, and their repeats
    links = out["links"]
    pairs = []
    for r in a_results:
        if r["config"]["gpus_per_node"] != 2:
            continue
        base = next(b for b in a_results
                    if b["config"]["gpus_per_node"] == 1 and b["config"]["study"] == r["config"]["study"])
        p = predict(base, 1, 2, work_for(r["config"]["train"], 2), links)
        if isinstance(p, Prediction):
            pairs.append((p.t_s, float(r["timing"]["train_time_s"])))
    spread = interval.error_model(interval.log_misses(pairs), [t_a])
    print(f"loop: the changes' interval: {spread.basis}")
    rows: list[Row] = []
    t_med = statistics.median(t_a)
    for c in out["tried"]:
        f = c["forecast"]
        setting = " and ".join(f"{k} = {v}" for k, v in c["keys"])
        if isinstance(f, NoPrediction):
            continue
        iv = interval.interval(f.t_s, interval.for_terms(spread, f.t_s, f.term_sd))
        rows += [Row("loop", f"{setting}, run {i + 1}", "T s", None, iv, t) for i, t in enumerate(c["t"])]
        pred_gain, meas_gain = t_med - f.t_s, t_med - statistics.median(c["t"])
        advised = c["advised"] == "advised"
        # the part whose predicted seconds are furthest from the median over the change's runs
        median_parts = {p: statistics.median(float(r["breakdown_s"].get(p, 0.0)) for r in c["runs"])
                        for p in T_PARTS}
        verdicts.append(f"loop      {setting:50} gain predicted {pred_gain:+.2f} s, measured {meas_gain:+.2f} s "
                        + (f"({pred_gain / meas_gain - 1:+.0%}; target 25%: "
                           f"{'met' if abs(pred_gain / meas_gain - 1) <= TARGETS['loop'] else 'MISSED'}"
                           if advised and meas_gain else f"(not advised: {c['advised']}")
                        + f"; {furthest(f.parts, median_parts)})")
    return rows


@contextlib.contextmanager
def test_slurm() -> Iterator[tuple[dict[str, Any], str]]:
    """The test Slurm over the test sshd (bench/cluster.py): the [cluster] table and its multi-node partition."""
    from bench.cluster import test_cluster
    from tests.control.conftest import slurm_cluster_table

    with test_cluster("bench/prediction.py", "predict") as c:
        multi = c.env.get("HLM_SLURM_MULTI_PARTITION") or ""
        if not multi:
            sys.exit("the test Slurm has one node: the nodes part needs HLM_SLURM_NODES=2 (tests/infra/slurm.sh)")
        yield slurm_cluster_table(c.sshd, c.env, workdir=str(c.work), max_concurrent_jobs=1, gpus_per_node=2), multi


def _verdict(part: str, what: str, first: float, refit: float, measured: float, why: str) -> str:
    target = TARGETS[part]
    judged = abs(refit / measured - 1)
    return (f"{part:9} {what:50} first {error(first, measured)}, refit {error(refit, measured)} "
            f"(target {target:.0%}: {'met' if judged <= target else 'MISSED'}; {why})")


# ---------------------------------------------------------------------------------------------------- the report


def coverage(rows: Sequence[Row]) -> list[str]:
    """Measured values inside each kind of interval, by figure and in all."""
    out = []
    for which in ("first", "refit"):
        by_figure: dict[str, list[bool]] = {}
        for row in rows:
            iv = getattr(row, which)
            if iv is not None:
                by_figure.setdefault(row.figure, []).append(iv.contains(row.measured))
        hits = [h for v in by_figure.values() for h in v]
        if hits:
            parts = ", ".join(f"{f} {sum(v)}/{len(v)}" for f, v in by_figure.items())
            out.append(f"{which:5} 90% intervals: {sum(hits)} of {len(hits)} measured values inside "
                       f"({sum(hits) / len(hits):.0%}; {parts})")
    return out


def sharpness(rows: Sequence[Row]) -> list[str]:
    """How wide the intervals are against the machine's own noise: the median half-width of each kind of T
    interval (half its span over its value), beside the repeats' spread: max - min over the mean of the measured
    T of each configuration run more than once (the ddp row, the 2-node studies, each script's studies), the
    median over those. That
    is the spread as the cockpit itself states it (an advised gain "within the spread of T over repeated runs");
    the sample sd over the mean is printed beside it. Target: the refit's median half-width at most twice that spread, with coverage of 90% or more
    (coverage)."""
    repeats: dict[str, list[float]] = {}
    for row in rows:
        if row.figure == "T s" and row.part in REPEATED_PARTS:  # one configuration, run again or studied again
            configuration = f"{row.part} {REPEAT_SUFFIX.sub('', row.what)}"  # ddp 2 workers, scripts lm 2 workers
            repeats.setdefault(configuration, []).append(row.measured)
    runs = {part: v for part, v in repeats.items() if len(v) >= 2}
    spreads = {part: (max(v) - min(v)) / statistics.fmean(v) for part, v in runs.items()}
    sds = {part: statistics.stdev(v) / statistics.fmean(v) for part, v in runs.items()}
    out = []
    if spreads:
        spread = statistics.median(spreads.values())
        out.append(f"the repeats' spread: {spread:.1%} (max - min over the mean of T; "
                   + ", ".join(f"{p} {s:.1%} of {len(runs[p])} runs" for p, s in spreads.items())
                   + f"); their sd over the mean {statistics.median(sds.values()):.1%} ("
                   + ", ".join(f"{p} {s:.1%}" for p, s in sds.items()) + ")")
    else:
        spread = None
        out.append("the repeats' spread: no part ran more than once (--repeats 2 or more)")
    for which in ("first", "refit"):
        halves = [(iv.high - iv.low) / 2 / iv.value for row in rows if row.figure == "T s"
                  and (iv := getattr(row, which)) is not None and iv.value > 0]
        if not halves:
            continue
        half = statistics.median(halves)
        verdict = "" if spread is None or which == "first" else \
            f"; target <= 2 x the spread = {2 * spread:.1%}: {'met' if half <= 2 * spread else 'MISSED'}"
        out.append(f"{which:5} T intervals: median half-width +-{half:.1%} of the prediction over {len(halves)}"
                   f"{verdict}")
    return out


def print_rows(rows: Sequence[Row]) -> None:
    print(f"\n{'part':10} {'run':44} {'figure':17} {'measured':>9}   {'first, 90% interval':28} {'':3} "
          f"{'refit before it ran, 90% interval':36}")

    def cell(iv: interval.Interval | None, measured: float) -> tuple[str, str]:
        if iv is None:
            return "-", ""
        return f"{iv.value:.2f} [{iv.low:.2f}-{iv.high:.2f}]", ("in" if iv.contains(measured) else "OUT")

    for row in rows:
        f, fi = cell(row.first, row.measured)
        r, ri = cell(row.refit, row.measured)
        print(f"{row.part:10} {row.what[:44]:44} {row.figure:17} {row.measured:9.2f}   {f:28} {fi:3} {r:28} {ri}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(p)
    p.add_argument("--samples", type=int, default=1152, help="samples of the ddp part's runs")
    p.add_argument("--strategy-samples", type=int, default=256, help="samples of the strategies part's runs")
    p.add_argument("--repeats", type=int, default=3, help="runs of the ddp row and 2-node studies")
    p.add_argument("--batch-probe", action="store_true",
                   help="the loop's study A: its baseline probes compute at twice its batch (train.batch_probe)")
    p.add_argument("--baseline-runs", type=int, default=3,
                   help="runs of each baseline, predicted from their mean ([study].baseline_runs)")
    p.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)}")
    p.add_argument("--workdir", type=Path, default=None)
    args = p.parse_args()
    args.loop = argparse.Namespace(layers=4, d_model=128, window=64, batch_size=8, steps=60, keep=False, slurm=True,
                                   batch_probe=args.batch_probe)
    parts = [x.strip() for x in args.parts.split(",") if x.strip()]
    if unknown := sorted(set(parts) - set(PARTS)):
        sys.exit(f"--parts: unknown part(s) {', '.join(unknown)}; expected some of {', '.join(PARTS)}")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="hlm-predict-"))
    workdir.mkdir(parents=True, exist_ok=True)
    t0, load0 = time.perf_counter(), optimisation_loop.load_average()
    print(f"load average before: {load0} on {os.cpu_count()} cores; parts: {', '.join(parts)}")
    rows: list[Row] = []
    verdicts: list[str] = []
    if "ddp" in parts:
        rows += part_ddp(args, workdir / "ddp", verdicts)
    if "strategies" in parts:
        rows += part_strategies(args, workdir, verdicts)
    if "scripts" in parts:
        rows += part_scripts(args, workdir, verdicts)
    if "nodes" in parts or "loop" in parts:
        with test_slurm() as (cluster, multi):
            if "nodes" in parts:
                rows += part_nodes(args, workdir, cluster, multi, verdicts)
            if "loop" in parts:
                rows += part_loop(args, workdir, cluster, verdicts)
    print_rows(rows)
    print("\ntargets (the error of the refit prediction made before the run; first shown beside it):")
    for line in verdicts:
        print(f"  {line}")
    print("\ncoverage (S is T's interval inverted over the same measured baseline, so it is inside exactly when T is):")
    for line in coverage(rows):
        print(f"  {line}")
    print("\nsharpness (how wide the T intervals are against the repeats' own spread):")
    for line in sharpness(rows):
        print(f"  {line}")
    print(f"\nwall {time.perf_counter() - t0:.0f} s; load average before {load0}, after "
          f"{optimisation_loop.load_average()}; run directories: {workdir}")


if __name__ == "__main__":
    main()
