"""Predict a configuration's T before node-hours are spent on it, from its group's finished baseline.

Pure functions over result.json dicts; docs/prediction.md has the formulas worked through. In short, with
the baseline's per-step times (its five parts / its steps) and a run of N workers doing `work` times the
baseline's samples in steps_N = steps_1 x work / N steps:

  data wait, compute, optimizer, other per step: as the baseline's (each worker has the baseline's cores
      or GPU, the same per-worker batch and the same loader)
  all-reduce per step:  t_ar = 2(N-1)/N x G / busbw + 2(N-1) x buckets x latency     (ring all-reduce)
  exposed per step:     max(t_ar / buckets, t_ar - backward)   with backward = 2/3 of compute per step
                        (DDP overlaps every bucket but the last with the rest of backward; on CPU
                        with one core per worker nothing overlaps: exposed = t_ar); where the study's
                        runs measured the overlap in the baseline's setting, max(t_ar x (1 - hidden
                        share), t_ar - backward) instead
  T_N = steps_N x (the per-step parts + exposed all-reduce); S = T1 / (T_N / work); node-hours =
      (T_N + the baseline's costs outside T) x nodes / 3600

G is the gradient bytes and busbw the bus bandwidth of the link the run spans (within a node, or across
nodes when nodes > 1): measured by the trainer's start-up probe in a finished run of the study, else the
site profile's figure. That is DDP; each strategy (docs/strategies.md) has its own collectives per step
(STRATEGY_COMM: zero1 adds a broadcast of the updated shards, fsdp all-gathers the parameters twice and
reduce-scatters the gradients), and its own memory per rank (`memory_per_rank`: what it shards divided by N). What the model leaves out (workers slowing each other down on shared cores or memory
bandwidth, stragglers) is what the measured run's explanation then shows. This module returns numbers; their
words (the memory warning, a group's recommendation line) are cockpit.forecast.prediction_words.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from cockpit.figures.explain import FIXED_COSTS, PARTS
from cockpit.forecast import baseline_runs, batch_fit, straggler, term_doubt
from cockpit.forecast.rank_memory import memory_per_rank
from runcontract import ddp_buckets
from runcontract.axes import STRATEGY_SHARDS

BACKWARD_SHARE = 2.0 / 3.0  # backward is ~2x the forward's FLOPs
BATCH_PARTS = ("data_wait", "compute")  # the parts of a step that grow with the samples in it
REFIT_PARTS = ("data_wait", "compute", "comm", "optimizer", "other")  # each refit from the finished runs
# Per optimizer step, the collectives each strategy issues: (kind, bytes moved in units of the model's bytes G,
# before the ring's (N-1)/N). ddp: the gradients all-reduced (2: reduce-scatter + all-gather inside the ring);
# zero1 (torch's ZeroRedundancyOptimizer): the same, then each rank broadcasts its updated share (G in all);
# fsdp: parameters all-gathered before forward and again before backward, gradients reduce-scattered (3G, the
# ZeRO paper's 1.5x of DDP); fsdp_noreshard keeps the forward's gathered parameters for backward (2G).
STRATEGY_COMM: dict[str, tuple[tuple[str, float], ...]] = {
    "ddp": (("all_reduce", 2.0),),
    "zero1": (("all_reduce", 2.0), ("broadcast", 1.0)),
    "fsdp": (("all_gather", 2.0), ("reduce_scatter", 1.0)),
    "fsdp_noreshard": (("all_gather", 1.0), ("reduce_scatter", 1.0)),
}


DEFAULT_LATENCY_S = 20e-6  # per ring step, where neither a probe nor the site profile gives one (docs/prediction.md)


@dataclass(frozen=True)
class Link:
    """Bus bandwidth (bytes/s) and per-step latency of one kind of link, and where each figure came from
    (`latency_s` None: none known, the prediction then prices DEFAULT_LATENCY_S and says so)."""

    busbw: float
    latency_s: float | None = None
    source: str = ""
    latency_source: str = ""
    # the start-up probe's alpha-beta fit per collective kind, by the ranks it was measured on: {2: {"all_reduce":
    # (alpha_s, beta_bytes_per_s), ...}} (runcontract/probe.py; medians over the study's runs); empty for older probes
    fits: dict[int, dict[str, tuple[float, float]]] = field(default_factory=dict)

    def fit(self, kind: str, ranks: int) -> tuple[float, float] | None:
        """(alpha s per call, beta bytes/s) of `kind` measured on exactly `ranks` ranks, else None."""
        found = self.fits.get(ranks, {}).get(kind)
        return found if found is not None and found[1] > 0 and math.isfinite(found[1]) else None

    def priced_latency(self) -> tuple[float, str]:
        """The latency a prediction prices per ring step, and where it comes from, in words."""
        if self.latency_s is not None:
            return self.latency_s, f"latency {self.latency_s * 1e6:.3g} us {self.latency_source or 'as given'}"
        return DEFAULT_LATENCY_S, f"latency {DEFAULT_LATENCY_S * 1e6:g} us by default (none measured or in the profile)"


@dataclass(frozen=True)
class Overlap:
    """The share of DDP's all-reduce that backward hid (result.json `comm.overlap.hidden_share`), the median
    over the study's runs in one setting (`overlap_setting`), and how many runs measured it."""

    hidden_share: float
    runs: int

    def words(self) -> str:
        return f"overlap {self.hidden_share:.0%} hidden, measured by {self.runs} run(s)"


