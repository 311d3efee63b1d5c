"""The run detail's explain panel: a text waterfall from T1/N to T at the baseline's work, term by term,
the fixed costs outside T, and each rank's breakdown with the straggler marked.

It renders one row of cockpit.forecast.analysis, so every second on it is the one the report and the CSV print.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from cockpit.figures import explain, units
from cockpit.figures.devices import mfu_words
from cockpit.figures.energy import energy_words

BAR = 32  # characters for the longest bar
STYLES = {"data_wait": "magenta", "compute": "red", "comm": "yellow", "optimizer": "cyan", "other": "green",
          "host_bound": "bright_red", "unaccounted": "grey50"}


def _num(value: Any) -> float | None:
    return value if isinstance(value, int | float) and value == value else None


def _bar(start: float, width: float, scale: float, style: str) -> Text:
    lo, hi = sorted((start, start + width))
    left, right = round(lo * scale), max(round(hi * scale), round(lo * scale) + (1 if width else 0))
    return Text(" " * left) + Text(("▇" if width >= 0 else "░") * (right - left), style=style)


def waterfall(a: dict[str, Any]) -> Text:
    """The overhead split of an N-worker run as aligned lines; a baseline or an unexplained run says why."""
    out = Text()
    if a.get("baseline"):
        out.append(f"Baseline of its group: T1 = {a['train_time_s']:.2f} s, against which every N-worker run "
                   "of the group is explained.\n", style="bold")
        out.append_text(t_lines(a))
        out.append_text(advice_lines(a))
        return out
    o, t1n, tsame = _num(a.get("overhead_s")), _num(a.get("t1_over_n_s")), _num(a.get("t_same_work_s"))
    if o is None or t1n is None or tsame is None:
        out.append((a.get("note") or "no analysis yet") + "\n", style="italic")
        return out
    terms = [(t, v) for t in explain.TERMS
             if (v := _num(a.get(f"loss_{t}_s"))) is not None and abs(v) >= 0.0005]
    running, peak = t1n, t1n
    for _, v in terms:
        running += v
        peak = max(peak, running)
    scale = BAR / peak if peak > 0 else 0.0
    out.append(f"Where the time went: N = {a['workers']}, T1 = {a['t1_s']:.2f} s, T = {a['train_time_s']:.2f} s "
               f"for {a['work_ratio']:g}x the baseline's work\n", style="bold")
    out.append(f"  {'T1/N':<20} {t1n:8.2f} s  ")
    out.append_text(_bar(0.0, t1n, scale, "grey70"))
    out.append("\n")
    running = t1n
    shown_o, shown = explain.shown_split(o, terms)  # the printed seconds add up to the printed O
    for (term, v), (_, label_v) in zip(terms, shown, strict=True):
        out.append(f"  {explain.TERM_LABELS[term]:<20} {label_v:+8.2f} s  ")
        out.append_text(_bar(running, v, scale, STYLES[term]))
        out.append("\n")
        running += v
    out.append(f"  {'= T/work':<20} {tsame:8.2f} s  overhead {shown_o:+.2f} s, efficiency {units.percent(a['efficiency'])}\n",
               style="bold")
    ps = _num(a.get("predicted_speedup"))
    if ps is not None:
        out.append(f"  Should have achieved: T/work {a['predicted_t_same_work_s']:.2f} s, S = {ps:.2f}x (predicted "
                   f"from the baseline; {a['prediction_note']}); measured {a['prediction_error']:+.0%}\n")
    elif a.get("prediction_note"):
        out.append(f"  No prediction: {a['prediction_note']}\n", style="dim")
    if a.get("explanation"):
        out.append(f"  {a['explanation']}\n", style="italic")
    out.append_text(advice_lines(a))
    return out


def t_lines(a: dict[str, Any]) -> Text:
    """T's parts as a waterfall from 0 to T, host-bound seconds split out of compute where the run has them
    (printed, they add up to the printed T), and the host-bound verdict's evidence."""
    parts = [(p, v) for p, v in explain.t_parts(a) if abs(v) >= 0.0005]
    t = _num(a.get("train_time_s"))
    if not parts or t is None:
        return Text("")
    scale = BAR / t if t > 0 else 0.0
    out = Text()
    running = 0.0
    shown_t, shown = explain.shown_split(t, parts)
    for (part, v), (_, label_v) in zip(parts, shown, strict=True):
        out.append(f"  {explain.SHORT_LABELS[part]:<20} {label_v:8.2f} s  ")
        out.append_text(_bar(running, v, scale, STYLES[part]))
        out.append("\n")
        running += v
    out.append(f"  {'= T':<20} {shown_t:8.2f} s\n", style="bold")
    if a.get("host_bound_note"):
        out.append(f"  {a['host_bound_note']}\n", style="italic")
    return out


