"""Predict a configuration's T before node-hours are spent on it, from its group's finished baseline.

Pure functions over result.json dicts; docs/prediction.md has the formulas worked through. In short, with
the baseline's per-step times (its five parts / its steps) and a run of N workers doing `work` times the
baseline's samples in steps_N = steps_1 x work / N steps:

  data wait, compute, optimizer, other per step: as the baseline's (each worker has the baseline's cores
      or GPU, the same per-worker batch and the same loader)
  all-reduce per step:  t_ar = 2(N-1)/N x G / busbw + 2(N-1) x buckets x latency     (ring all-reduce)
  exposed per step:     max(t_ar / buckets, t_ar - backward)   with backward = 2/3 of compute per step
                        (DDP overlaps every bucket but the last with the rest of backward)
  T_N = steps_N x (the per-step parts + exposed all-reduce); S = T1 / (T_N / work); node-hours =
      (T_N + the baseline's costs outside T) x nodes / 3600

G is the gradient bytes and busbw the bus bandwidth of the link the run spans (within a node, or across
nodes when nodes > 1): measured by the trainer's start-up probe in a finished run of the study, else the
site profile's figure. What the model leaves out (workers slowing each other down on shared cores or memory
bandwidth, stragglers) is what the measured run's explanation then shows.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cockpit import labels
from cockpit.explain import FIXED_COSTS, PARTS

BACKWARD_SHARE = 2.0 / 3.0  # backward is ~2x the forward's FLOPs
BATCH_PARTS = ("data_wait", "compute")  # the parts of a step that grow with the samples in it


@dataclass(frozen=True)
class Link:
    """Bus bandwidth (bytes/s) and per-step latency of one kind of link, and where the figure came from."""

    busbw: float
    latency_s: float = 0.0
    source: str = ""


@dataclass(frozen=True)
class Links:
    intra_node: Link | None = None
    inter_node: Link | None = None

    def for_nodes(self, nodes: int) -> Link | None:
        return self.inter_node if nodes > 1 else self.intra_node


@dataclass(frozen=True)
class Prediction:
    """Predicted T (at the run's own work and at the baseline's), speedup, efficiency, node-hours."""

    workers: int
    nodes: int
    work: float
    t_s: float
    t_same_work_s: float
    speedup: float
    efficiency: float
    node_hours: float
    parts: dict[str, float] = field(default_factory=dict)
    link: str = ""


@dataclass(frozen=True)
class NoPrediction:
    """Why a configuration cannot be predicted yet."""

    reason: str


def measured_links(results: Iterable[dict[str, Any]]) -> Links:
    """The median bus bandwidth per link kind over the start-up probes of finished runs."""
    found: dict[str, list[float]] = {"intra_node": [], "inter_node": []}
    for r in results:
        probe = ((r.get("comm") or {}).get("probe") or {})
        for kind, link in (probe.get("links") or {}).items():
            bw = link.get("busbw_bytes_per_s")
            if kind in found and isinstance(bw, int | float) and bw > 0:
                found[kind].append(float(bw))
    return Links(**{k: Link(statistics.median(v), 0.0, f"measured by {len(v)} run(s) of this study")
                    for k, v in found.items() if v})


def preflight_links(busbw: dict[str, float], digest: str) -> Links:
    """The bus bandwidth the study's preflight measured per link kind (bytes/s): better than the profile's
    nominal figures, replaced by the runs' own start-up probes once there are some."""
    def link(kind: str) -> Link | None:
        bw = busbw.get(kind)
        return Link(float(bw), 0.0, f"measured by the preflight ({digest})") if bw and bw > 0 else None

    return Links(link("intra_node"), link("inter_node"))


def site_links(site: Any) -> Links:
    """The site profile's link figures (GB/s, microseconds), where it has them."""
    latency = getattr(site, "allreduce_latency_us", 0.0) * 1e-6
    name = getattr(site, "name", "site")

    def link(gbs: float, what: str) -> Link | None:
        return Link(gbs * 1e9, latency, f"{name} profile {what}") if gbs and gbs > 0 else None

    return Links(link(getattr(site, "intra_node_busbw_gbs", 0.0), "intra_node_busbw_gbs"),
                 link(getattr(site, "inter_node_busbw_gbs", 0.0), "inter_node_busbw_gbs"))