@dataclass(frozen=True)
class Links:
    intra_node: Link | None = None
    inter_node: Link | None = None
    # compute slowdown of N ranks on one node over one alone, by N (the start-up probe's `contention`, medians over
    # the study's runs; runcontract/probe.py): empty where no run measured it (older runs: no slowdown priced)
    contention: dict[int, float] = field(default_factory=dict)
    # the all-reduce's measured overlap by the setting it was measured in (overlap_setting): empty where no
    # multi-worker DDP run timed it (the prediction then assumes strategy_comm's rule)
    overlap: dict[str, Overlap] = field(default_factory=dict)
    # each finished N-worker run's per-step parts over the model's (residuals): empty where none has finished
    residuals: tuple[Residual, ...] = ()
    # a host that carried several nodes of one allocation (the preflight's ranks, or a finished multi-node run's
    # hostnames): those nodes' ranks share its cores, as one node's do; "" where each node was a host of its own
    shared_host: str = ""

    def for_nodes(self, nodes: int) -> Link | None:
        return self.inter_node if nodes > 1 else self.intra_node

    def part_factors(self, strategy: str, setting: str, across_nodes: bool, exclude: str = ""
                     ) -> tuple[dict[str, float], int]:
        """The median measured / modelled ratio per part over the finished runs that shard what `strategy` shards,
        in the same setting (overlap_setting), but those of the configuration `exclude` (comm: only runs whose
        collectives crossed nodes as this one's will, or did not); and how many runs."""
        shards = STRATEGY_SHARDS.get(strategy, ())
        chosen = [r for r in self.residuals
                  if r.shards == shards and r.setting == setting and (not exclude or r.config_id != exclude)]
        factors = {p: statistics.median(values) for p in REFIT_PARTS
                   if (values := [r.ratios[p] for r in chosen
                                  if p in r.ratios and (p != "comm" or r.across_nodes == across_nodes)])}
        return factors, len(chosen)


@dataclass(frozen=True)
class Residual:
    """What one finished N-worker run measured per step over what the model gives it from its baseline, by part
    (measured / modelled): the per-step parts a prediction refits (docs/prediction.md, "A prediction that learns")."""

    config_id: str
    shards: tuple[str, ...]  # what its strategy shards (runcontract.axes.STRATEGY_SHARDS): () for DDP
    setting: str  # overlap_setting: a CPU's ratios never stand in for a GPU's
    ratios: dict[str, float]
    across_nodes: bool = False  # its collectives crossed nodes: its comm ratio stands for such runs only


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
    # exposed seconds per collective kind over T, and the wait for the slower rank (straggler.TERM)
    comm_by_kind: dict[str, float] = field(default_factory=dict)
    memory: dict[str, float] | None = None  # memory_per_rank; None when the baseline recorded no memory
    # each term the model priced rather than measured, its standard deviation in seconds over T (term_doubt):
    # what cockpit.forecast.interval.for_terms widens this prediction's interval by
    term_sd: dict[str, float] = field(default_factory=dict)
    # the runs the baseline's T and parts are the mean of (cockpit.forecast.baseline_runs): its noise over that many
    baseline_runs: int = 1


