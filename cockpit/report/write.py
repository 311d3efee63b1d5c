"""Write a study's report: report.md, scaling.csv, report.html (self-contained) and fig_*.png."""

from __future__ import annotations

import base64
import html
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cockpit.figures import labels
from cockpit.forecast import gpu_fit
from cockpit.forecast.advice.options import UNREPEATED_NOISE
from cockpit.report import figures, full_run_section, html_tables, tables
from cockpit.report.source import ReportInput
from cockpit.workloads import workload_class
from runcontract.modes import make_dirs

if TYPE_CHECKING:
    from cockpit.forecast.compare import Comparison
    from cockpit.forecast.full_run import FullRunPlan

# One page from a 390 px phone to a wide screen: the text wraps at the page's width; a table shows its numbers
# in a grid, what every row shares above it and its prose under each row, or one card per row where the page is
# narrower than its grid (cockpit.report.html_tables, whose media queries follow this sheet). Prose never widens
# a table (its block is 0 wide, stretched to the row's width); a table with prose is at least 48em wide. A box
# around each table scrolls sideways should one ever be wider, so the page never does. The figures fill the
# width in one or more columns; a tap on one shows it over the page at its full size (the PNG's own pixels,
# where its smallest text is FULL_TEXT_PX or more), scrolling inside it, with a link that closes it (CSS
# :target: the page holds no script).
CSS = """
body{font-family:system-ui,sans-serif;margin:0 auto;padding:0.5em 1em 2em;max-width:1400px;color:#222;line-height:1.4}
h1{font-size:1.6em}
h1,h2,h3,p,li,code{overflow-wrap:anywhere}
.scroll{overflow-x:auto;max-width:100%;margin:0.2em 0 1em}
table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#eef}
.num{text-align:right}
td.num{white-space:nowrap}
tr:has(+tr.more) td{border-bottom:1px dotted #ddd}
tr.more td{border-top:0;background:#fafafa;color:#333}
tr.more td>*{width:0;min-width:100%}
table:has(tr.more){min-width:min(100%,48em)}
tr.more .h,p.same{color:#555}
tr.more .h{font-weight:600}
summary{cursor:pointer}
p.same{font-size:13px;margin:0.5em 0 0}
.figures{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,480px),1fr));gap:1em}
figure{margin:0}
figure.wide{grid-column:1/-1}
figure img{max-width:100%;height:auto;border:1px solid #ddd}
figure>a.close{display:none}
figure:target{position:fixed;inset:0;z-index:9;background:#fff;overflow:auto;padding:2.4em 0.5em 0.5em}
figure:target img{max-width:none;width:auto}
figure:target>a.close{display:block;position:fixed;top:0.4em;right:0.8em;padding:0.2em 0.6em;background:#eef;
border:1px solid #99a;border-radius:4px}
details.waterfalls{margin:0.5em 0 1em}
details.waterfalls>summary{font-weight:600}
.pair{margin-left:1em}
.meta{color:#666}
"""


@dataclass
class ReportFiles:
    markdown: Path
    csv: Path
    html: Path
    figures: dict[str, figures.Drawn]
    configurations: int
    full_run_csv: Path | None = None  # with --full-run: full_run.csv


def write_report(inp: ReportInput, out: str | Path, now: float | None = None,
                 comparison: Comparison | None = None, full_run: FullRunPlan | None = None) -> ReportFiles:
    """`comparison`: this study (A) against another (`cockpit report --compare`), a "Compared with" section;
    `full_run`: the production run on every configuration (`--full-run`), a "Time to result" section and
    full_run.csv."""
    out = Path(out)
    make_dirs(out)  # private (0700) where it is made: the report names runs and their figures
    from cockpit.forecast.analysis import write_scaling_csv

    rows = tables.scaling(inp.results)
    csv_path = out / "scaling.csv"
    with csv_path.open("w", newline="", encoding="utf-8") as f:
        write_scaling_csv(rows, f)
    figs = figures.write_figures(rows, out, inp.pending)
    left_out = figures.left_out(rows)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(time.time() if now is None else now))
    sections = _sections(inp, rows)
    md_path = out / "report.md"
    md_path.write_text(_markdown(inp, stamp, sections, figs, comparison, left_out, full_run), encoding="utf-8")
    html_path = out / "report.html"
    html_path.write_text(_html(inp, stamp, sections, figs, comparison, left_out, full_run), encoding="utf-8")
    full_run_csv = full_run_section.write_csv(full_run, out) if full_run is not None else None
    return ReportFiles(md_path, csv_path, html_path, figs, len(rows), full_run_csv)


