"""Scaling analysis: the one function (`analyse`) that every number a user sees comes from.

Formulas 1-3 of arXiv 2503.21033 plus the Karp-Flatt serial fraction:
  speedup    S = T1 / TN'
  efficiency E = S / N
  overhead   O = TN' - T1 / N
  Karp-Flatt e = (1/S - 1/N) / (1 - 1/N)      (N > 1)
where N = nodes x gpus_per_node workers, T1 is the training time of the group's 1-node 1-GPU run and
TN' = TN / work is the run's T at the baseline's work (work = samplesN / samples1; 1 for strong scaling,
where every run of a group processes the same samples). A study with a fixed number of steps and a
per-GPU batch gives an N-worker run N times the samples: TN' is then what the same work took.

The overhead is split into seconds per part of the step time by cockpit.figures.explain. Pure Python (no pandas),
so the terminal UI, the report, the CSV and the headless lines all call the same code on the result files.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable
from dataclasses import replace
from typing import IO, TYPE_CHECKING, Any

from cockpit.figures import devices, explain, labels
from cockpit.figures.energy import energy_figures
from cockpit.figures.host_bound import host_bound
from cockpit.forecast import advice, baseline_runs, interval, prediction
from cockpit.forecast.advice.host_bound import HostAdvice, advise_host_bound
from cockpit.study.spec import AXES, SCALE_AXES, Configuration
from cockpit.workloads import WORKLOADS, kind_of_config, workload_class
from cockpit.workloads.base import key_words
from cockpit.workloads.hlm.quality import quality_of
from runcontract.axes import AXIS_KEYS
from runcontract.contract import COMM_KINDS, MEMORY_FIGURES
from runcontract.judge import startup_note

if TYPE_CHECKING:
    import pandas as pd

BREAKDOWN_PARTS = explain.PARTS
GROUP_AXES = tuple(a for a in AXES if a not in SCALE_AXES)
NAN = math.nan


def speedup(t1: float, tn: float) -> float:
    return t1 / tn if tn > 0 else NAN


def efficiency(s: float, n: int) -> float:
    return s / n if n > 0 else NAN


def overhead(t1: float, tn: float, n: int) -> float:
    return tn - t1 / n


def karp_flatt(s: float, n: int) -> float:
    """Experimentally determined serial fraction; undefined for one worker."""
    if n <= 1 or not s or math.isnan(s):
        return NAN
    return (1.0 / s - 1.0 / n) / (1.0 - 1.0 / n)


def work_ratio(samples_n: float, samples_1: float) -> float:
    """How many times the baseline's samples a run processed (1 when unknown or equal)."""
    if any(x is None or math.isnan(x) or x <= 0 for x in (samples_n, samples_1)):
        return 1.0
    return float(samples_n) / float(samples_1)