@dataclass(frozen=True)
class NoPrediction:
    """Why a configuration cannot be predicted yet."""

    reason: str


def overlap_setting(result: Mapping[str, Any]) -> str | None:
    """Where a run's overlap was measured, as a prediction looks it up: a GPU, or CPU workers with one core each
    (gloo's thread then shares backward's core) or several; None for any other device."""
    device = result.get("device")
    if device == "cpu":
        return "cpu, one core per worker" if cores_per_worker(result) == 1 else "cpu, several cores per worker"
    return "cuda" if device == "cuda" else None


def cores_per_worker(result: Mapping[str, Any]) -> int:
    """The run's cpus_per_task (0: not recorded)."""
    return int((result.get("config") or {}).get("cpus_per_task") or 0)


def recorded_overlap(result: Mapping[str, Any]) -> dict[str, float | None]:
    """result.json `comm.overlap`; for an older trainer's result the same formula over its `comm.by_kind`
    (whose all-reduce busy time summed each bucket's: more than the time in flight where buckets queued)."""
    comm = result.get("comm") or {}
    return comm.get("overlap") or ddp_buckets.overlap(comm.get("by_kind") or {})


def measured_links(results: Iterable[dict[str, Any]]) -> Links:
    """The median bus bandwidth and latency per link kind over the start-up probes of finished runs (a probe
    of an older trainer has no latency: None, as a profile without one), the median contention slowdown per
    ranks on a node, the median overlap per setting over the runs of more than one worker, and each such run's
    per-step parts over the model's (residuals)."""
    results = list(results)
    found: dict[str, list[float]] = {"intra_node": [], "inter_node": []}
    latency: dict[str, list[float]] = {"intra_node": [], "inter_node": []}
    fits: dict[str, dict[tuple[int, str], list[tuple[float, float]]]] = {"intra_node": {}, "inter_node": {}}
    slowdowns: dict[int, list[float]] = {}
    shares: dict[str, list[float]] = {}
    for r in results:
        share, setting = recorded_overlap(r).get("hidden_share"), overlap_setting(r)
        if int(r.get("world_size") or 1) > 1 and isinstance(share, int | float) and setting is not None:
            shares.setdefault(setting, []).append(float(share))
        probe = ((r.get("comm") or {}).get("probe") or {})
        contention = probe.get("contention") or {}
        slow, ranks = contention.get("slowdown"), contention.get("ranks_on_node")
        if isinstance(slow, int | float) and math.isfinite(slow) and slow > 0 and isinstance(ranks, int):
            slowdowns.setdefault(ranks, []).append(float(slow))
        for kind, link in (probe.get("links") or {}).items():
            bw, lat = link.get("busbw_bytes_per_s"), link.get("latency_s")
            if kind in found and isinstance(bw, int | float) and bw > 0:
                found[kind].append(float(bw))
                if isinstance(lat, int | float) and lat >= 0:
                    latency[kind].append(float(lat))
                for call, fit in (link.get("collectives") or {}).items():
                    alpha, beta = fit.get("alpha_s"), fit.get("beta_bytes_per_s")
                    if isinstance(alpha, int | float) and isinstance(beta, int | float) and beta > 0:
                        fits[kind].setdefault((int(link.get("ranks") or 0), call), []).append((float(alpha), float(beta)))

    def medians(k: str) -> dict[int, dict[str, tuple[float, float]]]:
        out: dict[int, dict[str, tuple[float, float]]] = {}
        for (ranks, call), values in fits[k].items():
            out.setdefault(ranks, {})[call] = (statistics.median(a for a, _ in values),
                                               statistics.median(b for _, b in values))
        return out

    kinds = {k: Link(statistics.median(v), statistics.median(latency[k]) if latency[k] else None,
                     f"measured by {len(v)} run(s) of this study",
                     f"measured by {len(latency[k])} run(s)' probes" if latency[k] else "", medians(k))
             for k, v in found.items() if v}
    links = Links(kinds.get("intra_node"), kinds.get("inter_node"),
                  contention={n: statistics.median(v) for n, v in slowdowns.items()},
                  overlap={k: Overlap(statistics.median(v), len(v)) for k, v in shares.items()},
                  shared_host=next((h for r in results if (h := shared_host(r))), ""))
    return replace(links, residuals=residuals(results, links))


