"""Write a study's report: report.md, scaling.csv, report.html (self-contained) and fig_*.png."""

from __future__ import annotations

import base64
import html
import time
from dataclasses import dataclass
from pathlib import Path

from cockpit.report import figures, tables
from cockpit.report.source import ReportInput

CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px;color:#222}
table{border-collapse:collapse;font-size:13px;margin:1em 0}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}
th{background:#eef}
td:nth-child(-n+7),td:last-child{text-align:left}
img{max-width:48%;margin:0.5%;border:1px solid #ddd}
.meta{color:#666}
"""


@dataclass
class ReportFiles:
    markdown: Path
    csv: Path
    html: Path
    figures: dict[str, Path]
    configurations: int


def write_report(inp: ReportInput, out: str | Path, now: float | None = None) -> ReportFiles:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    table = tables.scaling(inp.results)
    csv_path = out / "scaling.csv"
    table.to_csv(csv_path, index=False)
    figs = figures.write_figures(table, out)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(time.time() if now is None else now))
    sections = _sections(inp, table)
    md_path = out / "report.md"
    md_path.write_text(_markdown(inp, stamp, sections, figs), encoding="utf-8")
    html_path = out / "report.html"
    html_path.write_text(_html(inp, stamp, sections, figs), encoding="utf-8")
    return ReportFiles(md_path, csv_path, html_path, figs, len(table))


def _sections(inp: ReportInput, table) -> list[tuple[str, str, list[str], list[list[str]]]]:
    """(title, intro, headers, body) for each table of the report."""
    out = [
        (
            "Headline",
            "Mean over groups of speedup S = T1/TN, efficiency E = S/N and overhead TN - T1/N per GPU count.",
            *tables.headline_body(table),
        ),
        (
            "Scaling per configuration",
            "T is the training time of result.json (median over repeats); the baseline of each group is its "
            "1 node × 1 GPU run; Karp-Flatt e = (1/S - 1/N)/(1 - 1/N).",
            *tables.scaling_body(table),
        ),
        (
            "Time breakdown",
            "Share of the accounted step time per part (sums over all steps of rank 0).",
            *tables.breakdown_body(table),
        ),
    ]
    if inp.failed_jobs:
        out.append(
            (
                "Jobs without a result",
                "Excluded from the maths above.",
                ["configuration", "job", "state", "exit code", "reason"],
                [
                    [f["config_id"], str(f["job_id"] or "-"), f["state"],
                     "-" if f.get("exit_code") is None else str(f["exit_code"]), f["reason"] or ""]
                    for f in inp.failed_jobs
                ],
            )
        )
    return out


def _markdown(inp: ReportInput, stamp: str, sections, figs: dict[str, Path]) -> str:
    parts = [
        f"# Scaling report: {inp.study}",
        "",
        f"Cluster: {inp.cluster} · results: {len(inp.results)} · source: `{inp.source}` · written {stamp}",
    ]
    for title, intro, headers, body in sections:
        parts += ["", f"## {title}", "", intro, ""]
        parts.append(tables.markdown_table(headers, body) if body else "_none yet_")
    parts += ["", "## Figures", ""]
    for name, path in figs.items():
        parts.append(f"![{figures.FIGURES[name]}]({path.name})")
    parts += ["", "Full-precision numbers: `scaling.csv`.", ""]
    return "\n".join(parts)


def _html(inp: ReportInput, stamp: str, sections, figs: dict[str, Path]) -> str:
    body = [
        f"<h1>Scaling report: {html.escape(inp.study)}</h1>",
        f'<p class="meta">Cluster: {html.escape(inp.cluster)} · results: {len(inp.results)} · '
        f"source: <code>{html.escape(inp.source)}</code> · written {html.escape(stamp)}</p>",
    ]
    for title, intro, headers, rows in sections:
        body.append(f"<h2>{html.escape(title)}</h2><p>{html.escape(intro)}</p>")
        body.append(tables.html_table(headers, rows) if rows else "<p><em>none yet</em></p>")
    body.append("<h2>Figures</h2>")
    for name, path in figs.items():
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        alt = html.escape(figures.FIGURES[name])
        body.append(f'<img alt="{alt}" title="{alt}" src="data:image/png;base64,{data}">')
    return (
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\">"
        f"<title>Scaling report: {html.escape(inp.study)}</title><style>{CSS}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )
