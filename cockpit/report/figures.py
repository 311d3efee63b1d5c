"""The study's figures as PNG files (matplotlib, Agg backend: no display needed).

The four figures of the published study draw the series of cockpit.figures.series (the TUI's plots tab draws the
same ones): medians over groups, titled so in words, with each group's own value beside the median where
it is a bar; each axis says what is drawn, worker counts are integer ticks, the ideal is drawn rather
than written, and a note under a figure flags medians over fewer groups than have a configuration there.
One waterfall per group shows, for each N-worker run, how T1/N grows term by term into T at the
baseline's work. Axis limits are set from what is drawn, so no bar or label is cut off.

Every number written on a figure is a cell of one of the report's tables, printed by the function that prints
the table's (`printed`: the headline's medians; `waterfall_printed`: the attribution's T1/N, terms, O and
T/work), so the two agree to the digit; the report gives the same values as each image's text alternative
(`Drawn.alt`) and the HTML as data beside it (`Drawn.printed`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from cockpit.figures import explain, labels, series, units
from cockpit.report import tables
from runcontract.axes import label_words

FIGURES = series.TITLES  # the figure names (and a GPU study's titles); write_figures titles by the study's device
COLORS = {"data_wait": "#8064a2", "compute": "#c0504d", "comm": "#f79646", "optimizer": "#4bacc6",
          "other": "#9bbb59", "host_bound": "#e6b9b8", "unaccounted": "#7f7f7f"}
LABEL_ROOM = 0.25  # share of an axis' span left beside the largest bar for its value label
DPI = 160  # sharp on a high-density screen and in print (each PNG ~1000 px wide), still small files
WATERFALL_FONT = 9  # points: the waterfall's bar labels and values, read at the figure's width on a phone
SAVED_HATCH = "//"  # a term below zero: seconds saved, drawn to the left (the legend says so)


class Drawn(NamedTuple):
    path: Path
    title: str
    table: str = ""  # the report section whose cells the figure prints ("" where it prints none)
    printed: tuple[dict[str, str], ...] = ()  # per row of that table: header -> the value as the figure prints it
    text_px: float = 0.0  # the height of its smallest text in the PNG's pixels (the HTML page shows it at this size)

    def alt(self) -> str:
        """The figure in words, for its image's text alternative (HTML and Markdown): its title and the
        numbers written on it, by the table's headers."""
        if not self.printed:
            return self.title
        return f"{self.title}. Written on it, as in '{self.table}': " + "; ".join(
            ", ".join(f"{h} {v}" for h, v in row.items()) for row in self.printed)


HEADLINE_TABLE = "Headline"
ATTRIBUTION_TABLE = "Where the efficiency went"
# the headline column each figure writes beside its points (time_vs_cpus writes none)
PRINTS = {"time_bars": "speedup", "efficiency": "efficiency", "overhead": "overhead (s)"}


def write_figures(rows: list[dict[str, Any]], out: Path, pending: list[dict[str, Any]] | None = None
                  ) -> dict[str, Drawn]:
    """Write fig_<name>.png for the four figures, but those `left_out` names, and fig_waterfall_<group>.png per
    group."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pending = pending or []
    paths: dict[str, Drawn] = {}
    titles = series.titles(labels.device_of_rows(rows))
    for name in series.NAMES:
        if left_out(rows) == [NONE_YET] or series.left_out(name, rows):
            continue
        fig, ax = draw_figure(name, rows, pending)
        values = printed(name, rows, pending)
        text_px = smallest_text_px(fig)
        paths[name] = Drawn(_save(fig, out / f"fig_{name}.png", plt), titles[name],
                            HEADLINE_TABLE if values else "", tuple(values), text_px)
    for group, runs in _groups(rows).items():
        fig, ax = draw_waterfall(runs)
        text_px = smallest_text_px(fig)
        paths[f"waterfall_{group}"] = Drawn(_save(fig, out / f"fig_waterfall_{group}.png", plt), ax.get_title(),
                                            ATTRIBUTION_TABLE, tuple(waterfall_printed(r) for r in runs), text_px)
    return paths


NONE_YET = "No figure yet: no run has finished beside its group's baseline."


def left_out(rows: list[dict[str, Any]]) -> list[str]:
    """One line per figure write_figures leaves out, saying why (cockpit.figures.series.left_out); NONE_YET alone
    where no run can be drawn, so none of the four figures is drawn empty."""
    if not any(series.usable(r) for r in rows):
        return [NONE_YET]
    return [line for name in series.NAMES if (line := series.left_out(name, rows))]


def smallest_text_px(fig) -> float:  # noqa: ANN001
    """The font size of the figure's smallest visible text, in pixels of the PNG it is saved as (points x DPI
    / 72): what a reader sees at the image's full size."""
    from matplotlib.text import Text

    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return min(sizes, default=0.0) * DPI / 72