def run_row(result: dict[str, Any]) -> dict[str, Any]:
    """One result.json flattened: axes, T and its parts, throughput, fixed costs, the per-rank breakdown."""
    cfg = result.get("config") or {}
    timing = result.get("timing") or {}
    parts = result.get("breakdown_s") or {}
    throughput = result.get("throughput") or {}
    # a result written before a later axis existed ran at that axis's default (runcontract.axes.shows)
    row: dict[str, Any] = {k.name: _plain(cfg.get(k.name, result.get(k.name, None if k.axis and k.axis.core
                                                                     else k.default))) for k in AXIS_KEYS}
    row["keys"] = key_words(cfg.get("keys") or {})  # a script workload's own keys: part of its identity
    row["workload"] = kind_of_config(cfg)
    taker = workload_class(cfg)
    missing = [a for a in (taker.axes if taker is not None else AXES) if row[a] is None]  # the axes its workload takes
    row.update(
        config_id=result.get("config_id"),
        group_id=result.get("group_id"),
        status=str(result.get("status", "completed")) if not missing else "invalid",
        note=f"result.json has no config.{', config.'.join(missing)}" if missing else "",
        device=result.get("device"),
        train_time_s=_float(timing.get("train_time_s")),
        samples=_float(timing.get("samples")),
        tokens_per_s=_float(throughput.get("tokens_per_s")),
        samples_per_s=_float(throughput.get("samples_per_s")),
    )
    for part in BREAKDOWN_PARTS:
        row[f"{part}_s"] = _float(parts.get(part))
    for cost in explain.FIXED_COSTS:
        row[cost] = _float(timing.get(cost))
    by_kind = (result.get("comm") or {}).get("by_kind") or {}
    for kind in COMM_KINDS:  # the comm part's exposed seconds by collective (they add up to comm_s)
        row[f"comm_{kind}_s"] = _float((by_kind.get(kind) or {}).get("exposed_s", 0.0 if by_kind else None))
    memory = result.get("memory") or {}
    for figure in MEMORY_FIGURES:  # rank 0's; the peak is the largest any rank reached
        row[f"memory_{figure}"] = _float(memory.get(figure))
    peaks = [m.get("peak_bytes") for m in memory.get("by_rank") or [] if isinstance(m.get("peak_bytes"), int | float)]
    row["memory_peak_bytes"] = float(max(peaks)) if peaks else row["memory_peak_bytes"]
    row["ranks"] = explain.ranks_of(result)
    row["startup_note"] = startup_note(result)  # T a small share of the wall time: the run measured its start-up
    row.update(gpu_figures(result, row["compute_s"]), **energy_figures(result))
    row["result"] = result  # the prediction reads the baseline's comm and steps
    q = quality_of(result)
    row.update(quality_detail=q, quality_metric=q.metric if q else None, quality=q.value if q else NAN,
               quality_inputs=(q.problem or q.inputs) if q else "")
    return row


def gpu_figures(result: dict[str, Any], compute_s: float) -> dict[str, Any]:
    """What the GPU itself says of a run: its NVML name and busy share over T, MFU (cockpit.figures.devices),
    the trace's GPU figures where one was read (`gpu_trace`) and the host-bound verdict with its seconds
    (cockpit.figures.host_bound); blank with the reason on CPU."""
    m = devices.mfu(result)
    use: dict[str, Any] = result["gpu_use"] if isinstance(result.get("gpu_use"), dict) else {}
    trace: dict[str, Any] = result["gpu_trace"] if isinstance(result.get("gpu_trace"), dict) else {}
    steps = trace.get("steps") or 0
    hb = host_bound(result, compute_s)
    return {"gpu_name": devices.gpu_name(result) or "", "gpu_busy_pct": _float(use.get("busy_pct")),
            "mfu": m.mfu, "achieved_tflops": m.achieved_tflops, "peak_tflops": m.peak_tflops, "mfu_device": m.device,
            "mfu_note": m.note,
            "trace_gpu_busy_s": _float(trace.get("gpu_busy_s")), "trace_steps_s": _float(trace.get("steps_s")),
            "trace_kernels_per_step": trace["kernels"] / steps if steps else NAN,
            "host_bound_s": hb.seconds, "host_bound_share": hb.share, "host_bound_evidence": hb.evidence,
            "host_bound_note": hb.words(compute_s)}


def analyse(results: Iterable[dict[str, Any]], links: prediction.Links | None = None) -> list[dict[str, Any]]:
    """The rows of :func:`analysed` without the spread."""
    return analysed(results, links)[0]


