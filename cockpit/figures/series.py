"""The study's four figures as data, computed once from `cockpit.forecast.analysis` rows for the TUI and the PNGs.

1. T at the baseline's work vs CPUs per task, one line per worker count;
2. T at the baseline's work per worker count (the number the speedup divides), with the ideal;
3. parallel efficiency (speedup / workers) vs workers (ideal 1);
4. overhead (T at the baseline's work minus the ideal T1/N) vs workers (ideal 0).

Every point is a median over groups (a group: the configurations that differ only in nodes and workers per
node), and the titles say so. The runs drawn are those whose group's 1×1 baseline has finished (`usable`):
only they have a T at the baseline's work. Figure 2's bars are medians over the same groups at every
worker count (`complete_groups`), and its speedups and ideals are computed from its own bars (S = the
1-worker bar / the N-worker bar), so the figure checks by eye; each group's own value is kept beside the
median (`Series.groups`). How many groups a median covers, of those that have a configuration with that
many workers, is counted by one function, `group_counts`, which the report's headline uses too.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from cockpit.figures import labels

NAMES = ("time_vs_cpus", "time_bars", "efficiency", "overhead")
T_LABEL = "T at the baseline's work (s)"


def titles(device: str = "gpu") -> dict[str, str]:
    """The figures' titles in words (the PNGs'), for a GPU or a CPU study."""
    w = labels.worker_word(device)
    return {
        "time_vs_cpus": "Median over groups: T at the baseline's work vs CPUs per task",
        "time_bars": f"Median over groups: T at the baseline's work per number of {w}",
        "efficiency": f"Median over groups: parallel efficiency (speedup / {w}) vs {w}",
        "overhead": f"Median over groups: overhead (time above the ideal) vs {w}",
    }


def short_titles(device: str = "gpu") -> dict[str, str]:
    """The same titles short enough for a quarter of an 80-column terminal."""
    w = labels.worker_word(device)
    return {
        "time_vs_cpus": "Median T vs CPUs per task",
        "time_bars": f"Median T per number of {w}",
        "efficiency": f"Median efficiency vs {w}",
        "overhead": f"Median overhead vs {w}",
    }


TITLES = titles()


@dataclass(frozen=True)
class Series:
    """One line or bar set: x, y (medians over groups), and for the bars the ideal and the speedup per x
    (both from the bars); `groups`: each group's own value per x; `note` flags medians over fewer groups
    than have a configuration there."""

    label: str
    x: list[float]
    y: list[float]
    ideal: list[float] = field(default_factory=list)
    speedup: list[float] = field(default_factory=list)
    groups: list[list[float]] = field(default_factory=list)
    note: str = ""


def finished(row: dict[str, Any]) -> bool:
    t = row.get("train_time_s")
    return row.get("status") == "completed" and t is not None and t == t


def usable(row: dict[str, Any]) -> bool:
    """Finished, and its group's baseline too: it has a T at the baseline's work and a speedup."""
    return finished(row) and not _nan(row.get("speedup"))


def _nan(value: Any) -> bool:
    return value is None or value != value


def _workers(r: dict[str, Any]) -> int:
    return r["workers"]


def _workers_cpus(r: dict[str, Any]) -> tuple[int, int]:
    return r["workers"], r["cpus_per_task"]


def group_counts(rows: Iterable[dict[str, Any]], pending: Iterable[dict[str, Any]] = (),
                 key: Callable[[dict[str, Any]], Any] = _workers) -> dict[Any, tuple[int, int]]:
    """key (the worker count by default) -> (groups with a usable run there, groups with a configuration
    there: the analysed rows and the `pending` configurations without a result). The one count of the
    report's headline and the figures' notes."""
    rows = list(rows)
    planned: dict[Any, set[str]] = {}
    for r in _planned(rows, pending):
        planned.setdefault(key(r), set()).add(r["group_id"])
    covered: dict[Any, set[str]] = {}
    for r in rows:
        if usable(r):
            covered.setdefault(key(r), set()).add(r["group_id"])
    return {k: (len(covered.get(k, ())), len(gs)) for k, gs in planned.items()}


def _planned(rows: list[dict[str, Any]], pending: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every configuration of the study that is known: analysed rows and those without a result."""
    return [r for r in [*rows, *pending] if r.get("workers") is not None]


def planned_groups(rows: Iterable[dict[str, Any]], pending: Iterable[dict[str, Any]] = ()) -> set[str]:
    """The study's groups (those of its analysed rows and of its configurations without a result)."""
    return {r["group_id"] for r in _planned(list(rows), pending)}


def _values(rows: list[dict[str, Any]], key: Callable[[dict], Any], value: Callable[[dict], Any]
            ) -> dict[Any, list[float]]:
    """key -> the values of the usable rows there (one per group: a configuration is one row)."""
    acc: dict[Any, list[float]] = {}
    for r in rows:
        v = value(r)
        if usable(r) and not _nan(v):
            acc.setdefault(key(r), []).append(float(v))
    return acc


def _note(counts: dict[Any, tuple[int, int]], shown: Iterable[Any], name: Callable[[Any], str]) -> str:
    """Which medians cover fewer groups than have a configuration there."""
    short = [f"{name(k)}: {counts[k][0]} of {counts[k][1]} groups" for k in sorted(shown)
             if k in counts and counts[k][0] < counts[k][1]]
    return "median over " + "; ".join(short) + " (the others have not finished)" if short else ""