def printed(name: str, rows: list[dict[str, Any]], pending: list[dict[str, Any]]) -> list[dict[str, str]]:
    """What figure `name` writes beside its points: per worker count, the headline's N and the column of
    PRINTS, as the headline table prints them (tables.headline_cells); none for time_vs_cpus."""
    column = PRINTS.get(name)
    if column is None:
        return []
    cells = tables.headline_cells(rows, pending)
    n = next(iter(cells[0])) if cells else ""
    return [{n: c[n], column: c[column]} for c in cells]


def _printed_by_n(name: str, rows: list[dict[str, Any]], pending: list[dict[str, Any]]) -> dict[float, str]:
    """printed() by worker count: the text written beside the point or bar of N workers."""
    out = {}
    for values in printed(name, rows, pending):
        n, text = values.values()
        out[float(n)] = text
    return out


def draw_figure(name: str, rows: list[dict[str, Any]], pending: list[dict[str, Any]]):  # noqa: ANN201
    """(figure, axes) of one of the four figures, titled and with its note; the caller saves or inspects it."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=DPI)
    ax.set_title(series.titles(labels.device_of_rows(rows))[name], fontsize=10)
    note = DRAW[name](ax, rows, pending) if any(series.usable(r) for r in rows) else "no finished runs yet"
    if note:
        fig.text(0.01, 0.01, note, fontsize=7, color="#a33", wrap=True)
    fig.tight_layout(rect=(0, 0.05 if note else 0, 1, 1))
    return fig, ax


def draw_waterfall(runs: list[dict[str, Any]]):  # noqa: ANN201
    """(figure, axes) of one group's waterfall."""
    import matplotlib.pyplot as plt

    bars = _waterfall_rows(runs)
    saved = any(bar[2] < 0 for bar in bars)
    fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.34 * len(bars) + (0.4 if saved else 0)), dpi=DPI)
    _waterfall(ax, bars)
    ax.set_title(f"Where the time went: {_group_label(runs[0])}", fontsize=10)
    fig.tight_layout()
    return fig, ax


def _save(fig, path: Path, plt) -> Path:  # noqa: ANN001
    fig.savefig(path, dpi=DPI, metadata={"Software": None})
    plt.close(fig)
    return path


def _worker_axis(ax, xs: list[float], device: str) -> None:  # noqa: ANN001
    """Ticks at the worker counts drawn, written as integers (never 1.2 workers)."""
    ax.set_xticks(xs, [f"{int(x)}" for x in xs])
    ax.minorticks_off()
    ax.set_xlabel(f"{labels.worker_word(device)} N")


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
    ax.set_ylim(0, max((y for s in lines for y in s.y), default=1.0) * 1.15)
    ax.legend(loc="lower left", fontsize=8)
    return lines[0].note if lines else ""