def analysed(results: Iterable[dict[str, Any]], links: prediction.Links | None = None
             ) -> tuple[list[dict[str, Any]], interval.Spread]:
    """Per configuration, from result.json dicts: T, T at the baseline's work, speedup, efficiency,
    overhead, Karp-Flatt, the overhead's split into seconds, fixed costs, the straggler, the verdict, and
    the model's quality beside the baseline's (cockpit.workloads.hlm.quality).

    Repeats of a configuration are represented by the run with the median T (the lower middle one for
    an even count), so every figure of a row comes from one real run and adds up. Failed runs are listed
    with their status and excluded from the maths; a group without a finished 1x1 run gets NaN and a note.
    Each N-worker row also carries what cockpit.forecast.prediction predicted from its baseline alone (`links`: the
    site's figures; the study's own start-up probes take precedence) and the error of that prediction. The spread
    returned beside the rows is the study's error model over those errors and the repeats (with_intervals): the
    one a results-only view puts around anything it predicts (cockpit compare).
    """
    results = list(results)
    links = prediction.merge(prediction.measured_links(results), links or prediction.Links())
    rows = [run_row(r) for r in results]
    recorded = advice.Recorded(results)
    done: dict[tuple, list[dict[str, Any]]] = {}
    failed: list[dict[str, Any]] = []
    for row in rows:
        if row["status"] == "completed" and row["train_time_s"] == row["train_time_s"]:
            done.setdefault(_same_config(row), []).append(row)
        else:
            failed.append(row)
    # run_ids: the config ids of every run (a repeated baseline's runs 2 to k have their own)
    chosen = {key: _median_run(runs) | {"runs": len(runs), "run_ids": tuple(dict.fromkeys(r["config_id"] for r in runs))}
              for key, runs in done.items()}
    # each group's baseline row, and the result its N-worker rows are predicted from: the mean of a repeated
    # baseline's runs (cockpit.forecast.baseline_runs)
    baselines = {_same_group(chosen[key]): (chosen[key], baseline_runs.pooled([r["result"] for r in runs]))
                 for key, runs in done.items() if chosen[key]["nodes"] == 1 and chosen[key]["gpus_per_node"] == 1}
    out = [_analysed(r, baselines.get(_same_group(r)), links, recorded) for r in chosen.values()]
    spread = with_intervals(out, [[r["train_time_s"] for r in runs] for runs in done.values() if len(runs) > 1])
    with_advice_intervals(out, spread)
    out += [_failed(r) for r in failed if _same_config(r) not in done]
    out.sort(key=lambda r: (*(_sortable(r[a]) for a in GROUP_AXES), _sortable(r["nodes"]),
                            _sortable(r["gpus_per_node"])))
    return out, spread


def with_intervals(rows: list[dict[str, Any]], repeats: list[list[float]]) -> interval.Spread:
    """Each predicted figure's 90% interval beside it (`predicted_t_same_work_s_low`/`_high`,
    `predicted_speedup_low`/`_high`, and `prediction_interval`: what it rests on), from the study's own spread:
    these rows' misses and the repeats' spread, through the plan's one error model (cockpit.forecast.interval)."""
    misses = [math.log1p(r["prediction_error"]) for r in rows
              if isinstance(r.get("prediction_error"), float) and math.isfinite(r["prediction_error"])]
    spread = interval.error_model(misses, repeats)
    for r in rows:
        t, s = r.get("predicted_t_same_work_s"), r.get("predicted_speedup")
        if not (isinstance(t, float) and math.isfinite(t) and isinstance(s, float) and math.isfinite(s)):
            continue
        own = interval.for_terms(spread, t, r.get("prediction_terms") or {}, r.get("prediction_baseline_runs") or 1)
        t_iv, s_iv = interval.interval(t, own), interval.interval(s, own, inverse=True)
        r.update(predicted_t_same_work_s_low=t_iv.low, predicted_t_same_work_s_high=t_iv.high,
                 predicted_speedup_low=s_iv.low, predicted_speedup_high=s_iv.high, prediction_interval=own.basis)
    return spread


def _same_config(row: dict[str, Any]) -> tuple:
    """What makes runs repeats of one configuration: every axis and the workload's own keys."""
    return (*(row[a] for a in AXES), row["keys"])


def _same_group(row: dict[str, Any]) -> tuple:
    """What makes runs share a baseline: all but the scale."""
    return (*(row[a] for a in GROUP_AXES), row["keys"])


AXIS_DEFAULTS = {k.name: k.default for k in AXIS_KEYS}


