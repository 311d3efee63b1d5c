"""The study's four figures as data, computed once from `cockpit.analysis` rows for the TUI and the PNGs.

1. T at the baseline's work vs CPUs per task, one line per worker count;
2. T at the baseline's work per worker count (the number the speedup divides), with the ideal T1/N;
3. efficiency vs workers (ideal 1); 4. overhead TN' - T1/N vs workers (ideal 0).
Every point is a median over groups. One rule for "finished": `finished(row)`. Where a median covers
fewer groups than the study has, the series says how many, so a figure never hides unfinished groups.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

TITLES = {
    "time_vs_cpus": "T at the baseline's work vs CPUs per task",
    "time_bars": "T at the baseline's work per worker count, ideal T1/N marked",
    "efficiency": "Parallel efficiency S/N vs workers",
    "overhead": "Overhead TN' - T1/N vs workers",
}
T_LABEL = "T at the baseline's work (s)"


@dataclass(frozen=True)
class Series:
    """One line or bar set: x, y, and (for bars) the ideal per x; `note` flags incomplete medians."""

    label: str
    x: list[float]
    y: list[float]
    ideal: list[float] = field(default_factory=list)
    speedup: list[float] = field(default_factory=list)
    note: str = ""


def finished(row: dict[str, Any]) -> bool:
    t = row.get("train_time_s")
    return row.get("status") == "completed" and t is not None and t == t


def _nan(value: Any) -> bool:
    return value is None or value != value


def _medians(rows: list[dict[str, Any]], key: Callable[[dict], Any], value: Callable[[dict], Any]
             ) -> dict[Any, tuple[float, int]]:
    """key -> (median of value, number of groups it covers), over finished rows with a value."""
    acc: dict[Any, list[tuple[float, str]]] = {}
    for r in rows:
        v = value(r)
        if finished(r) and not _nan(v):
            acc.setdefault(key(r), []).append((float(v), r["group_id"]))
    return {k: (statistics.median(v for v, _ in vs), len({g for _, g in vs})) for k, vs in acc.items()}


def _note(med: dict[Any, tuple[float, int]], universe: list[dict[str, Any]], key: Callable[[dict], Any],
          name: Callable[[Any], str]) -> str:
    """Which points are medians over fewer groups than the study has configurations for."""
    expected: dict[Any, set[str]] = {}
    for r in universe:
        expected.setdefault(key(r), set()).add(r["group_id"])
    short = [f"{name(k)}: {c} of {len(expected.get(k, ()))} groups" for k, (_, c) in sorted(med.items())
             if c < len(expected.get(k, ()))]
    return "median over " + "; ".join(short) + " (the others have not finished)" if short else ""


def _workers(r: dict[str, Any]) -> int:
    return r["workers"]


def _workers_cpus(r: dict[str, Any]) -> tuple[int, int]:
    return r["workers"], r["cpus_per_task"]


def _label(n: Any) -> str:
    return f"{n} worker" + ("s" if n != 1 else "")


def time_vs_cpus(rows: Iterable[dict[str, Any]], pending: Iterable[dict[str, Any]] = ()) -> list[Series]:
    """Figure 1. `pending`: configurations without a result (group_id, workers, cpus_per_task), so a
    median over fewer groups than planned says so."""
    rows = list(rows)
    universe = [*rows, *pending]
    med = _medians(rows, _workers_cpus, lambda r: r.get("t_same_work_s"))
    note = _note(med, universe, _workers_cpus, lambda k: f"{_label(k[0])} x {k[1]} CPUs")
    out = []
    for n in sorted({k[0] for k in med}):
        pts = sorted((c, m[0]) for (w, c), m in med.items() if w == n)
        out.append(Series(_label(n), [float(c) for c, _ in pts], [m for _, m in pts], note=note))
    return out


def time_bars(rows: Iterable[dict[str, Any]], pending: Iterable[dict[str, Any]] = ()) -> Series:
    """Figure 2: the bars are the T the speedup divides; the ideal T1/N is drawn beside each."""
    rows = list(rows)
    universe = [*rows, *pending]
    t = _medians(rows, _workers, lambda r: r.get("t_same_work_s"))
    ideal = _medians(rows, _workers, lambda r: r.get("t1_over_n_s"))
    s = _medians(rows, _workers, lambda r: r.get("speedup"))
    ns = sorted(t)
    return Series("T at the baseline's work", [float(n) for n in ns], [t[n][0] for n in ns],
                  ideal=[ideal[n][0] if n in ideal else float("nan") for n in ns],
                  speedup=[s[n][0] if n in s else float("nan") for n in ns],
                  note=_note(t, universe, _workers, _label))


def _per_workers(rows: Iterable[dict[str, Any]], pending: Iterable[dict[str, Any]], column: str,
                 label: str) -> Series:
    rows = list(rows)
    universe = [*rows, *pending]
    med = _medians(rows, _workers, lambda r: r.get(column))
    ns = sorted(med)
    return Series(label, [float(n) for n in ns], [med[n][0] for n in ns],
                  note=_note(med, universe, _workers, _label))


def efficiency(rows: Iterable[dict[str, Any]], pending: Iterable[dict[str, Any]] = ()) -> Series:
    """Figure 3 (ideal: 1)."""
    return _per_workers(rows, pending, "efficiency", "efficiency")


def overhead(rows: Iterable[dict[str, Any]], pending: Iterable[dict[str, Any]] = ()) -> Series:
    """Figure 4 (ideal: 0)."""
    return _per_workers(rows, pending, "overhead_s", "overhead")