def gpu_lines(a: dict[str, Any]) -> Text:
    """MFU with its inputs and the energy over T (or why each is blank): every run's, GPU or CPU."""
    return Text(f"{mfu_words(a)}\n{energy_words(a)[0].upper()}{energy_words(a)[1:]}\n", style="dim")


def advice_lines(a: dict[str, Any]) -> Text:
    """Each loss term's advice (cockpit.forecast.advice: the key, the value, the predicted T and E), largest first,
    with the other keys that act on it."""
    items = a.get("advice_items") or []
    out = Text()
    if items:
        out.append("  Advice (predicted from the baseline, docs/prediction.md):\n", style="bold")
    for item in items:
        out.append(f"    {item.text()}\n")
        for other in item.alternatives:
            out.append(f"      or {other.text(head=False)}\n", style="dim")
    host = a.get("host_advice") or []
    if host:  # cockpit.forecast.advice.host_bound: priced from the run's own GPU busy share and host time per step
        out.append("  Host-bound advice (predicted from this run, docs/prediction.md):\n", style="bold")
    for i, h in enumerate(host):
        out.append(f"    {h.text() if i == 0 else 'or ' + h.text(head=False)}\n", style="" if i == 0 else "dim")
    return out


def fixed_costs(a: dict[str, Any]) -> Text:
    costs = [(c.removesuffix("_s"), _num(a.get(c))) for c in explain.FIXED_COSTS]
    shown = " · ".join(f"{name} {v:.2f} s" for name, v in costs if v is not None)
    return Text(f"Outside T (node-hours too): {shown or 'not recorded'}\n", style="dim")


def ranks_table(a: dict[str, Any]) -> Text:
    """One line per rank: its parts in seconds; the straggler (the rank the others wait for) marked."""
    ranks = a.get("ranks") or []
    if len(ranks) < 2:
        if (a.get("workers") or 1) > 1:
            return Text("Per rank: not recorded (neither result.json nor the metrics "
                        "each rank wrote hold every rank's parts)\n", style="dim")
        return Text("")
    out = Text("  rank host          " + " ".join(f"{explain.SHORT_LABELS[p][:10]:>10}" for p in explain.PARTS)
               + "      total\n", style="bold")
    for r in ranks:
        slow = r["rank"] == a.get("straggler_rank")
        line = (f"  {r['rank']:>4} {(r['host'] or '-')[:13]:<13} " + " ".join(f"{r[p]:10.2f}" for p in explain.PARTS)
                + f" {r['total']:10.2f}")
        if slow:
            line += f"  ← straggler: the others waited {a['straggler_excess_s']:.2f} s more"
        out.append(line + "\n", style="bold red" if slow else "")
    return out


def panel(a: dict[str, Any] | None) -> Text:
    if not a:
        return Text("No result yet: the explanation appears when the run has finished.", style="italic")
    return Text.assemble(waterfall(a), gpu_lines(a), fixed_costs(a), ranks_table(a))