def _identity(run: dict[str, Any]) -> dict[str, Any]:
    """config_id and group_id as the result names them (else derived from its axes), workers, baseline."""
    kind = WORKLOADS.get(run["workload"])
    if any(run[a] is None for a in (kind.axes if kind is not None else AXES)):
        return {"config_id": run["config_id"] or "?", "group_id": run["group_id"] or "?", "workers": None,
                "baseline": False}
    keys = ((run.get("result") or {}).get("config") or {}).get("keys") or {}
    # an axis its workload does not take stands at its default, as in the study's matrix
    cfg = Configuration(**{a: AXIS_DEFAULTS[a] if run[a] is None else run[a] for a in AXES}, keys=tuple(keys.items()))
    return {"config_id": run["config_id"] or cfg.config_id, "group_id": run["group_id"] or cfg.group_id,
            "workers": cfg.workers, "baseline": cfg.is_baseline}


def _analysed(run: dict[str, Any], baseline: tuple[dict[str, Any], dict[str, Any]] | None, links: prediction.Links,
               recorded: advice.Recorded) -> dict[str, Any]:
    """One row; ``baseline``: its group's baseline row and the result its prediction is made from (the mean of a
    repeated baseline's runs)."""
    base, predicted_from = baseline if baseline is not None else (None, None)
    rec = {**run, **_identity(run)}
    n = rec["workers"]
    rec["fixed_s"] = sum(run[c] for c in explain.FIXED_COSTS if run[c] == run[c])
    total = sum(run[f"{p}_s"] for p in BREAKDOWN_PARTS if run[f"{p}_s"] == run[f"{p}_s"])
    for part in BREAKDOWN_PARTS:
        rec[f"{part}_share"] = run[f"{part}_s"] / total if total > 0 else NAN
    slow = explain.straggler(run["ranks"])
    rec.update(straggler_rank=slow[0] if slow else None, straggler_host=slow[1] if slow else None,
               straggler_excess_s=slow[2] if slow else NAN)
    if base is None or predicted_from is None:
        rec.update(t1_s=NAN, work_ratio=NAN, t_same_work_s=run["train_time_s"], t1_over_n_s=NAN, speedup=NAN,
                   efficiency=NAN, overhead_s=NAN, karp_flatt=NAN, compute_ratio=NAN,
                   note=f"no baseline: the group's {labels.baseline_label(labels.device_of([run['device']]))} "
                        "run has not finished",
                   **{f"loss_{t}_s": NAN for t in explain.TERMS})
    else:
        work = work_ratio(run["samples"], base["samples"])
        t1, tn = base["train_time_s"], run["train_time_s"] / work
        s = speedup(t1, tn)
        rec.update(t1_s=t1, work_ratio=work, t_same_work_s=tn, t1_over_n_s=t1 / n, speedup=s,
                   efficiency=efficiency(s, n), overhead_s=overhead(t1, tn, n), karp_flatt=karp_flatt(s, n),
                   compute_ratio=explain.compute_ratio(run, base, n, work),
                   note="" if work == 1.0 else f"T scaled to the baseline's samples ({work:g}x the work)",
                   **explain.attribution(run, base, n, work), **_predicted(run, predicted_from, work, links))
    baseline_quality = base["quality_detail"] if base is not None else None
    rec.update(quality_1=baseline_quality.value if baseline_quality else NAN,
               quality_change=rec["quality_detail"].change(baseline_quality) if rec["quality_detail"] else NAN)
    rec["verdict"], rec["explanation"] = explain.verdicts({**rec, "status": "completed"})
    rec["advice_items"] = advice.advise(rec, recorded, links) if base is not None else []
    rec["host_advice"] = advise_host_bound(rec)  # a host-bound run's changes, the priced one first
    rec["advice"] = ""  # said once the study's spread gives each predicted T its interval (with_advice_intervals)
    return rec


def advice_words(rec: dict[str, Any]) -> str:
    """The one advice text every view prints: the loss terms' advice, then the host-bound run's priced change."""
    host = rec["host_advice"][0].text() if rec["host_advice"] else ""
    return "; ".join(t for t in (advice.advice_text(rec["advice_items"]), host) if t)


