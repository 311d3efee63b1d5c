"""The report's tables: rows of cockpit.forecast.analysis, formatted once for Markdown and HTML.

Every table shows the inputs beside what is derived from them (T, the work ratio, T at the baseline's
work, T1, N), so each speedup, efficiency and overhead can be recomputed by hand from the page.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from cockpit.figures import explain, labels, units
from cockpit.forecast import gpu_fit, key_effects
from cockpit.forecast.analysis import comm_words
from cockpit.forecast.prediction import Prediction
from cockpit.workloads.base import value_word
from runcontract.axes import AXIS, AXIS_KEY, AXIS_KEYS, LABEL_ORDER, labelled

Body = tuple[list[str], list[list[str]]]

_NUMBERED = {k.name for k in AXIS_KEYS if int in k.kind}


def _axis_column(a: str, device: str = "gpu") -> tuple[str, str, str]:
    """An axis's column: its header from the key registry (scale: `nodes×GPUs` / `nodes×workers`)."""
    if a == "scale":
        return ("scale", labels.scale_label(device), "s")
    if a == WORKLOAD_KEYS:
        return (a, "workload keys", "s")
    return (a, AXIS[a].header, "d" if a in _NUMBERED else "s")


WORKLOAD_KEYS = "keys"  # cockpit.forecast.analysis.run_row: a script workload's key words


def shown_axes(rows: list[dict[str, Any]]) -> list[str]:
    """The identity columns of a table over `rows`: LABEL_ORDER's, an axis added later only where some row
    sets it away from its default (runcontract.axes.shows, as the configuration label shows it), so a study
    that never names it keeps its tables. A script workload's own keys (the analysis' `keys` words) follow
    where some row has any, so its configurations that differ only there (pinned memory) tell apart."""
    axes = [a for a in LABEL_ORDER if a == "scale" or any(labelled(AXIS_KEY[a], r) for r in rows)]
    return [*axes, WORKLOAD_KEYS] if any(r.get(WORKLOAD_KEYS) for r in rows) else axes


# (key of an analysis row, header, format) after the identity columns
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("workers", "N", "d"),
    ("train_time_s", "T (s)", ".2f"),
    ("work_ratio", "work", ".3g"),
    ("t_same_work_s", "T/work (s)", ".2f"),
    ("t1_s", "T1 (s)", ".2f"),
    ("speedup", "S = T1/(T/work)", ".3f"),
    ("efficiency", "E = S/N", "%"),
    ("overhead_s", "O = T/work - T1/N (s)", ".2f"),
    ("karp_flatt", "Karp-Flatt", ".3f"),
    ("tokens_per_s", "tokens/s", ".0f"),
    ("verdict", "where the time went", "s"),
    ("comm_by_kind", "comm by kind (s)", "s"),
    ("memory_model_states_bytes", "model states/rank (MiB)", "MiB"),
    ("memory_peak_bytes", "peak memory/rank (MiB)", "MiB"),
    ("mfu", "MFU", ".1%"),
    ("energy_kwh", "energy (kWh)", ".3g"),
)
TERMS = explain.TERMS