def shared_host(result: Mapping[str, Any]) -> str:
    """The host a multi-node run's ranks all reported (result.json `hostnames`) where it ran on fewer hosts than
    nodes (nodes a scheduler placed on one machine); else ""."""
    hosts = [str(h) for h in result.get("hostnames") or []]
    nodes = int((result.get("config") or {}).get("nodes") or result.get("nodes") or 1)
    return hosts[0] if hosts and nodes > 1 and len(set(hosts)) < nodes else ""


def residuals(results: list[dict[str, Any]], links: Links) -> tuple[Residual, ...]:
    """Each finished N-worker run's per-step parts over those the model gives it from its group's baseline (the
    1-worker run of the same group id; of several, their mean, as the plan predicts from: baseline_runs.pooled)
    with `links` (the link, contention and overlap measured), at the same samples per step: what nothing else the
    model measures priced."""
    def completed(r: dict[str, Any]) -> bool:
        return r.get("status", "completed") == "completed" and bool((r.get("timing") or {}).get("steps"))

    bases: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        if completed(r) and int(r.get("world_size") or 1) == 1 and r.get("group_id"):
            bases.setdefault(str(r["group_id"]), []).append(r)
    pooled = {g: baseline_runs.pooled(v) for g, v in bases.items()}
    out = []
    for r in results:
        base = pooled.get(str(r.get("group_id")))
        if base is None or not completed(r) or int(r.get("world_size") or 1) < 2 or samples_per_step(r) != \
                samples_per_step(base):
            continue
        cfg = r.get("config") or {}
        nodes, gpus = int(cfg.get("nodes") or 1), int(cfg.get("gpus_per_node") or 1)
        strategy = str(cfg.get("strategy") or "ddp")
        model = predict(base, nodes, gpus, 1.0, links, strategy=strategy, micro_batches=samples_per_step(r)[1],
                        buckets=int((r.get("comm") or {}).get("buckets") or 0) or None)
        if isinstance(model, NoPrediction):
            continue
        model_steps = float(base["timing"]["steps"]) / (nodes * gpus)  # work 1: the baseline's samples
        steps, parts = float(r["timing"]["steps"]), r.get("breakdown_s") or {}
        ratios = {p: float(parts[p]) / steps / (model.parts[p] / model_steps) for p in REFIT_PARTS
                  if model.parts.get(p, 0.0) > 0 and isinstance(parts.get(p), int | float)}
        out.append(Residual(str(r.get("config_id") or ""), STRATEGY_SHARDS.get(strategy, ()),
                            overlap_setting(r) or "", ratios, nodes > 1))
    return tuple(out)


def samples_per_step(result: Mapping[str, Any]) -> tuple[Any, Any]:
    """(batch_size, grad_accum) of a run: residuals compare runs at the same samples per worker and step."""
    cfg = result.get("config") or {}
    return cfg.get("batch_size"), (cfg.get("train") or {}).get("grad_accum") or 1


def per_step_parts(base: Mapping[str, Any], batch_factor: float, slowdown: float,
                   compute_factor: float | None = None) -> dict[str, float]:
    """The model's parts of one step from the baseline's: data wait and compute x the batch factor (compute x
    `compute_factor` instead where given: cockpit.forecast.batch_fit), compute x the node's contention slowdown;
    comm 0 (priced by strategy_comm)."""
    timing, parts_1 = base.get("timing") or {}, base.get("breakdown_s") or {}
    steps_1 = float(timing.get("steps") or 0)
    per_step = {p: float(parts_1.get(p, 0.0)) / steps_1 if steps_1 else 0.0 for p in PARTS}
    for scaled in BATCH_PARTS:
        per_step[scaled] *= batch_factor
    if compute_factor is not None:
        per_step["compute"] *= compute_factor / batch_factor if batch_factor else 0.0
    per_step["compute"] *= slowdown  # the node's workers slowing each other, as the start-up probe measured it
    per_step["comm"] = 0.0
    return per_step


