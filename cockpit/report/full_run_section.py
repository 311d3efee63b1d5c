"""The report's "Time to result" section (`cockpit report STUDY --out DIR --full-run UNIT=AMOUNT`): the table and
the lines `cockpit plan --full-run` prints, from the same words (cockpit.forecast.full_run_words), and
full_run.csv, the notebook's records with every figure's 90% interval."""

from __future__ import annotations

import csv
import html
from pathlib import Path

from cockpit.forecast.full_run import FullRunPlan
from cockpit.forecast.full_run_words import records, shown_table, summary_lines
from cockpit.report import html_tables, tables

TITLE = "Time to result"
CSV_FILE = "full_run.csv"


def _title(plan: FullRunPlan) -> str:
    return f"{TITLE}: full run of {plan.run.words()}"


def _intro() -> str:
    return ("Each configuration running the production run: T, the time limit's jobs, the queue's start, the "
            "finish, node-hours, kWh and cost (docs/full-run.md); 90%: a predicted figure's 90% interval (- where "
            "measured). Every input is in the lines under the table; full_run.csv holds each figure's interval.")


def markdown_section(plan: FullRunPlan) -> list[str]:
    headers, body = shown_table(plan)
    return [f"## {_title(plan)}", "", _intro(), "",
            tables.markdown_table(headers, body) if body else "_no configuration has figures for the full run_", "",
            *(f"- {line}" for line in summary_lines(plan))]


def html_section(plan: FullRunPlan) -> str:
    headers, body = shown_table(plan)
    table = html_tables.html_table(headers, body) if body else "<p><em>no configuration has figures</em></p>"
    lines = "".join(f"<li>{html.escape(line)}</li>" for line in summary_lines(plan))
    return f"<h2>{html.escape(_title(plan))}</h2><p>{html.escape(_intro())}</p>{table}<ul>{lines}</ul>"


def write_csv(plan: FullRunPlan, out: Path) -> Path:
    """full_run.csv: one row per configuration, the notebook's records (full_run_words.records)."""
    rows = records(plan)
    path = out / CSV_FILE
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["config_id"])
        writer.writeheader()
        writer.writerows(rows)
    return path
