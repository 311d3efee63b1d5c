"""The report's tables: the scaling table of cockpit.analysis, formatted once for Markdown and HTML."""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

# (column of the scaling table, header, format)
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("dataset", "dataset", "s"),
    ("mode", "mode", "s"),
    ("window", "window", "d"),
    ("scale", "nodes×GPUs", "s"),
    ("cpus_per_task", "cpus/task", "d"),
    ("precision", "precision", "s"),
    ("batch_size", "batch", "d"),
    ("train_time_s", "T (s)", ".2f"),
    ("speedup", "speedup", ".3f"),
    ("efficiency", "efficiency", ".3f"),
    ("overhead_s", "overhead (s)", ".2f"),
    ("karp_flatt", "Karp-Flatt", ".3f"),
    ("tokens_per_s", "tokens/s", ".0f"),
    ("verdict", "bottleneck", "s"),
)
BREAKDOWN = (
    ("data_wait_share", "data wait"),
    ("compute_share", "compute"),
    ("comm_share", "communication"),
    ("optimizer_share", "optimizer"),
)


def scaling(results: list[dict[str, Any]]) -> pd.DataFrame:
    """results -> cockpit.analysis scaling table (the single source of every number in the report)."""
    from cockpit.analysis import results_frame, scaling_table

    return scaling_table(results_frame(results))


def cell(value: Any, spec: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if spec == "s":
        return str(value)
    if spec == "d":
        return str(int(value))
    return format(float(value), spec)


def rows(table: pd.DataFrame) -> list[dict[str, Any]]:
    recs = table.to_dict("records")
    for rec in recs:
        rec["scale"] = f"{int(rec['nodes'])}×{int(rec['gpus_per_node'])}"
        if not rec.get("verdict") and rec.get("note"):
            rec["verdict"] = rec["note"]
        elif rec.get("note"):
            rec["verdict"] = f"{rec['verdict']} ({rec['note']})"
    return recs


def markdown_table(headers: list[str], body: list[list[str]]) -> str:
    def esc(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(esc(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in body]
    return "\n".join(lines)


def html_table(headers: list[str], body: list[list[str]], css_class: str = "") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    trs = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in body)
    cls = f' class="{css_class}"' if css_class else ""
    return f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{trs}</tbody></table>"


def scaling_body(table: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    headers = [h for _, h, _ in COLUMNS]
    body = [[cell(r.get(key), spec) for key, _, spec in COLUMNS] for r in rows(table)]
    return headers, body


def breakdown_body(table: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Share of accounted step time per part, for every configuration that reported a breakdown."""
    headers = ["dataset", "mode", "window", "nodes×GPUs", "cpus/task", *[h for _, h in BREAKDOWN]]
    body = []
    for r in rows(table):
        shares = [r.get(k) for k, _ in BREAKDOWN]
        if all(s is None or (isinstance(s, float) and math.isnan(s)) for s in shares):
            continue
        body.append(
            [str(r["dataset"]), str(r["mode"]), cell(r["window"], "d"), r["scale"], cell(r["cpus_per_task"], "d")]
            + ["-" if s is None or s != s else f"{100 * s:.1f}%" for s in shares]
        )
    return headers, body


def headline_body(table: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Mean speedup/efficiency/overhead per worker count: the study's headline numbers."""
    from cockpit.analysis import summary_by_workers

    if table.empty or "speedup" not in table:
        return ["GPUs", "speedup", "efficiency", "overhead (s)"], []
    summary = summary_by_workers(table)
    body = [
        [str(int(r["workers"])), cell(r["speedup"], ".3f"), cell(r["efficiency"], ".3f"), cell(r["overhead_s"], ".2f")]
        for r in summary.to_dict("records")
    ]
    return ["GPUs", "speedup", "efficiency", "overhead (s)"], body