def preflight_links(busbw: dict[str, float], digest: str, host: str = "") -> Links:
    """The bus bandwidth the study's preflight measured per link kind (bytes/s): better than the profile's
    nominal figures, replaced by the runs' own start-up probes once there are some; `host`: the one host it found
    carrying several nodes (PreflightReport.shared_host)."""
    def link(kind: str) -> Link | None:
        bw = busbw.get(kind)
        return Link(float(bw), None, f"measured by the preflight ({digest})") if bw and bw > 0 else None

    return Links(link("intra_node"), link("inter_node"), shared_host=host)


def site_links(site: Any) -> Links:
    """The site profile's link figures (GB/s, microseconds), where it has them."""
    latency = getattr(site, "allreduce_latency_us", 0.0) * 1e-6
    name = getattr(site, "name", "site")

    def link(gbs: float, what: str) -> Link | None:
        return Link(gbs * 1e9, latency or None, f"{name} profile {what}",
                    f"from the {name} profile's allreduce_latency_us" if latency else "") if gbs and gbs > 0 else None

    return Links(link(getattr(site, "intra_node_busbw_gbs", 0.0), "intra_node_busbw_gbs"),
                 link(getattr(site, "inter_node_busbw_gbs", 0.0), "inter_node_busbw_gbs"))


def merge(first: Links, fallback: Links) -> Links:
    """Measured figures where there are some, the profile's elsewhere: a measured bandwidth without a
    measured latency (the preflight's, an older probe's) takes the fallback's latency."""
    def one(a: Link | None, b: Link | None) -> Link | None:
        if a is not None and b is not None and a.latency_s is None and b.latency_s is not None:
            return replace(a, latency_s=b.latency_s, latency_source=b.latency_source)
        return a or b

    return Links(one(first.intra_node, fallback.intra_node), one(first.inter_node, fallback.inter_node),
                 {**fallback.contention, **first.contention}, {**fallback.overlap, **first.overlap},
                 first.residuals or fallback.residuals, first.shared_host or fallback.shared_host)


def strategy_comm(strategy: str, n: int, grad: float, link: Link, *, buckets: int, groups: int, compute: float,
                  on_cpu: bool, micro_batches: float = 1.0, cores: int = 0,
                  overlap: Overlap | None = None, tensors: int = 0) -> dict[str, float]:
    """Exposed seconds per step of each collective the strategy issues on n workers (STRATEGY_COMM).

    all-reduce: t = 2(N-1)/N G / busbw + 2(N-1) x buckets x latency, exposed as `exposed_all_reduce` says
    (``overlap``: the study's measured one, else the rule). broadcast (zero1, after the local optimizer step):
    all of it. all-gather / reduce-scatter (fsdp): t = f (N-1)/N G / busbw + (N-1) x groups x latency per round;
    on CPU all of it (gloo runs them on the training thread, as measured), on GPU FSDP prefetches one block
    ahead, so max(t / groups, t - compute). Where the link carries the start-up probe's alpha-beta fit of that
    collective measured on n ranks (Link.fits), t = rounds x (calls x alpha + G / beta) instead (calls: buckets,
    the broadcasts, or groups; rounds: FSDP's all-gathers), exposed by the same rules. ZeRO-1 broadcasts parameter
    by parameter: `tensors` calls where the baseline recorded its trainable tensors (result.json
    `model.parameter_tensors`), each (N-1) x latency without a fit; else one per rank (n with a fit, one without). With `micro_batches`
    (grad_accum) per step, DDP and ZeRO-1 synchronise on the last one only, while FSDP gathers the parameters
    for every one of them (only its reduce-scatter waits for the last)."""
    out: dict[str, float] = {}
    ring = (n - 1) / n
    latency, _ = link.priced_latency()
    for kind, factor in STRATEGY_COMM.get(strategy, STRATEGY_COMM["ddp"]):
        fit = link.fit(kind, n)
        if fit is not None:  # measured on n ranks: calls x alpha + the bytes the calls move / beta
            alpha, beta = fit
            calls, rounds = {"all_reduce": (buckets, 1.0), "broadcast": (tensors or n, 1.0),
                             "all_gather": (groups, factor), "reduce_scatter": (groups, 1.0)}[kind]
            t = rounds * (calls * alpha + grad / beta) * (micro_batches if kind == "all_gather" else 1.0)
            if kind == "all_reduce":
                out[kind] = exposed_all_reduce(t, buckets, compute, on_cpu=on_cpu, cores=cores, overlap=overlap)
            else:
                out[kind] = t if on_cpu or kind == "broadcast" else max(t / max(1, calls), t - compute)
            continue
        if kind == "all_reduce":
            t = factor * ring * grad / link.busbw + 2 * (n - 1) * buckets * latency
            out[kind] = exposed_all_reduce(t, buckets, compute, on_cpu=on_cpu, cores=cores, overlap=overlap)
        elif kind == "broadcast":
            out[kind] = factor * ring * grad / link.busbw + max(1, tensors) * (n - 1) * latency
        else:
            rounds = factor if kind == "all_gather" else 1.0
            t = factor * ring * grad / link.busbw + rounds * (n - 1) * groups * latency
            t *= micro_batches if kind == "all_gather" else 1.0
            out[kind] = t if on_cpu else max(t / groups, t - compute)
    return out