def time_vs_cpus(rows: Iterable[dict[str, Any]], pending: Iterable[dict[str, Any]] = ()) -> list[Series]:
    """Figure 1. `pending`: configurations without a result (group_id, workers, cpus_per_task), so a
    median over fewer groups than planned says so."""
    rows, pending = list(rows), list(pending)
    device = labels.device_of_rows(rows)
    vals = _values(rows, _workers_cpus, lambda r: r.get("t_same_work_s"))
    note = _note(group_counts(rows, pending, _workers_cpus), vals,
                 lambda k: f"{labels.workers(k[0], device)} x {k[1]} CPUs")
    out = []
    for n in sorted({k[0] for k in vals}):
        pts = sorted((c, vs) for (w, c), vs in vals.items() if w == n)
        out.append(Series(labels.workers(n, device), [float(c) for c, _ in pts],
                          [statistics.median(vs) for _, vs in pts], groups=[sorted(vs) for _, vs in pts],
                          note=note))
    return out


def left_out(name: str, rows: Iterable[dict[str, Any]]) -> str:
    """Why figure `name` is not drawn, in one line, or "": its x axis (CPUs per task for time_vs_cpus, the
    worker count for the others) holds one value over the runs it would draw, which makes a figure of lone
    dots. "" with no such run at all (the TUI draws the figure saying "no finished runs yet"; the report
    leaves out all four in one line)."""
    drawn = [r for r in rows if usable(r)]
    if not drawn:
        return ""
    device = labels.device_of_rows(drawn)
    if name == "time_vs_cpus":
        axis, values = "CPUs per task", {int(r["cpus_per_task"]) for r in drawn if r.get("cpus_per_task")}
    else:
        axis, values = f"number of {labels.worker_word(device)}", {int(r["workers"]) for r in drawn}
    if len(values) != 1:
        return ""
    return f"{short_titles(device)[name]}: not drawn, every finished run has {axis} {next(iter(values))}."


def complete_groups(rows: Iterable[dict[str, Any]]) -> tuple[list[int], set[str]]:
    """(worker counts, groups): the groups with a usable run at every one of those worker counts. All worker
    counts with a usable run when some group has them all; else the counts held by the most groups are
    kept, dropping the rarest first. Medians over these groups are comparable bar to bar."""
    have: dict[str, set[int]] = {}
    for r in rows:
        if usable(r):
            have.setdefault(r["group_id"], set()).add(r["workers"])
    ns = sorted({n for got in have.values() for n in got})
    while ns:
        groups = {g for g, got in have.items() if set(ns) <= got}
        if groups:
            return ns, groups
        ns.remove(min(ns[1:] or ns, key=lambda n: (sum(n in got for got in have.values()), -n)))
    return [], set()


def time_bars(rows: Iterable[dict[str, Any]], pending: Iterable[dict[str, Any]] = ()) -> Series:
    """Figure 2: per worker count N the median, over the same groups at every N (`complete_groups`), of T
    at the baseline's work; the ideal is the 1-worker bar / N and the speedup the 1-worker bar / this bar,
    so both follow from the bars drawn. The note says how many groups that is of the study's."""
    rows, pending = list(rows), list(pending)
    device = labels.device_of_rows(rows)
    ns, groups = complete_groups(rows)
    vals = {n: sorted(float(r["t_same_work_s"]) for r in rows
                      if usable(r) and r["group_id"] in groups and r["workers"] == n) for n in ns}
    y = [statistics.median(vals[n]) for n in ns]
    one = y[ns.index(1)] if 1 in ns else float("nan")
    planned = planned_groups(rows, pending)
    note = ""
    if ns and len(groups) < len(planned):
        note = (f"median over {len(groups)} of {len(planned)} groups: those with a finished run at "
                f"{', '.join(labels.workers(n, device) for n in ns)} (the others have not finished)")
    return Series(f"median over {len(groups)} group" + ("s" if len(groups) != 1 else ""), [float(n) for n in ns],
                  y, ideal=[one / n for n in ns], speedup=[one / t if t > 0 else float("nan") for t in y],
                  groups=[vals[n] for n in ns], note=note)


def _per_workers(rows: Iterable[dict[str, Any]], pending: Iterable[dict[str, Any]], column: str,
                 label: str) -> Series:
    rows, pending = list(rows), list(pending)
    device = labels.device_of_rows(rows)
    vals = _values(rows, _workers, lambda r: r.get(column))
    ns = sorted(vals)
    return Series(label, [float(n) for n in ns], [statistics.median(vals[n]) for n in ns],
                  groups=[sorted(vals[n]) for n in ns],
                  note=_note(group_counts(rows, pending), ns, lambda n: labels.workers(n, device)))


def efficiency(rows: Iterable[dict[str, Any]], pending: Iterable[dict[str, Any]] = ()) -> Series:
    """Figure 3 (ideal: 1)."""
    return _per_workers(rows, pending, "efficiency", "efficiency")


def overhead(rows: Iterable[dict[str, Any]], pending: Iterable[dict[str, Any]] = ()) -> Series:
    """Figure 4 (ideal: 0)."""
    return _per_workers(rows, pending, "overhead_s", "overhead")