def _sections(inp: ReportInput, rows: list[dict]) -> list[tuple[str, str, list[str], list[list[str]]]]:
    """(title, intro, headers, body) for each table of the report; the workers named as the results name their
    device, else as the study file does (a report with no result yet)."""
    device = labels.device_of_rows(rows, inp.device)
    words = labels.worker_word(device)
    out = [
        (
            "Headline",
            f"Median over groups, per number of {words} N, of speedup S, efficiency E = S/N and overhead O, "
            "beside each group's S and O (from 'Scaling per configuration'); 'groups' says how many groups "
            f"have both the N-{labels.worker_word(device, 1)} run and their baseline, of those with an "
            f"N-{labels.worker_word(device, 1)} configuration (as the figures' notes count them).",
            *tables.headline_body(rows, inp.pending),
        ),
        (
            "Scaling per configuration",
            "T is the training time of result.json (first step start to last step end; the run with the median "
            "T represents repeats). work = samples / the baseline's samples, so T/work is T at the baseline's "
            f"work; T1 is the group's {labels.baseline_label(device)} run; N is the number of {words}. "
            "S = T1/(T/work), E = S/N, O = T/work - T1/N, Karp-Flatt e = (1/S - 1/N)/(1 - 1/N). "
            "MFU and energy: 'GPU use and energy'. " + tables.gpu_footnote(rows),
            *tables.scaling_body(rows),
        ),
        (
            "GPU use and energy",
            "MFU = FLOP/token x tokens/s / (the device's dense peak at the run's precision x GPUs); FLOP/token = "
            "6 N + 12 L d W (PaLM, appendix B), the peaks from NVIDIA's datasheets (docs/gpu.md). GPU busy: NVML's "
            "utilisation over T, and the trace's GPU-busy time where one was recorded; below 50% the run is "
            "host-bound and host-bound = compute x (1 - busy) is split out of compute. Energy: the GPUs' NVML "
            "energy counter over T (power integrated where it is missing), on CPU the RAPL package counters; "
            "J/sample and J/token divide it by the run's samples and tokens. " + tables.study_energy(rows),
            *tables.gpu_body(rows),
        ),
        (
            "Where the efficiency went",
            "The overhead O of each N-worker run split into seconds, one term per part of the step time: "
            "term = part/work - baseline part/N. The terms add up to O; docs/analysis.md explains each.",
            *tables.attribution_body(rows),
        ),
        (
            "Advice",
            "For each N-worker run, one row per change, in the order of the largest loss it acts on: the study "
            "keys to set, the values to try, and what the prediction model expects: T and E = T1'/(T'/work)/N "
            "after the change (T1' the baseline after it), from the measured run with each part of T changed "
            "as the model changes it (docs/prediction.md). Where the model has no formula for a key it says so "
            "instead of a figure. A loss is seconds of T/work (its term of O); a gain is seconds of T (T - T'), "
            "counted once per change even where the change acts on several losses. A host-bound run (a "
            "baseline too) gets its own rows: a larger batch per GPU priced from its GPU busy share and host time "
            "per step, train.compile and a fused optimizer (docs/prediction.md, 'Host-bound advice').",
            *tables.advice_body(rows),
        ),
        (
            "Predicted vs measured",
            "T each N-worker run was predicted to take before it ran (first: kept in the store when the plan first "
            "predicted it; '-' where it ran before its baseline had finished), and T/work and S as refit now, from "
            "its group's baseline and the link bandwidth the study's runs measured (else the preflight's, else the "
            "site profile; docs/prediction.md), beside the measured ones. error = measured / predicted - 1.",
            *tables.prediction_body(rows, inp.first),
        ),
        *_key_effects_section(rows),
        *_fit_section(inp, rows),
        (
            "Time breakdown and fixed costs",
            "Seconds of T per part (rank 0; they add up to T), and the costs outside T that also take "
            "node-hours: start-up, token preparation, evaluation, checkpoints.",
            *tables.breakdown_body(rows),
        ),
        (
            "Per rank",
            "Each rank's breakdown of the multi-worker runs: result.json's breakdown_by_rank, or where that lacks "
            "ranks, the intervals each rank wrote to metrics.jsonl summed (used only when rank 0's sums are its "
            "result.json breakdown). host: '-' where not known (a run on several hosts that did not name each "
            "rank's). The rank that waits least in all-reduce is the one the others wait for (the straggler).",
            *tables.ranks_body(rows),
        ),
    ]
    if any(r.get("quality_metric") for r in rows):
        out += [
            (
                "Model quality",
                "What each scored run learned, beside its group's 1 × 1 run: a faster run that learns less is "
                "not a speedup. macro-F1 is the mean of the listed per-class F1 (N, S, V, F for AAMI beat "
                "classes), recomputed from result.json's confusion matrix; a foundation run's masked loss is "
                "its mean cross-entropy over the masked tokens (lower is better). change = value - 1×1 value.",
                *tables.quality_body(rows),
            ),
        ]
    per_class = tables.class_body(rows)
    if per_class[1]:  # only fine-tune runs have classes: a foundation study has no such section, not "none yet"
        out.append(
            (
                "Per class",
                "Each fine-tune run's classes on its test split: Se = correct / support, +P = correct / "
                "predicted as the class, F1 = 2·Se·+P/(Se + +P).",
                *per_class,
            )
        )
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


