"""Scaling analysis: pure functions over a DataFrame of results (one row per finished run).

Formulas 1-3 of arXiv 2503.21033 plus the Karp-Flatt serial fraction:
  speedup    S = T1 / TN
  efficiency E = S / N
  overhead   O = TN - T1 / N
  Karp-Flatt e = (1/S - 1/N) / (1 - 1/N)      (N > 1)
where N = nodes x gpus_per_node workers and T1 is the training time of the group's 1-node 1-GPU run.

These formulas assume every run of a group does the same work (strong scaling: fixed epochs, the data split
across workers, as in the published study). A study with a fixed number of *steps* and a per-GPU batch
gives an N-worker run N times the samples; then TN is first scaled to the baseline's samples
(TN x samples1 / samplesN) so speedup still means "how much faster the same work got done".
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from cockpit.spec import AXES, SCALE_AXES, Configuration

if TYPE_CHECKING:
    import pandas as pd

BREAKDOWN_PARTS = ("data_wait", "compute", "comm", "optimizer", "other")
COMM_BOUND = 0.25
INPUT_BOUND = 0.15


def speedup(t1: float, tn: float) -> float:
    return t1 / tn if tn > 0 else math.nan


def efficiency(s: float, n: int) -> float:
    return s / n if n > 0 else math.nan


def overhead(t1: float, tn: float, n: int) -> float:
    return tn - t1 / n


def karp_flatt(s: float, n: int) -> float:
    """Experimentally determined serial fraction; undefined for one worker."""
    if n <= 1 or not s or math.isnan(s):
        return math.nan
    return (1.0 / s - 1.0 / n) / (1.0 - 1.0 / n)


def results_frame(results: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """One row per run from result.json dicts (the run-directory contract)."""
    import pandas as pd

    rows = []
    for res in results:
        cfg = res.get("config", {})
        values = {axis: cfg.get(axis, res.get(axis)) for axis in AXES}
        timing = res.get("timing", {})
        breakdown = res.get("breakdown_s", {}) or {}
        throughput = res.get("throughput", {}) or {}
        row = {
            **values,
            "config_id": res.get("config_id"),
            "status": res.get("status", "completed"),
            "train_time_s": timing.get("train_time_s", math.nan),
            "samples": timing.get("samples", math.nan),
            "tokens_per_s": throughput.get("tokens_per_s", math.nan),
            "samples_per_s": throughput.get("samples_per_s", math.nan),
        }
        for part in BREAKDOWN_PARTS:
            row[f"{part}_s"] = breakdown.get(part, math.nan)
        rows.append(row)
    columns = [*AXES, "config_id", "status", "train_time_s", "samples", "tokens_per_s", "samples_per_s"]
    columns += [f"{p}_s" for p in BREAKDOWN_PARTS]
    return pd.DataFrame(rows, columns=columns)


def scaling_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per configuration: median T over repeats, speedup, efficiency, overhead, Karp-Flatt, shares, verdict.

    Failed runs are excluded from the maths and listed with note "failed run excluded"; a configuration
    whose group has no finished 1x1 baseline gets NaN with the reason in `note`.
    """
    import pandas as pd

    group_axes = [a for a in AXES if a not in SCALE_AXES]
    ok = df[df["status"] == "completed"]
    failed = df[df["status"] != "completed"]
    numeric = ["train_time_s", "samples", "tokens_per_s", "samples_per_s", *[f"{p}_s" for p in BREAKDOWN_PARTS]]
    agg = ok.groupby(list(AXES), dropna=False)[numeric].median().reset_index() if len(ok) else ok[list(AXES) + numeric]
    counts = ok.groupby(list(AXES), dropna=False).size().rename("runs").reset_index() if len(ok) else None
    table = agg.merge(counts, on=list(AXES)) if counts is not None else agg.assign(runs=0)
    records = []
    baselines = {
        tuple(row[a] for a in group_axes): (row["train_time_s"], row["samples"])
        for _, row in table.iterrows()
        if row["nodes"] == 1 and row["gpus_per_node"] == 1
    }
    for _, row in table.iterrows():
        n = int(row["nodes"]) * int(row["gpus_per_node"])
        tn = float(row["train_time_s"])
        t1, samples1 = baselines.get(tuple(row[a] for a in group_axes), (None, math.nan))
        rec = {**row.to_dict(), "workers": n, "baseline": n == 1, "status": "completed"}
        cfg = Configuration(**{a: _plain(row[a]) for a in AXES})
        rec["config_id"] = cfg.config_id
        rec["group_id"] = cfg.group_id
        if t1 is None or math.isnan(t1):
            rec.update(t1_s=math.nan, speedup=math.nan, efficiency=math.nan, overhead_s=math.nan, karp_flatt=math.nan)
            rec["note"] = "no baseline: the group's 1 node x 1 GPU run has not finished"
        else:
            work = work_ratio(row["samples"], samples1)
            tn_same_work = tn / work
            s = speedup(t1, tn_same_work)
            rec.update(
                t1_s=t1,
                work_ratio=work,
                speedup=s,
                efficiency=efficiency(s, n),
                overhead_s=overhead(t1, tn_same_work, n),
                karp_flatt=karp_flatt(s, n),
                note="" if work == 1.0 else f"T scaled to the baseline's samples ({work:g}x the work)",
            )
        rec.update(breakdown_shares(row))
        rec["verdict"] = bottleneck_verdict(rec)
        records.append(rec)
    for _, row in failed.iterrows():
        cfg = Configuration(**{a: _plain(row[a]) for a in AXES})
        records.append(
            {
                **{a: _plain(row[a]) for a in AXES},
                "config_id": cfg.config_id,
                "group_id": cfg.group_id,
                "workers": cfg.workers,
                "baseline": cfg.is_baseline,
                "status": row["status"],
                "note": "failed run excluded",
                "verdict": "",
            }
        )
    out = pd.DataFrame(records)
    if len(out):
        out = out.sort_values([*group_axes, "nodes", "gpus_per_node"], kind="stable").reset_index(drop=True)
    return out