def _time_bars(ax, rows, pending) -> str:  # noqa: ANN001
    """Median bars, each group's own value as a dot on its bar, the ideal (1-worker bar / N) dashed, and
    above each bar the headline's S for that N (the median of the groups' S, printed as the headline prints
    it), which the legend says."""
    device = labels.device_of_rows(rows)
    bars = series.time_bars(rows, pending)
    speedups = _printed_by_n("time_bars", rows, pending)
    xs = list(range(len(bars.x)))
    drawn = ax.bar(xs, bars.y, color="#4878a8", width=0.6, label=f"measured: {bars.label}")
    for x, values in zip(xs, bars.groups, strict=True):
        ax.plot([x] * len(values), values, "o", color="black", markersize=3,
                label="each group" if x == 0 else None)
    for x, ideal in zip(xs, bars.ideal, strict=True):
        if ideal == ideal:
            ax.hlines(ideal, x - 0.3, x + 0.3, colors="black", linestyles="--", linewidth=1.5,
                      label="ideal: 1-worker bar / N".replace("worker", labels.worker_word(device, 1))
                      if x == 0 else None)
    for bar, n, values in zip(drawn, bars.x, bars.groups, strict=True):
        s = speedups.get(n, "-")
        label = f"S = {s} (ideal {n:g})" if s != "-" else "no 1-worker bar".replace(
            "worker", labels.worker_word(device, 1))
        ax.annotate(label, (bar.get_x() + bar.get_width() / 2, max([bar.get_height(), *values])),
                    textcoords="offset points", xytext=(0, 4), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(xs, [f"{int(n)}" for n in bars.x])
    ax.set_xlabel(f"{labels.worker_word(device)} N")
    ax.set_ylabel(series.T_LABEL)
    top = max([*bars.y, *(v for vs in bars.groups for v in vs)], default=1.0)
    ax.set_ylim(0, top * 1.15)  # room for the S labels above the tallest bar or dot
    if bars.x:  # what the numbers above the bars are: the headline's, not the ratio of these two bars
        ax.plot([], [], " ", label="S: median of the groups' S (headline)")
    # under the axes, where it hides no bar, dot or label
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=8, frameon=False)
    return bars.note


def _efficiency(ax, rows, pending) -> str:  # noqa: ANN001
    from matplotlib.ticker import FuncFormatter

    device = labels.device_of_rows(rows)
    s = series.efficiency(rows, pending)
    ax.plot(s.x, s.y, marker="o", label="measured")
    ax.axhline(1.0, color="grey", linestyle="--", label="ideal (100%)")
    written = _printed_by_n("efficiency", rows, pending)
    for x, y in zip(s.x, s.y, strict=True):
        ax.annotate(written.get(x, "-"), (x, y), textcoords="offset points", xytext=(0, -12), ha="center",
                    fontsize=8)
    ax.set_ylim(0, max([1.0, *s.y]) * 1.1)
    _worker_axis(ax, s.x, device)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: units.percent(v)))  # as every view prints E
    ax.set_ylabel(f"efficiency E = speedup / {labels.worker_word(device)} (%)")
    ax.legend(loc="lower left")
    return s.note


def _overhead(ax, rows, pending) -> str:  # noqa: ANN001
    device = labels.device_of_rows(rows)
    s = series.overhead(rows, pending)
    ax.plot(s.x, s.y, marker="o", color="#c0504d", label="measured")
    ax.axhline(0.0, color="grey", linestyle="--", label="ideal")
    written = _printed_by_n("overhead", rows, pending)
    for x, y in zip(s.x, s.y, strict=True):
        ax.annotate(f"{written.get(x, '-')} s", (x, y), textcoords="offset points", xytext=(0, 6), ha="center",
                    fontsize=8)
    _worker_axis(ax, s.x, device)
    ax.set_ylabel("overhead: T/work minus T1/N (s)")
    lo, hi = min([0.0, *s.y]), max([0.0, *s.y])
    pad = (hi - lo) * 0.15 or 1.0
    ax.set_ylim(lo - pad, hi + pad)
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
    """A group's configuration label: every word but the scale, which the figure's x axis draws."""
    return " ".join(word for axis, word in label_words(r).items() if axis != "scale")


