"""The wording of a what-if (`cockpit plan --what-if`, the TUI's plan dialog): cockpit.forecast.whatif
predicts, this module words its Outcome: the table's COLUMNS, CAPTION and :func:`table_rows`, its
:func:`title` and the :func:`summary_lines` under it (the keys changed, node-hours, link figures, what is
extrapolated, not predicted or too big, memory per rank).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from cockpit.figures import units
from cockpit.figures.labels import device_of
from cockpit.forecast import advice, interval, prediction, prediction_words
from cockpit.forecast.plan import hours, study_gpu_memory_gb

if TYPE_CHECKING:
    from cockpit.forecast.whatif import Inputs, KeyChange, Outcome, WhatIfLine


def change_words(changes: list[KeyChange]) -> list[str]:
    """`[train] bucket_cap_mb unset -> 1.0`, `[sweep] gpus_per_node [1, 2] -> [1, 2, 4]`: one per key changed."""
    return [f"{c.where} {advice.toml_value(c.before)} -> {advice.toml_value(c.after)}" for c in changes]


def link_words(links: prediction.Links) -> list[str]:
    """`intra_node 0.32 GB/s: measured by 2 run(s) of this study` for each link kind there is a figure for."""
    out = []
    for kind in ("intra_node", "inter_node"):
        link = getattr(links, kind)
        if link is not None:
            latency = f", {link.latency_s * 1e6:g} us per all-reduce" if link.latency_s else ""
            out.append(f"{kind} {link.busbw / 1e9:.3g} GB/s{latency}: {link.source}")
        else:
            out.append(f"{kind}: none (set {kind}_busbw_gbs in the site profile or run cockpit preflight)")
    return out


COLUMNS = ("config", "work", "T s", "T1 s", "S", "E", "node-h", "was T", "was E", "ΔT s", "T 90%")
CAPTION = ("work: samples / the baseline's; S = T1 / (T / work), E = S / N; was: the study as recorded (* predicted, "
           "else measured); ΔT = T - was T; T 90%: T's 90% interval (below). After the configuration: m = as "
           "measured, m+Δ = measured with each part changed as the model changes it, model = the model alone, "
           "x = extrapolated (below)")


def title(o: Outcome) -> str:
    asked = " ".join(f"{k}={advice.toml_value(v)}" for k, v in o.what_if.assignments)
    return f"{o.study.name}: what if {asked}"


def _f(value: float | None, spec: str) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def _short(words: dict[str, str], keep: set[str]) -> str:
    """The configuration label's words for the keys that vary and its NxG (Configuration.label_words)."""
    return " ".join(w for name, w in words.items() if name in keep or name == "scale")


def _basis_word(p: advice.Forecast) -> str:
    word = "m" if p.basis.startswith("measured (") else "m+Δ" if p.basis.startswith("measured") else "model"
    return word + (" x" if p.extrapolated else "")


def table_rows(o: Outcome) -> list[tuple[str, ...]]:
    """One row of COLUMNS per configuration of the what-if: its prediction with its inputs (work, T, T1:
    S = T1 / (T / work), E = S / N, node-hours), the study as recorded (T, E: measured or predicted) and ΔT."""
    study, variant = o.study, o.variant
    keep = {a for a in variant.sweep if len(set(study.sweep.get(a, [])) | set(variant.sweep[a])) > 1}
    rows: list[tuple[str, ...]] = []
    for line in o.what_if.lines:
        r, p = line.recorded, line.predicted
        was = (_f(r.t_s, ".2f") + ("*" if r.how != "measured" else ""), units.percent(r.efficiency)) if r else ("-", "-")
        if not line.fits:
            now, delta = ("-", "-", "-", "-", "-", "-"), "-"
            label = f"{_short(line.words, keep)} too big"
        elif isinstance(p, advice.Forecast):
            now = (_f(p.work, "g"), _f(p.t_s, ".2f"), _f(p.t1_s, ".2f"), _f(p.speedup, ".2f"), units.percent(p.efficiency),
                   hours(p.node_hours))
            delta = _f(p.t_s - r.t_s, "+.2f") if r else "-"
            label = f"{_short(line.words, keep)} {_basis_word(p)}"
        else:
            now = ("-", "-", "-", "-", "-", hours(line.node_hours))
            delta = "-"
            label = f"{_short(line.words, keep)} not predicted"
        t90 = o.what_if.interval(line) if line.fits else None
        rows.append((label, *now, *was, delta, f"{t90.low:.2f}-{t90.high:.2f}" if t90 else "-"))
    return rows