def work_ratio(samples_n: float, samples_1: float) -> float:
    """How many times the baseline's samples a run processed (1 when unknown or equal)."""
    if any(x is None or math.isnan(x) or x <= 0 for x in (samples_n, samples_1)):
        return 1.0
    return float(samples_n) / float(samples_1)


def breakdown_shares(row: Any) -> dict[str, float]:
    """Shares of the accounted step time spent in each part (NaN when the run reported no breakdown)."""
    parts = {p: float(row.get(f"{p}_s", math.nan)) for p in BREAKDOWN_PARTS}
    total = sum(v for v in parts.values() if not math.isnan(v))
    if total <= 0:
        return {f"{p}_share": math.nan for p in BREAKDOWN_PARTS}
    return {f"{p}_share": (v / total if not math.isnan(v) else math.nan) for p, v in parts.items()}


def bottleneck_verdict(rec: dict[str, Any]) -> str:
    """One line naming what limits this run, from its time shares."""
    comm = rec.get("comm_share", math.nan)
    data = rec.get("data_wait_share", math.nan)
    if all(math.isnan(x) for x in (comm, data)):
        return "no time breakdown reported"
    comm = 0.0 if math.isnan(comm) else comm
    data = 0.0 if math.isnan(data) else data
    if comm >= COMM_BOUND and comm >= data:
        return f"communication-bound: {comm:.0%} of step time in all-reduce"
    if data >= INPUT_BOUND:
        return f"input-bound: {data:.0%} of step time waiting for data; add CPU workers"
    return f"compute-bound: {1 - comm - data:.0%} of step time in compute, optimizer and the rest of the loop"


def summary_by_workers(table: pd.DataFrame) -> pd.DataFrame:
    """Mean speedup and efficiency per worker count across groups (the study's headline figures)."""
    ok = table.dropna(subset=["speedup"]) if "speedup" in table else table
    return ok.groupby("workers")[["speedup", "efficiency", "overhead_s"]].mean().reset_index()


def _plain(value: Any) -> Any:
    """numpy scalars -> Python scalars, so configuration ids hash identically everywhere."""
    return value.item() if hasattr(value, "item") else value
