"""The run detail's quality panel: what the run learned, with the inputs of every figure on screen.

It renders one row of cockpit.forecast.analysis (its cockpit.workloads.hlm.quality object), so the macro-F1 here is the one the
scaling table, the report and the headless line print, and it can be recomputed from the per-class F1 and
those from the confusion matrix shown beneath it.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from cockpit.workloads.hlm.quality import Quality, direction

RECORDS_SHOWN = 5  # the records with the most errors; an inter-patient table is often decided by a few


def _f(value: float | None) -> str:
    return f"{value:7.3f}" if value is not None else f"{'-':>7}"


def headline(a: dict[str, Any], q: Quality) -> Text:
    out = Text()
    if q.problem and q.value != q.value:
        out.append(f"Model quality: not readable: {q.problem}\n", style="bold red")
        return out
    out.append(f"Model quality: {q.metric} {q.value:.3f}", style="bold")
    where = f"{q.split} split, {q.samples:,} {'masked tokens' if q.metric == 'masked loss' else 'windows'}"
    out.append(f" = {q.inputs}  ({where}" + (f"; accuracy {q.accuracy:.3f})" if q.classes and q.accuracy is not None
                                               else ")") + "\n")
    change = a.get("quality_change")
    if not a.get("baseline") and change == change and change is not None:
        word = direction(q.metric, change)
        out.append(f"  1×1 baseline: {a['quality_1']:.3f}, change ")
        out.append(f"{change:+.3f} {word}", style={"better": "green", "worse": "yellow"}.get(word, ""))
        out.append(" (higher is better)\n" if q.higher_is_better else " (lower is better)\n")
    if q.problem:
        out.append(f"  {q.problem}\n", style="yellow")
    return out


def confusion(q: Quality) -> Text:
    names = q.class_names
    out = Text("  confusion (rows: true, columns: predicted)\n", style="dim")
    out.append("        " + "".join(f"{c:>8}" for c in names) + "\n", style="bold")
    for name, row in zip(names, q.confusion, strict=True):
        out.append(f"  {name:>6}" + "".join(f"{v:>8,}" for v in row) + "\n")
    return out


def classes(q: Quality) -> Text:
    out = Text(f"  {'class':>6}{'support':>9}{'Se':>7}{'+P':>7}{'F1':>7}\n", style="bold")
    for c in q.classes:
        out.append(f"  {c.name:>6}{c.support:>9,}{_f(c.sensitivity)}{_f(c.ppv)}{_f(c.f1)}\n")
    return out


def records(q: Quality, top: int = RECORDS_SHOWN) -> Text:
    """The `top` records with the most errors: windows, errors, their share of all errors, the largest
    confusions (true->predicted)."""
    if not q.records or top <= 0:
        return Text("")
    total = sum(r.errors for r in q.records)
    out = Text(f"  records with the most errors (of {total:,} in {len(q.records)} records):\n", style="bold")
    for r in q.records[:top]:
        largest = ", ".join(f"{name} {n:,}" for name, n in r.confusions[:3])
        out.append(f"  {r.record:>8} {r.beats:>7,} windows {r.errors:>7,} errors {r.errors / max(total, 1):6.1%}"
                   f"  {largest}\n")
    return out


def tables(q: Quality, top: int = RECORDS_SHOWN) -> Text:
    """The confusion matrix, the per-class scores and the records with the most errors."""
    return Text.assemble(confusion(q), classes(q), records(q, top))


def panel(a: dict[str, Any] | None) -> Text:
    """The panel's text; empty for a run that was not scored (`train.eval = false`) or has no result."""
    q: Quality | None = (a or {}).get("quality_detail")
    if q is None:
        return Text("")
    if not q.classes:
        return headline(a or {}, q)
    return Text.assemble(headline(a or {}, q), tables(q))