def merge(first: Links, fallback: Links) -> Links:
    """Measured figures where there are some, the profile's elsewhere."""
    return Links(first.intra_node or fallback.intra_node, first.inter_node or fallback.inter_node)


def predict(base: dict[str, Any], nodes: int, gpus_per_node: int, work: float, links: Links, *,
            batch_factor: float = 1.0, buckets: int | None = None) -> Prediction | NoPrediction:
    """T of the configuration with `nodes` x `gpus_per_node` workers doing `work` x the baseline's samples.

    ``batch_factor``: samples per worker and optimizer step over the baseline's (batch_size x grad_accum):
    data wait and compute per step scale with it, the optimizer, other loop time and the all-reduce per step
    do not, and there are that many times fewer steps. ``buckets``: DDP's gradient buckets, when not the
    baseline's (a what-if of bucket_cap_mb; cockpit.advice.buckets_for)."""
    timing = base.get("timing") or {}
    steps_1 = timing.get("steps")
    parts_1 = base.get("breakdown_s") or {}
    t1 = timing.get("train_time_s")
    if not steps_1 or not t1 or not parts_1:
        return NoPrediction("the baseline's result.json has no steps, T or breakdown")
    n = nodes * gpus_per_node
    steps_n = steps_1 * work / (n * batch_factor)
    per_step = {p: float(parts_1.get(p, 0.0)) / steps_1 for p in PARTS}
    for scaled in BATCH_PARTS:
        per_step[scaled] *= batch_factor
    per_step["comm"] = 0.0
    link_name = "inter_node" if nodes > 1 else "intra_node"
    if n > 1:
        link = links.for_nodes(nodes)
        comm = base.get("comm") or {}
        grad = comm.get("grad_bytes")
        if link is None:
            return NoPrediction(f"no {link_name.replace('_', '-')} bandwidth yet: finish a multi-worker run of "
                                f"this study, or set {link_name}_busbw_gbs in the site profile")
        if not grad:
            return NoPrediction("the baseline's result.json has no comm.grad_bytes (an older trainer)")
        buckets = max(1, int(buckets or comm.get("buckets") or 1))
        t_ar = 2 * (n - 1) / n * grad / link.busbw + 2 * (n - 1) * buckets * link.latency_s
        backward = BACKWARD_SHARE * per_step["compute"]
        per_step["comm"] = max(t_ar / buckets, t_ar - backward)
        link_name += f" ({link.source})"
    parts = {p: v * steps_n for p, v in per_step.items()}
    t_n = sum(parts.values())
    t_same = t_n / work
    s = t1 / t_same if t_same > 0 else math.nan
    fixed = sum(float(timing.get(c) or 0.0) for c in FIXED_COSTS)
    return Prediction(workers=n, nodes=nodes, work=work, t_s=t_n, t_same_work_s=t_same, speedup=s,
                      efficiency=s / n, node_hours=(t_n + fixed) * nodes / 3600.0, parts=parts,
                      link="" if n == 1 else link_name)


def work_for(train: dict[str, Any], workers: int) -> float:
    """Samples of an N-worker run over the baseline's: N with a fixed number of steps (the per-worker batch
    is fixed), 1 with a fixed number of epochs (strong scaling)."""
    return float(workers) if train.get("steps") is not None else 1.0


def recommendation(base_t: float, predictions: list[Prediction], device: str = "gpu") -> str:
    """One line per worker count: speedup for how many times the baseline's GPU-hours (worker-hours for a
    CPU study, cockpit.labels), and the fastest."""
    ok = sorted((p for p in predictions if p.workers > 1 and p.speedup == p.speedup), key=lambda p: p.workers)
    if not ok:
        return ""
    hours = f"{labels.worker_word(device, 1)}-hours"
    pieces = [f"{p.workers} workers ({p.nodes} node{'s' if p.nodes > 1 else ''}): {p.speedup:.2f}x for "
              f"{p.workers / p.speedup:.2f}x the {hours}" for p in ok]
    best = min(ok, key=lambda p: p.t_same_work_s)
    if best.t_same_work_s >= base_t:
        return "; ".join(pieces) + " - no configuration is predicted faster than the baseline"
    return "; ".join(pieces) + f" - best time-to-result: {best.workers} workers"