def with_advice_intervals(rows: list[dict[str, Any]], spread: interval.Spread) -> None:
    """Each advised change's predicted T with its 90% interval (the study's spread widened by the forecast's own
    terms: interval.for_terms), its alternatives' too, and each row's advice text said with them."""
    def t90(item: advice.Advice | HostAdvice) -> tuple[float, float] | None:
        t = item.predicted_t_s
        if not (math.isfinite(t) and t > 0):
            return None
        iv = interval.interval(t, interval.for_terms(spread, t, item.term_sd()))
        return iv.low, iv.high

    def dressed(item: Any) -> Any:  # an Advice or a HostAdvice
        more = {"alternatives": tuple(dressed(a) for a in item.alternatives)} if isinstance(item, advice.Advice) else {}
        return replace(item, t90=t90(item), **more)

    for r in rows:
        r["advice_items"] = [dressed(a) for a in r["advice_items"]]
        r["host_advice"] = [dressed(h) for h in r["host_advice"]]
        r["advice"] = advice_words(r)


def _predicted(run: dict[str, Any], base: dict[str, Any], work: float, links: prediction.Links) -> dict[str, Any]:
    """What the scaling model predicted for this run from its baseline (`base`: the result, or a repeated
    baseline's pooled runs), and how far off it was."""
    if run["nodes"] == 1 and run["gpus_per_node"] == 1:
        return {}
    p = prediction.predict(base, run["nodes"], run["gpus_per_node"], work, links,
                           strategy=run["strategy"], config_id=str(run.get("config_id") or ""))
    if isinstance(p, prediction.NoPrediction):
        return {"predicted_t_same_work_s": NAN, "predicted_speedup": NAN, "prediction_error": NAN,
                "prediction_note": p.reason}
    measured = run["train_time_s"] / work
    return {"predicted_t_same_work_s": p.t_same_work_s, "predicted_speedup": p.speedup,
            "predicted_comm_s": p.parts["comm"], "prediction_error": measured / p.t_same_work_s - 1.0,
            "predicted_peak_bytes": p.memory["peak_bytes"] if p.memory else NAN,
            "prediction_note": f"link: {p.link}", "prediction_baseline_runs": p.baseline_runs,
            "prediction_terms": {k: v / work for k, v in p.term_sd.items()}}  # at the baseline's work