def _key_effects_section(rows: list[dict]) -> list[tuple[str, str, list[str], list[list[str]]]]:
    """"What each swept key did", where some runs differ in one swept key only (none: no section)."""
    headers, body = tables.key_effects_body(rows)
    if not body:
        return []
    return [(
        "What each swept key did",
        "Runs that differ in one swept key only, at the same scale, side by side: T and samples of each, the "
        "time per sample after the change over before (below 1: faster), and each part of T moved, in seconds "
        "at the changed run's samples (before's part x samples after / samples before, so a larger batch is "
        "not charged for its extra work). Measured on the runs' own device: on CPU workers there is no "
        "host-to-device copy, so a key that acts on one (pinned memory) has nothing to speed up. A change "
        f"within {UNREPEATED_NOISE:.0%} of the time per sample is within what one configuration's runs "
        "differ by on a shared machine, and said so.",
        headers, body,
    )]


def _fit_section(inp: ReportInput, rows: list[dict]) -> list[tuple[str, str, list[str], list[list[str]]]]:
    """"Largest model per GPU", where it applies: a GPU study's, judged on its site's GPU; a CPU study's only
    where it compares strategies (what they would fit on a GPU is what such a study is for), and it says so;
    none for any other CPU study (the demo's workers have no GPU memory to judge)."""
    device = labels.device_of_rows(rows, inp.device)
    words = labels.worker_word(device)
    if device == "cpu" and "strategy" not in tables.shown_axes(rows):
        return []
    if rows and not any((w := workload_class(r)) is not None and w.model_shape_known for r in rows):
        return []  # the ladder's shapes are [model]'s: no run here has such a model
    gpu_bytes, gpu_source = gpu_fit.reference_gpu(inp.cluster)
    planning = (f"This study ran on CPU {words}: this is what its strategies would fit were it run on GPUs. "
                if device == "cpu" else "")
    return [(
        "Largest model per GPU",
        planning
        + f"Per strategy and number of {words} N at the study's batch (per {labels.worker_word(device, 1)}) "
        f"and window: the largest of cockpit.forecast.gpu_fit.LADDER's shapes (heads of {gpu_fit.HEAD_DIM}) that fits "
        f"one GPU of {gpu_bytes / 1e9:g} GB ({gpu_source}). Per rank: model states at the bytes per "
        "parameter shown (fp32 parameters 4, gradients 4, AdamW's moments 8, divided by N where the strategy "
        "shards them), what FSDP gathers for a while (one block's parameters; all of them without "
        "resharding), and activations s·b·h·(34 + 5·a·s/h) bytes per layer at 16 bits (Korthikanti et al. "
        "2022; twice that in fp32) plus the logits and their gradient in fp32. It fits when model states + "
        "gathered + activations ≤ the GPU's memory, as the plan's memory flag judges (docs/strategies.md).",
        *tables.fit_body(rows, gpu_bytes),
    )]


def _counts(inp: ReportInput) -> str:
    """How many results there are and how many configurations have none yet (never hidden)."""
    done = sum(1 for r in inp.results if r.get("status", "completed") == "completed")
    text = f"results: {done} completed"
    if len(inp.results) > done:
        text += f", {len(inp.results) - done} failed"
    if inp.pending:
        text += f"; {len(inp.pending)} configurations without a result yet"
        if inp.changed:
            text += f" ({len(inp.changed)} of them changed since they ran: {'; '.join(inp.changed)})"
        if inp.failed_jobs:
            text += f" ({len(inp.failed_jobs)} of them failed: see 'Jobs without a result')"
    return text