def _waterfall_terms(r: dict[str, Any]) -> list[tuple[str, float]]:
    """(term, seconds) of a run's overhead that its waterfall draws: those of a thousandth or more."""
    return [(t, v) for t in tables.TERMS if (v := r.get(f"loss_{t}_s", 0.0)) == v and abs(v) >= 0.0005]


def waterfall_printed(r: dict[str, Any]) -> dict[str, str]:
    """What a run's waterfall writes, by the header of the attribution table's column that prints the same
    value (tables.attribution_body: the terms as explain.shown_split prints them, adding up to the printed O)."""
    o, shown = explain.shown_split(r["overhead_s"], _waterfall_terms(r))
    return {"N": tables.cell(r["workers"], "d"), labels.scale_label(labels.device_of_rows([r])): _scale(r),
            "T1/N (s)": tables.cell(r["t1_over_n_s"], ".2f"),
            **{f"{explain.TERM_LABELS[t]} (s)": tables.cell(v, "+.2f") for t, v in shown},
            "O (s)": tables.cell(o, "+.2f"), "T/work (s)": tables.cell(r["t_same_work_s"], ".2f")}


def _waterfall_rows(runs: list[dict[str, Any]]) -> list[tuple[str, float, float, str, str]]:
    """(label, left, width, colour, value written at its end) per bar: for each run T1/N, each term from the
    running total (its seconds in its label, none at its end), T/work; every number is waterfall_printed's."""
    bars = []
    for r in runs:
        values = waterfall_printed(r)
        start = r["t1_over_n_s"]
        bars.append((f"N={values['N']} ({_scale(r)}): T1/N", 0.0, start, "#bfbfbf", values["T1/N (s)"]))
        for term, v in _waterfall_terms(r):
            bars.append((f"{explain.TERM_LABELS[term]} {values[f'{explain.TERM_LABELS[term]} (s)']} s", start, v,
                         COLORS[term], ""))
            start += v
        bars.append((f"= T/work (O {values['O (s)']} s)", 0.0, r["t_same_work_s"], "#4878a8", values["T/work (s)"]))
    return bars


def _waterfall(ax, bars: list[tuple[str, float, float, str, str]]) -> None:  # noqa: ANN001
    """One bar per line, top to bottom: T1/N, then each term starting where the previous one ended
    (to the right: seconds lost; to the left, hatched: seconds saved), then T at the baseline's work."""
    from matplotlib.patches import Patch

    for y, (_, left, width, colour, value) in enumerate(bars):
        ax.barh(y, width, left=left, color=colour, edgecolor="black" if width < 0 else colour,
                hatch=SAVED_HATCH if width < 0 else None, height=0.7)
        if value:  # T1/N and T/work, as the table prints them; a term's seconds are in its label
            ax.annotate(f" {value} s", (max(left, left + width), y), va="center", fontsize=WATERFALL_FONT)
    ax.set_yticks(range(len(bars)), [b[0] for b in bars], fontsize=WATERFALL_FONT)
    ax.invert_yaxis()
    ax.set_xlabel("seconds")
    if any(bar[2] < 0 for bar in bars):
        ax.legend(handles=[Patch(facecolor="white", edgecolor="black", label="seconds lost (to the right)"),
                           Patch(facecolor="white", edgecolor="black", hatch=SAVED_HATCH,
                                 label="hatched: seconds saved (to the left)")],
                  loc="upper center", bbox_to_anchor=(0.5, -0.12 - 0.5 / max(len(bars), 1)), ncol=2,
                  fontsize=WATERFALL_FONT - 1, frameon=False)
    # explicit limits: autoscaling stops at a bar's edge (matplotlib's sticky edges), which clipped the
    # bars that end furthest right and their labels
    ends = [x for _, left, width, *_ in bars for x in (left, left + width)]
    lo, hi = min([0.0, *ends]), max([0.0, *ends])
    ax.set_xlim(lo - (hi - lo) * 0.02, hi + (hi - lo) * LABEL_ROOM)


def _scale(r: dict[str, Any]) -> str:
    return f"{r['nodes']}×{r['gpus_per_node']}"