def exposed_all_reduce(t: float, buckets: int, compute: float, *, on_cpu: bool, cores: int,
                       overlap: Overlap | None) -> float:
    """Seconds per step DDP's all-reduce of `t` seconds leaves exposed after backward (2/3 of `compute`).

    Measured (``overlap``, the study's runs in this setting): t x (1 - hidden share), and never less than what
    backward cannot hide, t - backward (a share measured where the all-reduce was short beside backward).
    Else the rule: max(t / buckets, t - backward) (DDP overlaps every bucket but the last with the rest of
    backward); on CPU with one core per worker (``cores``) all of it: gloo's thread runs each bucket on the core
    backward runs on, so nothing overlaps and smaller buckets only add latency (measured: bench/README.md,
    the optimisation loop)."""
    backward = BACKWARD_SHARE * compute
    if overlap is not None:
        return max(t * (1.0 - overlap.hidden_share), t - backward)
    return t if on_cpu and cores == 1 else max(t / max(1, buckets), t - backward)


def predict(base: dict[str, Any], nodes: int, gpus_per_node: int, work: float, links: Links, *,
            batch_factor: float = 1.0, buckets: int | None = None, strategy: str = "ddp",
            micro_batches: float = 1.0, config_id: str = "",
            compute_line: batch_fit.ComputeLine | None = None) -> Prediction | NoPrediction:
    """T of the configuration with `nodes` x `gpus_per_node` workers doing `work` x the baseline's samples.

    ``batch_factor``: samples per worker and optimizer step over the baseline's (batch_size x grad_accum):
    data wait and compute per step scale with it, the optimizer, other loop time and the all-reduce per step
    do not, and there are that many times fewer steps. ``buckets``: DDP's gradient buckets, when not the
    baseline's (a what-if of bucket_cap_mb; cockpit.forecast.advice.buckets_for). ``strategy``: the configuration's
    (its baseline, one worker, ran the plain model whatever the strategy). ``micro_batches``: its grad_accum
    (FSDP gathers the parameters for each micro-batch). ``config_id``: the configuration predicted, whose own runs
    then do not refit its per-step parts (its miss against the refit stays a miss, not its own measurement).
    ``compute_line``: compute per step against samples per step over the study's baselines at several batch sizes
    (batch_fit.fit), pricing compute at another batch than the baseline's; without it compute per sample is constant."""
    timing = base.get("timing") or {}
    steps_1 = timing.get("steps")
    parts_1 = base.get("breakdown_s") or {}
    t1 = timing.get("train_time_s")
    if not steps_1 or not t1 or not parts_1:
        return NoPrediction("the baseline's result.json has no steps, T or breakdown")
    n = nodes * gpus_per_node
    steps_n = steps_1 * work / (n * batch_factor)
    one_host = nodes > 1 and bool(links.shared_host)  # the nodes' ranks share that host's cores
    cpu_ranks_share = base.get("device") == "cpu" and (gpus_per_node > 1 or one_host)
    probed = links.contention.get(gpus_per_node, 1.0) if gpus_per_node > 1 else 1.0
    compute_f, batch_words = batch_fit.compute_factor(compute_line, base, batch_factor)
    per_step = per_step_parts(base, batch_factor, term_doubt.centre_slowdown(probed, cpu_ranks_share), compute_f)
    factors, refit_runs = (links.part_factors(strategy, overlap_setting(base) or "", nodes > 1, config_id)
                           if n > 1 else ({}, 0))
    for part, factor in factors.items():
        per_step[part] *= factor
    by_kind: dict[str, float] = {}
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
        # a run that records none (a script without DDP): DDP's own count at its default cap
        buckets = max(1, int(buckets or comm.get("buckets") or ddp_buckets.expected_buckets(float(grad), None)))
        # FSDP on a GPU in bf16 gathers and reduces bf16 (trainer.parallelism.parallel's MixedPrecisionPolicy)
        half = strategy in ("fsdp", "fsdp_noreshard") and base.get("device") == "cuda" and \
            (base.get("config") or {}).get("precision") == "bf16"
        overlap = links.overlap.get(overlap_setting(base) or "")
        by_kind = strategy_comm(strategy, n, float(grad) * (0.5 if half else 1.0), link, buckets=buckets,
                                groups=int((base.get("model") or {}).get("layers") or 1) + 1,
                                compute=per_step["compute"], on_cpu=base.get("device") == "cpu",
                                micro_batches=micro_batches, cores=cores_per_worker(base), overlap=overlap,
                                tensors=int((base.get("model") or {}).get("parameter_tensors") or 0))
        sd = straggler.step_sd(base)
        if sd:  # rank 0 waits in the collective for the slowest rank (cockpit.forecast.straggler)
            by_kind[straggler.TERM] = straggler.wait_per_step(sd, n)
        by_kind = {k: v * factors.get("comm", 1.0) for k, v in by_kind.items()}  # as the finished runs measured
        per_step["comm"] = sum(by_kind.values())
        fitted = f"; alpha-beta per call measured on {n} ranks" if link.fits.get(n) else ""
        shared = term_doubt.contention_words(probed, gpus_per_node, cpu_ranks_share)
        if one_host:
            shared += f"; the {nodes} nodes are one host ({links.shared_host}): their ranks share its cores"
        hidden = f"; {overlap.words()}" if overlap is not None and "all_reduce" in by_kind else ""
        hidden += (f"; {straggler.words(sd, n, straggler.source(base))}" if sd else "") + (f"; {batch_words}" if batch_words else "")
        refit = (f"; per-step parts x the {refit_runs} finished run(s) sharding "
                 f"{', '.join(STRATEGY_SHARDS.get(strategy, ())) or 'nothing'} measured: "
                 + ", ".join(f"{p} x{f:.2f}" for p, f in factors.items())) if factors else ""
        pooled = f"; {baseline_runs.words(base)}" if baseline_runs.count(base) > 1 else ""
        link_name += f" ({link.source}; {link.priced_latency()[1]}{fitted}{shared}{hidden}{refit}{pooled})"
    parts = {p: v * steps_n for p, v in per_step.items()}
    t_n = sum(parts.values())
    term_sd = term_doubt.terms_sd(parts, {k: v * steps_n for k, v in by_kind.items()}, factors, refit_runs,
                                  probed=probed, batch_factor=batch_factor if compute_line is None else 1.0,
                                  cpu_ranks_share=cpu_ranks_share,
                                  wraps=n > 1 and "params" in STRATEGY_SHARDS.get(strategy, ()))
    t_same = t_n / work
    s = t1 / t_same if t_same > 0 else math.nan
    fixed = sum(float(timing.get(c) or 0.0) for c in FIXED_COSTS)
    return Prediction(workers=n, nodes=nodes, work=work, t_s=t_n, t_same_work_s=t_same, speedup=s,
                      efficiency=s / n, node_hours=(t_n + fixed) * nodes / 3600.0, parts=parts,
                      link="" if n == 1 else link_name, comm_by_kind={k: v * steps_n for k, v in by_kind.items()},
                      memory=memory_per_rank(base, n, strategy), term_sd=term_sd,
                      baseline_runs=baseline_runs.count(base))


def work_for(train: dict[str, Any], workers: int, per_worker: bool | None = None) -> float:
    """Samples of an N-worker run over the baseline's: N with a fixed number of steps (the per-worker batch
    is fixed), 1 with a fixed number of epochs (strong scaling); ``per_worker``, where the workload says it
    (Workload.work_per_worker: a script's [workload].work), decides instead of [train]."""
    if per_worker is None:
        per_worker = train.get("steps") is not None
    return float(workers) if per_worker else 1.0