def _failed(run: dict[str, Any]) -> dict[str, Any]:
    note = run["note"] or "failed run excluded"
    return {**run, **_identity(run), "runs": 0, "note": note, "verdict": "",
            "explanation": f"{run['status']}: excluded from the analysis ({note})"}


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ordered = sorted(runs, key=lambda r: r["train_time_s"])
    return ordered[(len(ordered) - 1) // 2]


def by_config(rows: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each row by the config id of every run it stands for (a repeated baseline's runs: its median run's row)."""
    return {cid: r for r in rows for cid in r.get("run_ids") or (r["config_id"],)}


class AnalysisCache:
    """by_config(analyse(results)) per study, recomputed only when its results change (the caller's stamp:
    StudyStore.results_stamp). The snapshot asks on every poll; a study is analysed once per new result.
    Nothing derived is stored, so an older store (which kept an `analysis` table) shows the same numbers."""

    def __init__(self) -> None:
        self._rows: dict[Hashable, tuple[Hashable, dict[str, dict[str, Any]]]] = {}

    def rows(self, key: Hashable, stamp: Hashable,
             results: Callable[[], Iterable[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
        cached = self._rows.get(key)
        if cached is None or cached[0] != stamp:
            cached = self._rows[key] = (stamp, by_config(analyse(results())))
        return cached[1]


# columns of scaling.csv: everything of a row but the per-rank list, which gets its own table, and the
# objects the run detail reads
CSV_SKIP = ("ranks", "result", "quality_detail", "advice_items", "host_advice", "prediction_terms", "run_ids")


def scaling_table(results: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """`analyse` as a DataFrame (the report's CSV; one column per overhead term)."""
    import pandas as pd

    rows = [{k: v for k, v in r.items() if k not in CSV_SKIP} for r in analyse(results)]
    return pd.DataFrame(rows)


def csv_columns(rows: Iterable[dict[str, Any]]) -> list[str]:
    """The CSV's columns: every key of the rows but CSV_SKIP, in the order the rows name them when taken in
    the analysis' order (so the same rows give the same columns however they are filtered or sorted)."""
    ordered = sorted(rows, key=lambda r: (*(_sortable(r.get(a)) for a in GROUP_AXES), _sortable(r.get("nodes")),
                                          _sortable(r.get("gpus_per_node"))))
    return list(dict.fromkeys(k for r in ordered for k in r if k not in CSV_SKIP))


def scaling_csv_rows(rows: Iterable[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """(columns, one list of cells per row in the order given) of the scaling CSV: a missing or NaN value
    is an empty cell, everything else its full-precision value."""
    rows = list(rows)
    columns = csv_columns(rows)
    return columns, [[_csv_cell(r.get(c)) for c in columns] for r in rows]


def write_scaling_csv(rows: Iterable[dict[str, Any]], file: IO[str]) -> int:
    """`analyse` rows as CSV, in the order given: the report's scaling.csv and the TUI's export (`e`) both
    write through this function. Returns the row count."""
    import csv

    columns, body = scaling_csv_rows(rows)
    writer = csv.writer(file, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(body)
    return len(body)


def _csv_cell(value: Any) -> Any:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return value


def summary_by_workers(rows: Iterable[dict[str, Any]], pending: Iterable[dict[str, Any]] = ()
                       ) -> list[dict[str, Any]]:
    """Median speedup, efficiency and overhead per worker count over the groups that have both the run and
    its baseline, with how many groups that is of those with a configuration of that many workers
    (`pending`: the configurations without a result; counted by cockpit.figures.series.group_counts, as the
    figures' notes are) and the values the medians are of (the study's headline figures, checkable by
    hand)."""
    import statistics

    from cockpit.figures.series import group_counts, usable

    rows = list(rows)
    counts = group_counts(rows, pending)
    by_n: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        if usable(r):
            by_n.setdefault(r["workers"], []).append(r)
    return [
        {"workers": n, "groups": counts[n][0], "of_groups": counts[n][1],
         **{k: statistics.median(r[k] for r in rs) for k in ("speedup", "efficiency", "overhead_s")},
         "speedups": sorted(r["speedup"] for r in rs), "overheads_s": sorted(r["overhead_s"] for r in rs)}
        for n, rs in sorted(by_n.items())
    ]


def comm_words(row: dict[str, Any]) -> str:
    """`all-gather 0.25 + reduce-scatter 0.08`: a row's comm part as exposed seconds per collective (its
    comm_<kind>_s, which add up to comm_s); "" where the result recorded none."""
    kinds = [(k, row.get(f"comm_{k}_s")) for k in COMM_KINDS]
    return " + ".join(f"{k.replace('_', '-')} {v:.2f}" for k, v in kinds if isinstance(v, float) and v == v and v > 0)


def memory_words(row: dict[str, Any]) -> str:
    """`model states 1.2 MiB, peak 350 MiB per rank` from a row's memory_* figures; "" where none."""
    states, peak = row.get("memory_model_states_bytes"), row.get("memory_peak_bytes")
    if not isinstance(states, float) or states != states:
        return ""
    peak_words = f", peak {peak / 2**20:.3g} MiB" if isinstance(peak, float) and peak == peak else ""
    return f"model states {states / 2**20:.3g} MiB{peak_words} per rank"


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return NAN


def _sortable(value: Any) -> tuple[int, float, str]:
    """Numbers in numeric order before text in text order (window 128 before 1024; None last)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (0, float(value), "")
    return (1, 0.0, "" if value is None else str(value))


def _plain(value: Any) -> Any:
    """numpy scalars -> Python scalars, so configuration ids hash identically everywhere."""
    return value.item() if hasattr(value, "item") else value
