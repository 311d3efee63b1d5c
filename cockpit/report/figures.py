"""The study's figures as PNG files (matplotlib, Agg backend: no display needed).

The four figures of the published study draw the series of cockpit.series (the TUI's plots tab draws the
same ones); each axis says what is drawn, the ideal is drawn rather than written, and a note under a
figure flags medians over fewer groups than the study has. One waterfall per group shows, for each
N-worker run, how T1/N grows term by term into T at the baseline's work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from cockpit import explain, series

FIGURES = series.TITLES
COLORS = {"data_wait": "#8064a2", "compute": "#c0504d", "comm": "#f79646", "optimizer": "#4bacc6",
          "other": "#9bbb59", "unaccounted": "#7f7f7f"}


class Drawn(NamedTuple):
    path: Path
    title: str


def write_figures(rows: list[dict[str, Any]], out: Path, pending: list[dict[str, Any]] | None = None
                  ) -> dict[str, Drawn]:
    """Write fig_<name>.png for the four figures and fig_waterfall_<group>.png per group."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pending = pending or []
    paths: dict[str, Drawn] = {}
    for name, title in FIGURES.items():
        fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=100)
        ax.set_title(title, fontsize=10)
        note = DRAW[name](ax, rows, pending) if any(series.finished(r) for r in rows) else "no finished runs yet"
        if note:
            fig.text(0.01, 0.01, note, fontsize=7, color="#a33", wrap=True)
        fig.tight_layout(rect=(0, 0.05 if note else 0, 1, 1))
        paths[name] = Drawn(_save(fig, out / f"fig_{name}.png", plt), title)
    for group, runs in _groups(rows).items():
        bars = _waterfall_rows(runs)
        fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.28 * len(bars)), dpi=100)
        _waterfall(ax, bars)
        title = f"Where the time went: {_group_label(runs[0])}"
        ax.set_title(title, fontsize=10)
        fig.tight_layout()
        paths[f"waterfall_{group}"] = Drawn(_save(fig, out / f"fig_waterfall_{group}.png", plt), title)
    return paths


def _save(fig, path: Path, plt) -> Path:  # noqa: ANN001
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return path


def _time_vs_cpus(ax, rows, pending) -> str:  # noqa: ANN001
    lines = series.time_vs_cpus(rows, pending)
    for s in lines:
        ax.plot(s.x, s.y, marker="o", label=s.label)
    cpus = sorted({int(x) for s in lines for x in s.x})
    ax.set_xscale("log", base=2)
    ax.set_xticks(cpus, [str(c) for c in cpus])
    ax.minorticks_off()
    ax.set_xlabel("CPUs per task")
    ax.set_ylabel(series.T_LABEL)
    ax.legend()
    return lines[0].note if lines else ""


def _time_bars(ax, rows, pending) -> str:  # noqa: ANN001
    bars = series.time_bars(rows, pending)
    xs = list(range(len(bars.x)))
    drawn = ax.bar(xs, bars.y, color="#4878a8", width=0.6, label="measured T/work")
    for x, ideal in zip(xs, bars.ideal, strict=True):
        if ideal == ideal:
            ax.hlines(ideal, x - 0.3, x + 0.3, colors="black", linestyles="--", linewidth=1.5,
                      label="ideal T1/N" if x == 0 else None)
    for bar, n, s in zip(drawn, bars.x, bars.speedup, strict=True):
        label = f"S = {s:.2f}x (ideal {n:g}x)" if s == s else "no baseline"
        ax.annotate(label, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom",
                    fontsize=8)
    ax.set_xticks(xs, [f"{n:g}" for n in bars.x])
    ax.set_xlabel("workers N (nodes × GPUs per node)")
    ax.set_ylabel(series.T_LABEL)
    ax.legend(loc="upper right", fontsize=8)
    return bars.note


def _efficiency(ax, rows, pending) -> str:  # noqa: ANN001
    s = series.efficiency(rows, pending)
    ax.plot(s.x, s.y, marker="o", label="measured")
    ax.axhline(1.0, color="grey", linestyle="--", label="ideal")
    ax.set_ylim(0, 1.1)
    ax.set_xlabel("workers N")
    ax.set_ylabel("efficiency E = S/N")
    ax.legend(loc="lower left")
    return s.note


def _overhead(ax, rows, pending) -> str:  # noqa: ANN001
    s = series.overhead(rows, pending)
    ax.plot(s.x, s.y, marker="o", color="#c0504d", label="measured")
    ax.axhline(0.0, color="grey", linestyle="--", label="ideal")
    ax.set_xlabel("workers N")
    ax.set_ylabel("overhead T/work - T1/N (s)")
    ax.legend(loc="upper left")
    return s.note


DRAW = {"time_vs_cpus": _time_vs_cpus, "time_bars": _time_bars, "efficiency": _efficiency, "overhead": _overhead}


def _groups(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Group id -> its N-worker runs that have an overhead split, fewest workers first."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if not r.get("baseline") and r.get("status") == "completed" and r.get("overhead_s") == r.get("overhead_s"):
            out.setdefault(r["group_id"], []).append(r)
    return {g: sorted(rs, key=lambda r: r["workers"]) for g, rs in out.items()}


def _group_label(r: dict[str, Any]) -> str:
    return (f"{r['dataset']} {r['mode']} w{r['window']} c{r['cpus_per_task']} {r['precision']} "
            f"batch {r['batch_size']}")


def _waterfall_rows(runs: list[dict[str, Any]]) -> list[tuple[str, float, float, str]]:
    """(label, left, width, colour) per bar: for each run T1/N, each term from the running total, T/work."""
    bars = []
    for r in runs:
        start = r["t1_over_n_s"]
        bars.append((f"N={r['workers']} ({_scale(r)}): T1/N", 0.0, start, "#bfbfbf"))
        for term in (*explain.PARTS, "unaccounted"):
            v = r.get(f"loss_{term}_s", 0.0)
            if v == v and abs(v) >= 0.0005:
                bars.append((f"{explain.TERM_LABELS[term]} {v:+.2f} s", start, v, COLORS[term]))
                start += v
        bars.append((f"= T/work (O {r['overhead_s']:+.2f} s)", 0.0, r["t_same_work_s"], "#4878a8"))
    return bars


def _waterfall(ax, bars: list[tuple[str, float, float, str]]) -> None:  # noqa: ANN001
    """One bar per line, top to bottom: T1/N, then each term starting where the previous one ended
    (to the right: seconds lost; to the left, hatched: seconds saved), then T at the baseline's work."""
    for y, (_, left, width, colour) in enumerate(bars):
        ax.barh(y, width, left=left, color=colour, edgecolor="black" if width < 0 else colour,
                hatch="//" if width < 0 else None, height=0.7)
        ax.annotate(f" {left + width:.2f} s", (max(left, left + width), y), va="center", fontsize=7)
    ax.set_yticks(range(len(bars)), [b[0] for b in bars], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("seconds")
    ax.margins(x=0.15)


def _scale(r: dict[str, Any]) -> str:
    return f"{r['nodes']}×{r['gpus_per_node']}"
