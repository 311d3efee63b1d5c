"""The wording of two studies compared (cockpit.forecast.compare's Comparison): per matched pair its figure rows
(figure, A, B, change: the inputs above what is derived from them) and the line of B as predicted from A against
B as measured; the headline, the axes left out of the match, the configurations only one study has, the keys
that differ. cockpit.report.comparison lays them out for `cockpit compare`, the TUI and the report.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from cockpit.figures import explain, units
from cockpit.forecast import advice, prediction

if TYPE_CHECKING:
    from cockpit.forecast.compare import Comparison, Pair

NAN = math.nan
TERMS = explain.TERMS


def _f(value: Any, spec: str = ".2f") -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    return format(value, spec)


def label(r: dict[str, Any]) -> str:
    from cockpit.study.spec import config_label

    return config_label(r)


def figure_rows(pair: Pair) -> list[tuple[str, str, str, str]]:
    """(figure, A, B, change) with the inputs above what is derived from them: T and work, T/work, T1, N, then
    S = T1/(T/work), E = S/N, O = T/work - T1/N and each overhead term (printed, they add up to O)."""
    a, b = pair.a, pair.b

    def num(r: dict[str, Any], k: str) -> float:
        v = r.get(k)
        return float(v) if isinstance(v, int | float) else NAN

    def change(k: str, spec: str = "+.2f") -> str:
        return _f(num(b, k) - num(a, k), spec)

    rows = [
        ("T s", _f(num(a, "train_time_s")), _f(num(b, "train_time_s")), change("train_time_s")),
        ("work (samples / the baseline's)", _f(num(a, "work_ratio"), "g"), _f(num(b, "work_ratio"), "g"), ""),
        ("T/work s", _f(num(a, "t_same_work_s")), _f(num(b, "t_same_work_s")), change("t_same_work_s")),
        ("T1 s (the group's baseline)", _f(num(a, "t1_s")), _f(num(b, "t1_s")), change("t1_s")),
        ("N", _f(a.get("workers"), "d") if a.get("workers") else "-", _f(b.get("workers"), "d") if b.get("workers") else "-", ""),
        ("S = T1/(T/work)", _f(num(a, "speedup"), ".3f"), _f(num(b, "speedup"), ".3f"), change("speedup", "+.3f")),
        ("E = S/N", units.percent(num(a, "efficiency")), units.percent(num(b, "efficiency")),
         units.points(num(b, "efficiency") - num(a, "efficiency"))),
    ]
    if not a.get("baseline"):
        shown_a, shown_b = _shown(a), _shown(b)
        rows.append(("O = T/work - T1/N s", _f(shown_a.get("O"), "+.2f"), _f(shown_b.get("O"), "+.2f"),
                     _f(shown_b.get("O", NAN) - shown_a.get("O", NAN), "+.2f")))
        for t in TERMS:
            va, vb = shown_a.get(t), shown_b.get(t)
            if va is None and vb is None:
                continue
            rows.append((f"  {explain.TERM_LABELS[t]} s", _f(va, "+.2f"), _f(vb, "+.2f"),
                         _f((vb if vb is not None else 0.0) - (va if va is not None else 0.0), "+.2f")))
    return rows


def _shown(r: dict[str, Any]) -> dict[str, float]:
    """O and its terms as every view prints them (explain.shown_split: the shown terms add up to O)."""
    o = r.get("overhead_s")
    if not isinstance(o, int | float) or o != o:
        return {}
    terms = [(t, v) for t in TERMS if isinstance(v := r.get(f"loss_{t}_s"), int | float) and v == v]
    shown_o, shown = explain.shown_split(o, terms)
    return {"O": shown_o, **dict(shown)}


def prediction_line(pair: Pair) -> str:
    """B as predicted from A against B as measured, and the change's gain each way (T of A - T of B)."""
    p, a, b = pair.predicted, pair.a, pair.b
    if p is None:
        return "B predicted from A: no config.json in B's result"
    if isinstance(p, prediction.NoPrediction):
        return f"B predicted from A: not predicted ({p.reason})"
    t_a, t_b = a.get("train_time_s", NAN), b.get("train_time_s", NAN)
    gain_p, gain_m = t_a - p.t_s, t_a - t_b
    ratio = gain_m / gain_p if abs(gain_p) > 1e-9 else NAN
    iv = pair.t90
    t90 = f", 90% {iv.low:.2f}-{iv.high:.2f} s" if iv is not None else ""
    inside = ("" if iv is None or t_b != t_b else
              ", inside its 90% interval" if iv.contains(t_b) else ", outside its 90% interval")
    text = (f"B predicted from A: T {p.t_s:.2f} s{t90} (work {p.work:g}, T1 {p.t1_s:.2f} s, "
            f"E {units.percent(p.efficiency)}), measured T {t_b:.2f} s (E {units.percent(b.get('efficiency'))}): "
            f"error {t_b / p.t_s - 1:+.1%}{inside}; "
            f"gain T_A - T_B: predicted {gain_p:+.2f} s, measured {gain_m:+.2f} s"
            + (f" ({ratio:.2f}x the predicted)" if ratio == ratio else ""))
    text += f". From: {p.basis}" + (f"; link {p.link}" if p.link else "")
    if iv is not None:
        text += f"; T 90%: {iv.spread.basis}"
    if p.extrapolated:
        text += "; extrapolated: " + ", ".join(p.extrapolated)
    return text


def differs_words(differs: list[tuple[str, Any, Any]]) -> str:
    """`train.bucket_cap_mb unset -> 0.01; batch_size 16 -> 32`, or `none`."""
    return "; ".join(f"{k} {advice.toml_value(x)} -> {advice.toml_value(y)}" for k, x, y in differs) or "none"


def headline(c: Comparison) -> str:
    """`A = x, B = y: 2 matched configurations, 0 only in A, 2 only in B`."""
    return (f"A = {c.a_name}, B = {c.b_name}: {len(c.pairs)} matched configurations, "
            f"{len(c.only_a)} only in A, {len(c.only_b)} only in B")


def matched_without(c: Comparison) -> str:
    """The axes left out of the match, or "" when every axis matched."""
    if not c.changed_axes:
        return ""
    return "matched without " + ", ".join(f"{ax} ({va} in A, {vb} in B)" for ax, (va, vb) in c.changed_axes.items())


def unmatched_lines(c: Comparison) -> list[str]:
    """`only in B: synthetic foundation w32 1x1 c1 fp32 b8 (completed, T 3.10 s)` per configuration one study
    has and the other has not."""
    out = []
    for name, rows in (("only in A", c.only_a), ("only in B", c.only_b)):
        for r in rows:
            t = r.get("train_time_s")
            shown = f", T {t:.2f} s" if isinstance(t, float) and t == t else ""
            out.append(f"{name}: {label(r)} ({r.get('status')}{shown})")
    return out