def scaling(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """results -> cockpit.forecast.analysis rows (the single source of every number in the report)."""
    from cockpit.forecast.analysis import analyse

    return analyse(results)


def cell(value: Any, spec: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if spec == "s":
        return str(value)
    if spec == "d":
        return str(int(value))
    if spec == "MiB":
        return f"{float(value) / 2**20:.3g}"
    if spec == "%":  # an efficiency, as every view prints it
        return units.percent(float(value))
    return format(float(value), spec)



def _scale(r: dict[str, Any]) -> str:
    return f"{r['nodes']}×{r['gpus_per_node']}"


def _ident(r: dict[str, Any], axes: list[str]) -> list[str]:
    return [_scale(r) if a == "scale" else cell(r.get(a) if a == WORKLOAD_KEYS else r[a], spec)
            for a, _, spec in map(_axis_column, axes)]


def ident_headers(device: str = "gpu", axes: list[str] | None = None) -> list[str]:
    """The headers of the configuration's axes (`shown_axes`; all of LABEL_ORDER when not given);
    `nodes×workers` in a CPU study (cockpit.figures.labels)."""
    return [_axis_column(a, device)[1] for a in (LABEL_ORDER if axes is None else axes)]


def _ident_of(rows: list[dict[str, Any]]) -> list[str]:
    return ident_headers(labels.device_of_rows(rows), shown_axes(rows))




LONG_TEXT = 40  # characters: a column holding a longer cell is prose (HTML: set under its row)


def same_prose(headers: list[str], body: list[list[str]]) -> list[int]:
    """The columns of prose (a cell longer than LONG_TEXT) that say the same on every row, of two or more: a
    note that every row shares, which a table says once above itself instead of on each row."""
    if len(body) < 2:
        return []
    return [i for i in range(len(headers))
            if len({row[i] if i < len(row) else "" for row in body}) == 1 and len(body[0][i]) > LONG_TEXT]


def markdown_table(headers: list[str], body: list[list[str]]) -> str:
    """A Markdown table; prose the same on every row (same_prose) said once above it ("Every row: notes ...")."""
    def esc(text: str) -> str:
        return text.replace("|", "\\|")

    shared = same_prose(headers, body)
    keep = [i for i in range(len(headers)) if i not in shared]
    lines = [f"Every row: {' · '.join(f'{headers[i]}: {body[0][i]}' for i in shared)}", ""] if shared else []
    lines += ["| " + " | ".join(esc(headers[i]) for i in keep) + " |", "|" + "---|" * len(keep)]
    lines += ["| " + " | ".join(esc(row[i]) for i in keep if i < len(row)) + " |" for row in body]
    return "\n".join(lines)


def scaling_body(rows: list[dict[str, Any]]) -> Body:
    scale = labels.scale_label(labels.device_of_rows(rows))
    axes = shown_axes(rows)
    columns = [*map(_axis_column, axes), *COLUMNS]
    headers = [scale if key == "scale" else h for key, h, _ in columns]
    body = []
    for r in rows:
        rec = {**r, "scale": _scale(r), "comm_by_kind": comm_words(r) or "-"}
        if r.get("status") != "completed":
            rec["verdict"] = f"{r.get('status')}: {r.get('note', '')}"
        elif r.get("note") and not r.get("verdict"):
            rec["verdict"] = r["note"]
        body.append([cell(rec.get(key), spec) for key, _, spec in columns])
    return headers, body


def gpu_body(rows: list[dict[str, Any]]) -> Body:
    """Per configuration, what the device says: MFU with its inputs (FLOPs per token, tokens/s, the device's
    peak), the GPU's busy share (NVML, and the trace's where one was read), the host-bound seconds, and the
    energy over T with joules per sample and per token; a blank figure's reason in its note column."""
    axes = shown_axes(rows)
    headers = [*_ident_of(rows), "device", "FLOP/token (M)", "tokens/s", "TFLOP/s", "peak TFLOP/s", "MFU",
               "GPU busy (NVML)", "trace: GPU busy of steps (ms)", "kernels/step", "host-bound (s)", "energy (J)",
               "power (W)", "J/sample", "mJ/token", "kWh", "notes"]
    body = []
    for r in rows:
        if r.get("status") != "completed":
            continue
        fpt = ((r.get("result") or {}).get("model") or {}).get("flops_per_token")
        trace = (f"{r['trace_gpu_busy_s'] * 1e3:.1f} of {r['trace_steps_s'] * 1e3:.1f}"
                 if r.get("trace_steps_s") == r.get("trace_steps_s") and r.get("trace_steps_s") else "-")
        notes = "; ".join(n for n in (f"MFU: {r['mfu_note']}" if r.get("mfu_note") else "",
                                      r.get("host_bound_note") or "",
                                      f"energy: {r['energy_note']}" if r.get("energy_note") else "",
                                      r.get("energy_source") or "") if n)
        device = " ".join(w for w in (r.get("gpu_name"), f"({r['mfu_device']})" if r.get("mfu_device") else "") if w)
        body.append([*_ident(r, axes), device or str(r.get("device") or "-"),
                     cell(fpt / 1e6 if isinstance(fpt, int | float) else None, ".4g"), cell(r.get("tokens_per_s"), ".0f"),
                     cell(r.get("achieved_tflops"), ".1f"), cell(r.get("peak_tflops"), ".1f"), cell(r.get("mfu"), ".1%"),
                     cell(r.get("gpu_busy_pct", math.nan) / 100, ".0%"), trace, cell(r.get("trace_kernels_per_step"), ".0f"),
                     cell(r.get("host_bound_s"), ".2f"), cell(r.get("energy_j"), ".0f"), cell(r.get("energy_power_w"), ".0f"),
                     cell(r.get("energy_j_per_sample"), ".3g"), cell(r.get("energy_j_per_token", math.nan) * 1e3, ".3g"),
                     cell(r.get("energy_kwh"), ".3g"), notes])
    return headers, body


def gpu_footnote(rows: list[dict[str, Any]]) -> str:
    """Why MFU or energy is blank in the scaling table, each reason once: `MFU: no GPU (cpu run). Energy: not
    measured: RAPL not readable: /sys/class/powercap absent.`"""
    done = [r for r in rows if r.get("status") == "completed"]
    mfu = dict.fromkeys(r["mfu_note"] for r in done if r.get("mfu_note"))
    energy = dict.fromkeys(r["energy_note"] for r in done if r.get("energy_note"))
    out = [*(f"MFU: {n}." for n in mfu), *(f"Energy: {n}." for n in energy)]
    return " ".join(out)


def study_energy(rows: list[dict[str, Any]]) -> str:
    """`energy of the study: 0.00215 kWh over 3 of 3 configurations (the runs shown)`, or why none."""
    done = [r for r in rows if r.get("status") == "completed"]
    measured = [r["energy_kwh"] for r in done if r.get("energy_kwh") == r.get("energy_kwh") and "energy_kwh" in r]
    if not measured:
        return "Energy of the study: not measured."
    return (f"Energy of the study: {sum(measured):.3g} kWh over {len(measured)} of {len(done)} configurations "
            "(the run shown of each, over T).")


def attribution_terms(rows: list[dict[str, Any]]) -> list[str]:
    """The overhead's terms the attribution table has a column for: the host-bound term only where some row has
    one (GPU runs with the evidence, cockpit.figures.host_bound), so a CPU study's table keeps its columns."""
    return [t for t in TERMS if t != "host_bound"
            or any(isinstance(v := r.get("loss_host_bound_s"), float) and v == v for r in rows)]


def attribution_body(rows: list[dict[str, Any]]) -> Body:
    """Per N-worker run: T1/N, T/work and the overhead split into seconds per term (printed, they add up to
    the printed O: explain.shown_split)."""
    axes = shown_axes(rows)
    terms_shown = attribution_terms(rows)
    headers = [*_ident_of(rows), "N", "T1/N (s)", "T/work (s)", "O (s)",
               *[f"{explain.TERM_LABELS[t]} (s)" for t in terms_shown], "explanation"]
    body = []
    for r in rows:
        if r.get("baseline") or r.get("status") != "completed" or r.get("overhead_s") != r.get("overhead_s"):
            continue
        terms = [(t, v) for t in TERMS if (v := r.get(f"loss_{t}_s")) is not None and v == v]
        o, shown = explain.shown_split(r["overhead_s"], terms)  # printed terms that add up to the printed O
        shown_by_term = dict(shown)
        body.append([*_ident(r, axes), cell(r["workers"], "d"), cell(r["t1_over_n_s"], ".2f"),
                     cell(r["t_same_work_s"], ".2f"), cell(o, "+.2f"),
                     *[cell(shown_by_term.get(t), "+.2f") for t in terms_shown], r.get("explanation", "")])
    return headers, body


def prediction_body(rows: list[dict[str, Any]], first: Mapping[str, Prediction] | None = None) -> Body:
    """Per N-worker run: its prediction as first made, before it ran (where the store kept one), and as refit now
    from the baseline and the link figures the study's runs measured, beside what was measured."""
    axes = shown_axes(rows)
    first = first or {}
    headers = [*_ident_of(rows), "N", "first predicted T (s)", "measured T (s)", "first error", "refit T/work (s)",
               "measured T/work (s)", "refit error", "refit S", "measured S", "from"]
    body = []
    for r in rows:
        if "prediction_note" not in r:
            continue
        f = first.get(r.get("config_id", ""))
        first_error = r["train_time_s"] / f.t_s - 1 if f is not None and f.t_s > 0 else None
        body.append([*_ident(r, axes), cell(r["workers"], "d"), cell(f.t_s if f else None, ".2f"),
                     cell(r["train_time_s"], ".2f"), cell(first_error, "+.1%"),
                     cell(r["predicted_t_same_work_s"], ".2f"),
                     cell(r["t_same_work_s"], ".2f"), cell(r["prediction_error"], "+.1%"),
                     cell(r["predicted_speedup"], ".3f"), cell(r["speedup"], ".3f"), r["prediction_note"]])
    return headers, body


def key_effects_body(rows: list[dict[str, Any]]) -> Body:
    """Per pair of runs that differ in one swept key only (cockpit.forecast.key_effects), at the same scale: T and
    samples of each, time per sample after over before, each part's change in seconds, and the words."""
    headers = ["key", "before → after", labels.scale_label(labels.device_of_rows(rows)), "T before (s)",
               "T after (s)", "samples before", "samples after", "time per sample after/before",
               *[f"{p} (s)" for p in key_effects.PART_WORDS.values()], "what changed"]
    body = []
    for e in key_effects.key_effects(rows):
        a, b, moved = e.reference, e.changed, e.part_changes
        body.append([e.key, f"{value_word(e.before)} → {value_word(e.after)}", _scale(a),
                     cell(a["train_time_s"], ".2f"), cell(b["train_time_s"], ".2f"), cell(a["samples"], ".0f"),
                     cell(b["samples"], ".0f"), cell(e.per_sample_ratio, ".2f"),
                     *[cell(moved.get(p), "+.2f") for p in key_effects.PART_WORDS], e.words()])
    return headers, body


ADVICE_LOSSES = "losses it acts on (s of T/work)"
ADVICE_GAIN = "predicted gain (s of T)"


def advice_body(rows: list[dict[str, Any]]) -> Body:
    """Per N-worker run, one row per change (cockpit.forecast.advice: the study keys to set and their values, the T
    and E the prediction model expects), in the order of the largest loss it acts on: the losses it acts on
    (one change may act on several, and several changes on one loss: each is listed once), its gain, counted
    once, and what the prediction rests on. A loss no key acts on is a row of its own with the reason."""
    axes = shown_axes(rows)
    headers = [*_ident_of(rows), "N", ADVICE_LOSSES, "change → predicted T and E", ADVICE_GAIN, "from"]
    body = []
    for r in rows:
        changes: dict[object, tuple[Any, list[str]]] = {}
        for item in r.get("advice_items") or []:
            for a in (item, *item.alternatives):
                loss = f"{a.label or explain.TERM_LABELS[a.term]} {a.loss_s:.2f}"
                change = changes.setdefault(a.keys or id(a), (a, []))
                if loss not in change[1]:
                    change[1].append(loss)
        for a, losses in changes.values():
            p = a.predicted
            basis = ("predicted, not advised" if a.unadvised else "not predicted") if p is None else (
                f"{p.basis}; link: {p.link or 'none needed'}") + (
                f"; extrapolated: {', '.join(p.extrapolated)}" if p.extrapolated else "")
            body.append([*_ident(r, axes), cell(r["workers"], "d"), "; ".join(losses), a.text(head=False),
                         cell(a.gain_s, "+.2f"), basis])
        for h in r.get("host_advice") or []:  # a host-bound run's, its baseline too (cockpit.forecast.advice.host_bound)
            priced = h.predicted_t_s == h.predicted_t_s or h.unadvised
            body.append([*_ident(r, axes), cell(r["workers"], "d"), f"host-bound {h.loss_s:.2f}", h.text(head=False),
                         cell(h.gain_s, "+.2f"), "the run's GPU busy share and host time per step" if priced
                         else "not predicted"])
    return headers, body


def fit_body(rows: list[dict[str, Any]], gpu_bytes: float) -> Body:
    """Per strategy, worker count, batch, window, vocabulary and classifier classes the study ran (the
    inputs of the fit, each shown): the largest model that fits one GPU of `gpu_bytes`
    (cockpit.forecast.gpu_fit), with its inputs: model-state bytes per parameter per rank, activations, the peak
    per rank against the GPU's memory, and the next shape, which does not fit."""
    headers = [AXIS["strategy"].header, "N", AXIS["batch_size"].header, AXIS["window"].header,
               AXIS["precision"].header, "vocab", "classes", "model states (B/param/rank)",
               "largest that fits (layers×d_model)", "parameters (M)", "model states/rank (GB)",
               "gathered/rank (GB)", "activations/rank (GB)", "peak/rank (GB)", "next, does not fit", "its peak/rank (GB)"]
    seen: dict[tuple, list[str]] = {}
    for r in rows:
        model = (r.get("result") or {}).get("model") or {}
        if r.get("status") != "completed" or not model.get("vocab_size") or gpu_bytes <= 0:
            continue
        key = (r["strategy"], int(r["workers"]), int(r["batch_size"]), int(r["window"]), r["precision"],
               int(model["vocab_size"]), int(model.get("num_classes") or 0))
        if key in seen:
            continue
        f = gpu_fit.largest_fitting(gpu_bytes, key[0], key[1], batch=key[2], window=key[3], vocab=key[5],
                                    classes=key[6], element_bytes=2 if key[4] in ("bf16", "fp16") else 4)
        m, nxt = f.memory or {}, f.next_memory or {}
        seen[key] = [key[0], str(key[1]), str(key[2]), str(key[3]), key[4], str(key[5]), str(key[6] or "-"),
                     cell(f.bytes_per_param, ".3g"),
                     "×".join(map(str, f.shape)) if f.shape else "none", cell(m.get("parameters", math.nan) / 1e6, ".4g"),
                     _gb(m, "model_states_bytes"), _gb(m, "gathered_bytes"), _gb(m, "activations_bytes"),
                     _gb(m, "peak_bytes"), "×".join(map(str, f.next_shape)) if f.next_shape else "-",
                     _gb(nxt, "peak_bytes")]
    body = [seen[k] for k in sorted(seen, key=lambda k: (k[1], k[0], k[2], k[3], k[4], k[5], k[6]))]
    return headers, body


def _gb(memory: dict[str, float], key: str) -> str:
    return cell(memory.get(key, math.nan) / 1e9, ".3g")


def breakdown_body(rows: list[dict[str, Any]]) -> Body:
    """Seconds per part of T (rank 0), and the costs outside T that also take node-hours."""
    axes = shown_axes(rows)
    headers = [*_ident_of(rows), "T (s)", *[f"{explain.SHORT_LABELS[p]} (s)" for p in explain.PARTS],
               *[c.removesuffix("_s") + " (s)" for c in explain.FIXED_COSTS]]
    body = [[*_ident(r, axes), cell(r["train_time_s"], ".2f"), *[cell(r.get(f"{p}_s"), ".2f") for p in explain.PARTS],
             *[cell(r.get(c), ".2f") for c in explain.FIXED_COSTS]]
            for r in rows if r.get("status") == "completed"]
    return headers, body


def ranks_body(rows: list[dict[str, Any]]) -> Body:
    """Each rank's breakdown of every multi-worker run, the straggler marked (the rank the others wait for)."""
    axes = shown_axes(rows)
    headers = [*_ident_of(rows), "rank", "host", *[f"{explain.SHORT_LABELS[p]} (s)" for p in explain.PARTS], "total (s)", ""]
    body = []
    for r in rows:
        for rank in r.get("ranks") or []:
            if len(r["ranks"]) < 2:
                break
            mark = ""
            if rank["rank"] == r.get("straggler_rank"):
                mark = f"straggler: the others waited {r['straggler_excess_s']:.2f} s more"
            body.append([*_ident(r, axes), str(rank["rank"]), rank["host"] or "-",
                         *[cell(rank[p], ".2f") for p in explain.PARTS], cell(rank["total"], ".2f"), mark])
    return headers, body


HEADLINE_N = "N ({})"  # "N (workers)", "N (GPUs)"
HEADLINE = ("groups", "speedup", "efficiency", "overhead (s)", "S of each group", "O of each group (s)")


def headline_cells(rows: list[dict[str, Any]], pending: list[dict[str, Any]] | None = None) -> list[dict[str, str]]:
    """Median speedup/efficiency/overhead per worker count, over the groups that have both runs, of the
    groups with a configuration of that many workers (`pending`: those without a result yet): one dict per
    worker count, header -> the cell as printed. The headline table and the figures that write these
    medians (cockpit.report.figures) print them from here, so they agree to the digit."""
    from cockpit.forecast.analysis import summary_by_workers

    n = HEADLINE_N.format(labels.worker_word(labels.device_of_rows(rows)))
    return [
        dict(zip((n, *HEADLINE), (
            str(s["workers"]), f"{s['groups']} of {s['of_groups']}", cell(s["speedup"], ".3f"),
            cell(s["efficiency"], "%"), cell(s["overhead_s"], ".2f"),
            ", ".join(cell(v, ".3f") for v in s["speedups"]), ", ".join(cell(v, ".2f") for v in s["overheads_s"])),
            strict=True))
        for s in summary_by_workers(rows, pending or [])
    ]


def headline_body(rows: list[dict[str, Any]], pending: list[dict[str, Any]] | None = None) -> Body:
    """The headline table: headline_cells as rows."""
    headers = [HEADLINE_N.format(labels.worker_word(labels.device_of_rows(rows))), *HEADLINE]
    return headers, [[c[h] for h in headers] for c in headline_cells(rows, pending)]


def quality_body(rows: list[dict[str, Any]]) -> Body:
    """Per scored run: its quality figure with the inputs it is the mean of, beside its group's baseline."""
    axes = shown_axes(rows)
    headers = [*_ident_of(rows), "N", "metric", "value", "from", "1×1 value", "change"]
    body = [[*_ident(r, axes), cell(r.get("workers"), "d"), r["quality_metric"], cell(r["quality"], ".3f"),
             r.get("quality_inputs", ""), cell(r.get("quality_1"), ".3f"), cell(r.get("quality_change"), "+.3f")]
            for r in rows if r.get("quality_metric")]
    return headers, body


def class_body(rows: list[dict[str, Any]]) -> Body:
    """Per fine-tune run and class: support, sensitivity (Se), positive predictivity (+P) and F1, from the
    confusion matrix of its test split."""
    axes = shown_axes(rows)
    headers = [*_ident_of(rows), "class", "support", "Se", "+P", "F1"]
    body = []
    for r in rows:
        q = r.get("quality_detail")
        for c in q.classes if q else ():
            body.append([*_ident(r, axes), c.name, str(c.support), cell(c.sensitivity, ".3f"), cell(c.ppv, ".3f"),
                         cell(c.f1, ".3f")])
    return headers, body