def _markdown(inp: ReportInput, stamp: str, sections, figs: dict[str, figures.Drawn],
              comparison: Comparison | None = None, left_out: list[str] | None = None,
              full_run: FullRunPlan | None = None) -> str:
    parts = [
        f"# Scaling report: {inp.study}",
        "",
        f"Cluster: {inp.cluster} · {_counts(inp)} · source: `{inp.source}` · written {stamp}",
    ]
    for title, intro, headers, body in sections:
        parts += ["", f"## {title}", "", intro, ""]
        parts.append(tables.markdown_table(headers, body) if body else "_none yet_")
    if comparison is not None:
        from cockpit.report.comparison import markdown_section

        parts += ["", *markdown_section(comparison)]
    if full_run is not None:
        parts += ["", *full_run_section.markdown_section(full_run)]
    parts += ["", "## Figures", ""]
    for fig in figs.values():
        parts.append(f"![{fig.alt()}]({fig.path.name})")
    parts += [f"_{line}_" for line in left_out or []]
    parts += ["", "Full-precision numbers: `scaling.csv`.", ""]
    return "\n".join(parts)


def _html(inp: ReportInput, stamp: str, sections, figs: dict[str, figures.Drawn],
          comparison: Comparison | None = None, left_out: list[str] | None = None,
          full_run: FullRunPlan | None = None) -> str:
    """The page a reader opens: the headline and the study's figures first, then every table; the waterfalls,
    a page wide each, folded under the table whose numbers they draw ('Where the efficiency went')."""
    summary = {n: f for n, f in figs.items() if not n.startswith("waterfall_")}
    waterfalls = {n: f for n, f in figs.items() if n.startswith("waterfall_")}
    body = [
        f"<h1>Scaling report: {html.escape(inp.study)}</h1>",
        f'<p class="meta">Cluster: {html.escape(inp.cluster)} · {html.escape(_counts(inp))} · '
        f"source: <code>{html.escape(inp.source)}</code> · written {html.escape(stamp)}</p>",
    ]
    for index, (title, intro, headers, rows) in enumerate(sections):
        body.append(f"<h2>{html.escape(title)}</h2><p>{html.escape(intro)}</p>")
        body.append(html_tables.html_table(headers, rows) if rows else "<p><em>none yet</em></p>")
        if index == 0:  # after the headline
            body.append(_html_figures(summary, left_out or []))
        if title == figures.ATTRIBUTION_TABLE and waterfalls:
            body.append(_html_waterfalls(waterfalls))
    if comparison is not None:
        from cockpit.report.comparison import html_section

        body.append(html_section(comparison))
    if full_run is not None:
        body.append(full_run_section.html_section(full_run))
    page = "".join(body)
    return (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Scaling report: {html.escape(inp.study)}</title><style>{CSS}{html_tables.card_css(page)}</style></head>"
        f"<body>{page}</body></html>\n"
    )


FULL_TEXT_PX = 10  # the least a figure's smallest text measures once tapped open (CSS pixels)


def _html_figures(figs: dict[str, figures.Drawn], left_out: list[str]) -> str:
    """The study's figures, each shown full size by a tap (`_figure`), and one line per figure left out."""
    items = "".join(_figure(name, fig) for name, fig in figs.items())
    hint = '<p class="meta">Tap or click a figure to see it full size.</p>' if figs else ""
    gone = "".join(f'<p class="meta">{html.escape(line)}</p>' for line in left_out)
    return (f'<h2 id="figures">Figures</h2>{hint}'
            + (f'<div class="figures">{items}</div>' if items else "" if left_out else "<p><em>none yet</em></p>")
            + gone)


def _html_waterfalls(figs: dict[str, figures.Drawn]) -> str:
    """The waterfalls, folded: a page wide each, they would push the tables after them a screen down apiece."""
    items = "".join(_figure(name, fig, wide=True, back="waterfalls") for name, fig in figs.items())
    return (f'<details class="waterfalls" id="waterfalls"><summary>Figures: where the time went, one per group '
            f'({len(figs)}; tap one to see it full size)</summary><div class="figures">{items}</div></details>')


def _figure(name: str, fig: figures.Drawn, wide: bool = False, back: str = "figures") -> str:
    """One figure, embedded (the page stays one self-contained file), a link to itself around its image: the
    tap that shows it full size (CSS :target), and a link back that closes it. Its image's text alternative
    is its title and the numbers written on it, which the figure's data-printed attribute holds too (header ->
    value, per row of the table named by data-table), as figures.Drawn carries them from the function that
    wrote them; data-text-px is the size of its smallest text in the PNG's pixels."""
    data = base64.b64encode(fig.path.read_bytes()).decode("ascii")
    anchor = f"fig-{name}"
    printed = (f' data-table="{html.escape(fig.table)}" data-printed="{html.escape(json.dumps(fig.printed))}"'
               if fig.printed else "")
    cls = ' class="wide"' if wide else ""
    return (f'<figure id="{anchor}"{cls}{printed} data-text-px="{fig.text_px:.1f}">'
            f'<a href="#{anchor}" class="open"><img alt="{html.escape(fig.alt())}" src="data:image/png;base64,{data}">'
            f'</a><a href="#{back}" class="close">close</a></figure>')
