"""The study's four figures as PNG files (matplotlib, Agg backend: no display needed).

Same figures as the TUI's plots view: T vs CPUs per task per GPU count; T bars per GPU count with the
measured speedup against the ideal; efficiency vs GPUs; overhead vs GPUs. Values are medians over the
other axes of the configurations that finished.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

FIGURES = {
    "time_vs_cpus": "Training time vs CPUs per task",
    "time_bars": "Training time per GPU count, speedup measured vs ideal",
    "efficiency": "Parallel efficiency vs GPUs",
    "overhead": "Overhead TN - T1/N vs GPUs",
}


def _finished(table: pd.DataFrame) -> pd.DataFrame:
    if table.empty or "train_time_s" not in table:
        return table.iloc[0:0]
    return table[table["train_time_s"].notna()]


def write_figures(table: pd.DataFrame, out: Path) -> dict[str, Path]:
    """Write fig_<name>.png for each figure; returns name -> path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = _finished(table)
    paths: dict[str, Path] = {}
    for name, title in FIGURES.items():
        fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
        ax.set_title(title, fontsize=11)
        if done.empty:
            ax.text(0.5, 0.5, "no finished runs yet", ha="center", va="center", transform=ax.transAxes)
        else:
            DRAW[name](ax, done)
        fig.tight_layout()
        path = out / f"fig_{name}.png"
        fig.savefig(path, metadata={"Software": None})
        plt.close(fig)
        paths[name] = path
    return paths


def _time_vs_cpus(ax, done: pd.DataFrame) -> None:
    med = done.groupby(["workers", "cpus_per_task"])["train_time_s"].median().reset_index()
    for workers, part in med.groupby("workers"):
        ax.plot(part["cpus_per_task"], part["train_time_s"], marker="o", label=f"{workers} GPU(s)")
    ax.set_xscale("log", base=2)
    cpus = sorted(int(c) for c in med["cpus_per_task"].unique())
    ax.set_xticks(cpus, [str(c) for c in cpus])
    ax.minorticks_off()
    ax.set_xlabel("CPUs per task")
    ax.set_ylabel("training time T (s)")
    ax.legend()


def _time_bars(ax, done: pd.DataFrame) -> None:
    med = done.groupby("workers").agg(t=("train_time_s", "median"), s=("speedup", "median")).reset_index()
    bars = ax.bar([str(w) for w in med["workers"]], med["t"], color="#4878a8")
    for bar, w, s in zip(bars, med["workers"], med["s"], strict=True):
        label = f"{s:.2f}x / {w}x ideal" if s == s else "no baseline"
        ax.annotate(label, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom", fontsize=9)
    ax.set_xlabel("GPUs (nodes × GPUs per node)")
    ax.set_ylabel("training time T (s)")


def _efficiency(ax, done: pd.DataFrame) -> None:
    med = done.groupby("workers")["efficiency"].median().dropna()
    ax.plot(med.index, med.values, marker="o", label="measured")
    ax.axhline(1.0, color="grey", linestyle="--", label="ideal")
    ax.set_ylim(0, 1.1)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("efficiency S/N")
    ax.legend()


def _overhead(ax, done: pd.DataFrame) -> None:
    med = done.groupby("workers")["overhead_s"].median().dropna()
    ax.plot(med.index, med.values, marker="o", color="#c0504d")
    ax.axhline(0.0, color="grey", linestyle="--")
    ax.set_xlabel("GPUs")
    ax.set_ylabel("overhead TN - T1/N (s)")


DRAW = {"time_vs_cpus": _time_vs_cpus, "time_bars": _time_bars, "efficiency": _efficiency, "overhead": _overhead}