def _sources(inputs: Inputs) -> str:
    """Where the recorded results came from: the study's store, `--baselines`, or nowhere yet."""
    given, store_path = inputs.from_baselines, inputs.store_path
    if not given:
        return f" in {store_path}" if store_path else " (no store yet: nothing recorded to predict from)"
    stored = f"{len(inputs.results) - given} in {store_path}" if store_path else "no store yet"
    return f" ({given} from --baselines, {stored})"


def summary_lines(o: Outcome) -> list[str]:
    """What changed, node-hours before and after, the link figures used, what is extrapolated and why some
    configurations are not predicted."""
    w = o.what_if
    lines = ["what-if: " + ("; ".join(change_words(w.changes)) or "no key differs from the study")]
    predicted = [line for line in w.lines if line.fits and isinstance(line.predicted, advice.Forecast)]
    fitting = sum(1 for line in w.lines if line.fits)
    lines.append(f"{len(predicted)} of {len(w.lines)} configurations predicted from {len(o.inputs.results)} recorded "
                 f"result(s){_sources(o.inputs)}")
    lines.append(f"node-hours: {hours(sum(line.node_hours for line in w.lines))} for the what-if "
                 f"({fitting - len(predicted)} at the per-run estimate) against "
                 f"{hours(w.recorded_node_hours)} as recorded ({sum(1 for li in w.lines if li.recorded)} configurations; "
                 "* = predicted, not measured)")
    lines.append("link figures: " + "; ".join(link_words(w.links)))
    if w.spread is not None and any(w.interval(line) for line in predicted):
        lines.append(f"T 90%: {interval.legend(w.spread)}; S, E and node-hours scale with it as in the plan")
    extrapolated: dict[str, list[str]] = {}
    unpredicted: dict[str, list[str]] = {}
    too_big = [line.label for line in w.lines if not line.fits]
    for line in w.lines:
        p = line.predicted
        if not line.fits:
            continue
        if isinstance(p, advice.Forecast):
            for why in p.extrapolated:
                extrapolated.setdefault(why, []).append(line.label)
        else:
            unpredicted.setdefault(p.reason, []).append(line.label)
    for why, labels in extrapolated.items():
        lines.append(f"extrapolated ({len(labels)}): {why}")
    for why, labels in unpredicted.items():
        lines.append(f"not predicted ({len(labels)}): {why}")
    if too_big:
        lines.append(f"too big ({len(too_big)}): more cores than a node's {w.node_cores}, never submitted: "
                     + ", ".join(too_big))
    if w.dropped:
        lines.append(f"not in the what-if ({len(w.dropped)}): " + ", ".join(w.dropped))
    return lines + memory_lines(o, predicted)


def memory_lines(o: Outcome, predicted: list[WhatIfLine]) -> list[str]:
    """Memory per rank as predicted (cockpit.forecast.prediction.memory_per_rank), flagged where a GPU's is exceeded."""
    gpu_bytes = study_gpu_memory_gb(o.variant) * 1e9
    device = device_of((r.get("device") for r in o.inputs.results), o.variant.train.get("device"))
    out = []
    for line in predicted:
        memory = line.predicted.memory if isinstance(line.predicted, advice.Forecast) else None
        if memory:
            flag = prediction_words.memory_flag(memory, device, gpu_bytes)
            out.append(f"memory per rank, {line.label}: {prediction_words.memory_words(memory)}" + (f"; {flag}" if flag else ""))
    return out
