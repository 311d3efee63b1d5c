"""Pure view-models: a StudySnapshot in, table rows and plot series out.

No Textual here, so the same functions drive the widgets, the benchmarks and the unit tests, and a
1000-configuration refresh costs only list building.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import cast

from rich.text import Text

from cockpit import explain, labels
from cockpit.snapshot import DONE_STATES, FAILED_STATES, ConfigRow, GpuSeries, JobRow, StudySnapshot
from cockpit.spec import config_label  # noqa: F401  (the views name it model.config_label)
from cockpit.tui import format as fmt

GROUP_AXES = ("dataset", "mode", "window", "precision", "batch_size", "cpus_per_task", "gpus_per_node", "nodes")
# the axes a row is told apart by, in the order the frozen identity columns show them ("scale" = nodes x GPUs)
IDENTITY_AXES = ("dataset", "mode", "window", "scale", "cpus_per_task", "precision", "batch_size")
FOLDABLE = ("dataset", "mode", "window", "cpus_per_task", "precision", "batch_size")
RUNNING = ("running", "completing")
IDLE_UTIL_PCT = 5.0
IDLE_SAMPLES = 5


@dataclass(frozen=True)
class Column:
    """A table column; a fixed width for columns whose values change live (no re-measuring per update)."""

    key: str
    label: str
    width: int | None = None


# every column the scaling table can show, by key; labels carry the unit where the cells do not
SCALING_COLUMN = {
    "mark": Column("mark", " ", 1),
    "dataset": Column("dataset", "dataset"),
    "mode": Column("mode", "mode"),
    "window": Column("window", "window"),
    "scale": Column("scale", "nodes×GPUs"),
    "cpus_per_task": Column("cpus_per_task", "CPUs/task"),
    "precision": Column("precision", "precision"),
    "batch_size": Column("batch_size", "batch"),
    "state": Column("state", "state", 14),
    "time": Column("time", "T s", 6),
    "work": Column("work", "work", 5),
    "t_same_work": Column("t_same_work", "T/work s", 8),
    "speedup": Column("speedup", "speedup", 7),
    "efficiency": Column("efficiency", "eff", 4),
    "overhead": Column("overhead", "overhead s", 10),
    "tokens": Column("tokens", "tok/s avg", 9),
    "verdict": Column("verdict", "where the time went"),
    "quality": Column("quality", "quality Δ1×1", 14),
}
FIGURES = ("state", "speedup", "efficiency", "time", "t_same_work", "work", "overhead", "tokens", "verdict")
# every column in the historical order (headless consumers and the report's cross-check index cells by it)
SCALING_COLUMNS = tuple(SCALING_COLUMN[k] for k in (
    "mark", "dataset", "mode", "window", "scale", "cpus_per_task", "precision", "state", "time", "work",
    "t_same_work", "speedup", "efficiency", "overhead", "tokens", "verdict"))
SORTABLE = tuple(k for k in SCALING_COLUMN if k != "mark")

AXIS_WORDS = {"dataset": "{}", "mode": "{}", "window": "window {}", "cpus_per_task": "{} CPUs/task",
              "precision": "{}", "batch_size": "batch {}"}


@dataclass(frozen=True)
class Layout:
    """Which columns the scaling table shows for a study: axes with one value in the whole study are folded
    into a subtitle, the axes left are frozen on the left (scrolling right keeps a row's identity), and the
    figures follow, most telling first, so speedup and efficiency fit 80 columns."""

    columns: tuple[Column, ...]
    fixed: int  # frozen columns: the mark and the identity axes
    constant: tuple[tuple[str, object], ...] = ()
    device: str = "gpu"

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(c.key for c in self.columns)

    @property
    def worker_word(self) -> str:
        return labels.worker_word(self.device)

    def subtitle(self) -> str:
        """The folded axes in words, e.g. "all runs: synthetic · foundation · fp32 · batch 8"."""
        words = [AXIS_WORDS[a].format(v) for a, v in self.constant]
        if self.device == "cpu":
            words.append("CPU workers (processes)")
        return "all runs: " + " · ".join(words) if words else ""


FULL_LAYOUT = Layout(SCALING_COLUMNS, fixed=0)


LABEL_PARTS = (("dataset", "{}"), ("mode", "{}"), ("window", "w{}"), ("scale", "{}"), ("cpus_per_task", "c{}"),
               ("precision", "{}"), ("batch_size", "b{}"))


def folded_axes(snapshot: StudySnapshot) -> frozenset[str]:
    """The axes with one value in the whole study (said once in the subtitle, not on every row)."""
    if not snapshot.configs:
        return frozenset()
    return frozenset(a for a in FOLDABLE if len({str(r.values.get(a)) for r in snapshot.configs}) == 1)


def short_label(values: dict[str, object], folded: frozenset[str] = frozenset()) -> str:
    """config_label without the folded axes: `w256 1x2 c1` where dataset, mode, precision and batch are
    the same for every run (the full label is in the status line and the run detail)."""
    out = []
    for axis, pattern in LABEL_PARTS:
        if axis in folded:
            continue
        value = f"{values.get('nodes', 1)}x{values.get('gpus_per_node', 1)}" if axis == "scale" else values.get(axis, "?")
        out.append(pattern.format(value))
    return " ".join(out)


def study_device(snapshot: StudySnapshot, hint: str | None = None) -> str:
    """"cpu" when the study trains on CPUs (its results say so, or the study file), else "gpu"
    (cockpit.labels, which the report's words come from too)."""
    return labels.device_of(((row.analysis or {}).get("device") or (row.result or {}).get("device")
                             for row in snapshot.configs), hint)


def scaling_layout(snapshot: StudySnapshot, device_hint: str | None = None) -> Layout:
    """The screen's layout for a study (see Layout)."""
    device = study_device(snapshot, device_hint)
    folded = folded_axes(snapshot)
    constant = [(a, snapshot.configs[0].values.get(a)) for a in IDENTITY_AXES if a in folded]
    identity = [a for a in IDENTITY_AXES if a not in folded]
    columns = [SCALING_COLUMN["mark"]]
    for axis in identity:
        col = SCALING_COLUMN[axis]
        if axis == "scale":
            col = Column("scale", labels.scale_label(device))
        columns.append(col)
    columns += [SCALING_COLUMN[k] for k in FIGURES]
    metrics = {r.quality_metric for r in snapshot.configs if r.quality_metric}
    if metrics:  # only a study whose runs are scored: its quality beside the verdict, named when it is one metric
        label = f"{metrics.pop()} Δ1×1" if len(metrics) == 1 else SCALING_COLUMN["quality"].label
        columns.insert(-1, Column("quality", label, max(14, len(label))))
    return Layout(tuple(columns), fixed=1 + len(identity), constant=tuple(constant), device=device)


QUEUE_COLUMNS = (
    Column("config", "configuration"),
    Column("job", "job"),
    Column("state", "state", 13),
    Column("elapsed", "elapsed / limit", 15),
    Column("nodes", "nodes"),
    Column("nodelist", "node list"),
    Column("reason", "reason"),
    Column("attempt", "try"),
)

GPU_JOB_COLUMNS = (
    Column("config", "configuration"),
    Column("job", "job"),
    Column("state", "state", 13),
    Column("allocated", "allocated / limit", 17),
    Column("nodes", "nodes"),
    Column("time", "T s", 8),
    Column("outside", "outside T s", 11),
)

GPU_COLUMNS = (
    Column("host", "host"),
    Column("gpu", "gpu"),
    Column("util", "util", 5),
    Column("util_spark", "utilisation over time", 24),
    Column("mem", "memory", 14),
    Column("mem_spark", "memory over time", 16),
    Column("power", "power", 7),
    Column("temp", "temp", 7),
    Column("flag", "flag", 10),
)


@dataclass(frozen=True)
class Row:
    """One table row: a stable key (config or job id) and its rendered cells."""

    key: str
    cells: tuple[object, ...]
    header: bool = False


STATE_WORDS = {"completed": "done", "not_submitted": "not submitted"}


def state_word(state: str) -> str:
    """A configuration's state in the header's words ("done", not "completed")."""
    return STATE_WORDS.get(state, state.replace("_", " "))


def _state_cell(row: ConfigRow, live: bool) -> Text:
    """The state; a running row of a live study shows its progress and eta (a recording has none to show)."""
    if live and row.state in RUNNING and row.progress is not None:
        eta = f" eta {fmt.duration(row.eta_s)}" if row.eta_s is not None else ""
        return Text(f"▶{row.progress * 100:.0f}%{eta}", style="bold cyan")
    return Text(state_word(row.state), style=fmt.state_style(row.state))


def _sort_value(row: ConfigRow, key: str) -> tuple:
    """Sort key that puts missing numbers last whatever the direction."""
    value = field_value(row, key)
    if value is None or (isinstance(value, float) and value != value):
        return (1, "")
    return (0, value) if isinstance(value, int | float) else (0, str(value))


def field_value(row: ConfigRow, key: str) -> object:
    """The value a column (or filter field) of a row stands for, as recorded (no arithmetic)."""
    v = row.values
    if key == "scale":
        return row.workers
    if key in FIELD_ATTRS:
        return getattr(row, FIELD_ATTRS[key])
    if key == "id":
        return row.config_id
    return v.get(key)


FIELD_ATTRS = {"time": "train_time_s", "work": "work_ratio", "t_same_work": "t_same_work_s", "speedup": "speedup",
               "efficiency": "efficiency", "overhead": "overhead_s", "tokens": "tokens_per_s", "state": "state",
               "verdict": "verdict", "workers": "workers", "explanation": "explanation",
               "quality": "quality"}

# --- the filter -------------------------------------------------------------------------------------------

# the names the filter accepts for each field: the screen's own words first (headers, the header bar's states)
FILTER_FIELDS: dict[str, tuple[str, ...]] = {
    "dataset": ("dataset",),
    "mode": ("mode",),
    "window": ("window", "w"),
    "cpus_per_task": ("cpus", "cpus/task", "cpus_per_task", "cpu"),
    "precision": ("prec", "precision"),
    "batch_size": ("batch", "batch_size"),
    "nodes": ("nodes",),
    "gpus_per_node": ("gpus", "gpus_per_node", "gpus/node"),
    "workers": ("workers", "N"),
    "scale": ("nodes×GPUs", "nodes×workers", "nodesxgpus", "scale"),
    "state": ("state",),
    "time": ("T", "time", "train_time"),
    "t_same_work": ("T/work", "t_same_work"),
    "work": ("work",),
    "speedup": ("speedup", "S"),
    "efficiency": ("eff", "efficiency", "E"),
    "overhead": ("overhead", "O"),
    "tokens": ("tokens", "tokens/s", "tok/s"),
    "verdict": ("verdict", "why"),
    "quality": ("quality", "F1", "macro-F1"),
    "explanation": ("explanation",),
    "id": ("id", "config_id"),
}
FIELD_BY_NAME = {name.lower(): key for key, names in FILTER_FIELDS.items() for name in names}
NUMERIC_FIELDS = frozenset({"window", "cpus_per_task", "batch_size", "nodes", "gpus_per_node", "workers", "time",
                            "t_same_work", "work", "speedup", "efficiency", "overhead", "tokens", "quality"})
# the header's counters and the table say "done", "failed", "pending": each names a set of states
STATE_SETS = {
    "done": DONE_STATES, "completed": DONE_STATES, "failed": FAILED_STATES,
    "running": frozenset(RUNNING), "pending": frozenset({"pending", "submitting", "requeued", "suspended", "held"}),
    "not submitted": frozenset({"not_submitted"}), "not_submitted": frozenset({"not_submitted"}),
}
TERM_TEXT_FIELDS = frozenset({"verdict", "explanation"})  # where verdict~comm also finds "all-reduce"
OPERATORS = ("<=", ">=", "!=", "!~", "=", "<", ">", "~")
_TERM = re.compile(r"^([^\s<>=!~]+)\s*(<=|>=|!=|!~|=|<|>|~)\s*(.*)$")


@dataclass(frozen=True)
class Term:
    """One filter term: `field op value`, or a bare word (field None) matched anywhere in the row's text."""

    text: str
    field: str | None = None
    op: str = "~"
    value: object = ""


@dataclass(frozen=True)
class Filter:
    terms: tuple[Term, ...] = ()
    errors: tuple[str, ...] = ()  # one message per term that was not understood (and is not applied)


def parse_filter(text: str) -> Filter:
    """`eff<0.6 verdict~comm state=running window=256 fast`: every term must match. Fields use the screen's
    names (`cpus`, `prec`, `eff`, `T`, `T/work`, `tokens`, `state=done`); `=` `!=` compare, `<` `<=` `>` `>=`
    compare numbers (`eff<60%` = `eff<0.6`), `~` `!~` match text; a bare word matches anywhere. A term
    naming an unknown field or a number that is not one is reported and left out."""
    terms: list[Term] = []
    errors: list[str] = []
    for word in _split(text):
        m = _TERM.match(word)
        if not m:
            terms.append(Term(word))
            continue
        name, op, raw = m.group(1).lower(), m.group(2), m.group(3).strip().strip('"').strip("'")
        key = FIELD_BY_NAME.get(name)
        if key is None:
            errors.append(f"unknown field {name!r} in {word!r} (left out): try window, cpus, state, eff, speedup, "
                          "T, verdict; ? lists every field")
            continue
        value: object = raw
        if op not in ("~", "!~") and (key in NUMERIC_FIELDS or op in ("<", "<=", ">", ">=")):
            number = _number(raw, percent=key == "efficiency")
            if number is None:
                errors.append(f"{word!r}: {raw!r} is not a number")
                continue
            value = number
        terms.append(Term(word, key, op, value))
    return Filter(tuple(terms), tuple(errors))


def filter_names() -> list[str]:
    """The first name of every filter field, for help and error messages."""
    return [names[0] for names in FILTER_FIELDS.values()]


def _split(text: str) -> list[str]:
    """Words, keeping `verdict~"exposed all-reduce"` in one piece."""
    out, quote, cur = [], "", ""
    for ch in text:
        if ch in "\"'" and (not quote or ch == quote):
            quote = "" if quote else ch
            cur += ch
        elif ch.isspace() and not quote:
            if cur:
                out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        out.append(cur)
    return out


def _number(raw: str, percent: bool = False) -> float | None:
    """A number as typed: `0.6`, `60%` (for eff), `1.5x`, `10s`, `50k`, `1.2M`."""
    text = raw.strip().lower().rstrip("x×s")
    scale = {"k": 1e3, "m": 1e6}.get(text[-1:], 1.0)
    text = text.rstrip("km")
    is_pct = text.endswith("%")
    try:
        value = float(text.rstrip("%")) * scale
    except ValueError:
        return None
    if percent and (is_pct or value > 1.5):  # eff<60% and eff<60 mean what eff<0.6 means
        return value / 100.0
    return value


def term_matches(row: ConfigRow, term: Term) -> bool:
    if term.field is None:  # a bare word; a term's word finds its other names too (comm: all-reduce)
        haystack = " ".join([config_label(row.values), row.state, state_word(row.state), row.verdict,
                             row.config_id]).lower()
        return any(word in haystack for word in explain.term_words(term.text))
    if term.field == "state" and term.op in ("=", "!="):
        want = str(term.value).lower()
        states = STATE_SETS.get(want, frozenset({want.replace(" ", "_")}))
        return (row.state in states) == (term.op == "=")
    have = field_value(row, term.field)
    if term.field == "scale" and isinstance(term.value, str):
        have = f"{row.values.get('nodes', 1)}x{row.values.get('gpus_per_node', 1)}"
        want = term.value.replace("×", "x")
        return (have == want) == (term.op == "=") if term.op in ("=", "!=") else _text_op(have, term)
    if term.op in ("~", "!~"):
        return _text_op("" if have is None else str(have), term)
    if isinstance(term.value, float):
        if not isinstance(have, int | float) or isinstance(have, bool) or have != have:
            return term.op == "!="
        return {"=": have == term.value, "!=": have != term.value, "<": have < term.value,
                "<=": have <= term.value, ">": have > term.value, ">=": have >= term.value}[term.op]
    equal = str(have).lower() == str(term.value).lower()
    return equal if term.op == "=" else not equal


def _text_op(have: str, term: Term) -> bool:
    """`~` / `!~`: on the verdict and the explanation a term's word stands for all its names
    (explain.TERM_WORDS: verdict~comm finds "all-reduce", verdict!~data leaves out "data wait")."""
    words = explain.term_words(str(term.value)) if term.field in TERM_TEXT_FIELDS else (str(term.value).lower(),)
    found = any(word in have.lower() for word in words)
    return found if term.op == "~" else not found


def matches(row: ConfigRow, terms: list[str] | Filter) -> bool:
    """Whether a row passes a filter (a parsed Filter, or words as typed)."""
    flt = terms if isinstance(terms, Filter) else parse_filter(" ".join(terms))
    return all(term_matches(row, t) for t in flt.terms)


# --- cells ------------------------------------------------------------------------------------------------

_CELL_CACHE: dict[tuple, tuple[object, ...]] = {}
_CELL_CACHE_MAX = 20_000


def _cell_key(row: ConfigRow, keys: tuple[str, ...], live: bool) -> tuple:
    """Everything a row's cells depend on (its axis values are fixed by its config_id)."""
    return (row.config_id, row.is_baseline, row.state, row.train_time_s, row.work_ratio, row.t_same_work_s,
            row.speedup, row.efficiency, row.overhead_s, row.tokens_per_s, row.verdict, row.progress, row.eta_s,
            row.quality, row.quality_change, keys, live)


def scaling_cells(row: ConfigRow, layout: Layout = FULL_LAYOUT, live: bool = True) -> tuple[object, ...]:
    """Cells of one row; the same tuple object is returned while the row is unchanged, so a refresh
    compares rows by identity and rebuilds nothing for the (usually many) rows that did not move."""
    key = _cell_key(row, layout.keys, live)
    cells = _CELL_CACHE.get(key)
    if cells is None:
        if len(_CELL_CACHE) >= _CELL_CACHE_MAX:
            _CELL_CACHE.clear()
        cells = _CELL_CACHE[key] = tuple(_cell(row, k, live) for k in layout.keys)
    return cells


def _cell(row: ConfigRow, key: str, live: bool) -> object:
    v = row.values
    if key == "mark":
        return Text("★", style="bold yellow") if row.is_baseline else ""
    if key == "scale":
        return f"{v.get('nodes', 1)}×{v.get('gpus_per_node', 1)}"
    if key == "state":
        return _state_cell(row, live)
    if key == "time":
        return Text(fmt.seconds(row.train_time_s))
    if key == "work":
        return fmt.ratio(row.work_ratio)
    if key == "t_same_work":
        return fmt.seconds(row.t_same_work_s)
    if key == "speedup":
        return fmt.ratio(row.speedup)
    if key == "efficiency":
        return Text(fmt.percent(row.efficiency), style=fmt.efficiency_style(row.efficiency))
    if key == "overhead":
        return fmt.seconds(row.overhead_s)
    if key == "tokens":
        return fmt.rate(row.tokens_per_s)
    if key == "verdict":
        return row.verdict
    if key == "quality":
        return fmt.quality(row.quality, row.quality_change)
    return str(v.get(key, ""))


def scaling_rows(
    snapshot: StudySnapshot,
    sort_key: str | None = None,
    reverse: bool = False,
    query: str | Filter = "",
    group_by: str | None = None,
    layout: Layout = FULL_LAYOUT,
    live: bool = True,
) -> list[Row]:
    """The home table: filtered, sorted, optionally grouped by one axis with a header row per value."""
    flt = query if isinstance(query, Filter) else parse_filter(query)
    rows = [r for r in snapshot.configs if matches(r, flt)]
    if sort_key:
        ok = [r for r in rows if _sort_value(r, sort_key)[0] == 0]
        absent = [r for r in rows if _sort_value(r, sort_key)[0] == 1]
        ok.sort(key=lambda r: _sort_value(r, sort_key), reverse=reverse)
        rows = ok + absent
    if not group_by:
        return [Row(r.config_id, scaling_cells(r, layout, live)) for r in rows]
    groups: dict[str, list[ConfigRow]] = {}
    for r in rows:
        groups.setdefault(str(r.values.get(group_by, "")), []).append(r)
    out: list[Row] = []
    keys = layout.keys
    for value in sorted(groups, key=_natural):
        members = groups[value]
        cells: list[object] = [""] * len(keys)
        cells[0] = Text("▼", style="bold")
        if group_by in keys:
            cells[keys.index(group_by)] = Text(value, style="bold")
        elif group_by in ("nodes", "gpus_per_node") and "scale" in keys:
            cells[keys.index("scale")] = Text(f"{group_by.split('_')[0]} {value}", style="bold")
        cells[keys.index("state")] = Text(f"{len(members)} configs", style="bold")
        cells[-1] = Text(f"{group_by} = {value}: {len(members)} configurations", style="bold")
        out.append(Row(f"group:{group_by}:{value}", tuple(cells), header=True))
        out.extend(Row(r.config_id, scaling_cells(r, layout, live)) for r in members)
    return out


def status_line(row: ConfigRow | None, live: bool = True, job: JobRow | None = None) -> Text:
    """The selected row in full: its label and the analysis' whole explanation (or why there is none)."""
    if row is None:
        return Text("")
    out = Text.assemble((config_label(row.values), "bold"), "  ")
    if row.explanation:
        out.append(row.explanation)
    elif row.state in RUNNING:
        if live and row.progress is not None:
            out.append(f"running: {row.progress * 100:.0f}% of its steps, eta {fmt.duration(row.eta_s)}", "cyan")
        else:
            out.append("running when recorded: its result was not collected" if not live else "running",
                       "cyan")
    elif row.state == "not_submitted":
        out.append("not submitted yet", "dim")
    elif row.verdict:
        out.append(row.verdict)
    else:
        why = f": {job.reason}" if job is not None and job.reason else ""
        out.append(f"{state_word(row.state)}{why}; the verdict appears when its result is collected", "dim")
    return out


def csv_table(rows: list[ConfigRow]) -> tuple[list[str], list[list[object]]]:
    """The rows shown that have a result, as the report's scaling.csv has them (cockpit.analysis'
    scaling_csv_rows: every figure of the analysis at full precision, the same columns)."""
    from cockpit.analysis import scaling_csv_rows

    return scaling_csv_rows([r.analysis for r in rows if r.analysis])


def _natural(value: str) -> tuple:
    return (0, float(value), "") if _is_number(value) else (1, 0.0, value)


def _is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def queue_rows(snapshot: StudySnapshot) -> list[Row]:
    """Jobs of the study, newest attempt per configuration first in submission order."""
    folded = folded_axes(snapshot)
    labels = {c.config_id: short_label(c.values, folded) for c in snapshot.configs}
    rows = []
    for job in snapshot.jobs:
        rows.append(Row(_job_key(job), queue_cells(job, labels.get(job.config_id, job.config_id))))
    return rows


def _job_key(job: JobRow) -> str:
    return job.job_id or f"intent:{job.config_id}:{job.attempt}"


def queue_cells(job: JobRow, label: str) -> tuple[object, ...]:
    limit = fmt.duration(job.time_limit_s) if job.time_limit_s else "-"
    return (
        label,
        job.job_id or "(submitting)",
        Text(job.state.replace("_", " "), style=fmt.state_style(job.state)),
        f"{fmt.duration(job.elapsed_s)} / {limit}",
        "-" if job.nodes is None else str(job.nodes),
        job.node_list or "-",
        job.reason or "",
        str(job.attempt),
    )


def gpu_is_idle(series: GpuSeries) -> bool:
    """Idle = the last few samples all below the utilisation threshold."""
    recent = [s.util_pct for s in series.samples[-IDLE_SAMPLES:] if s.util_pct is not None]
    return bool(recent) and max(recent) < IDLE_UTIL_PCT


def idle_stretches(series: GpuSeries) -> int:
    """How many times a GPU sat idle (IDLE_SAMPLES samples in a row under the threshold) over its history."""
    stretches = run = 0
    for sample in series.samples:
        if sample.util_pct is not None and sample.util_pct < IDLE_UTIL_PCT:
            run += 1
            if run == IDLE_SAMPLES:
                stretches += 1
        else:
            run = 0
    return stretches


def spread(values: list[float], width: int) -> list[float]:
    """`width` values picked evenly over the whole list (a run's timeline in one table cell)."""
    if len(values) <= width:
        return values
    step = (len(values) - 1) / (width - 1)
    return [values[round(i * step)] for i in range(width)]


def gpu_job_rows(snapshot: StudySnapshot) -> list[Row]:
    """One row per configuration that has a job: its allocated time beside its T and the time outside T."""
    latest = {j.config_id: j for j in snapshot.jobs}
    folded = folded_axes(snapshot)
    rows = []
    for c in snapshot.configs:
        job = latest.get(c.config_id)
        if job is None:
            continue
        limit = fmt.duration(job.time_limit_s) if job.time_limit_s else "-"
        fixed = (c.analysis or {}).get("fixed_s")
        rows.append(Row(c.config_id, (
            short_label(c.values, folded),
            job.job_id or "(submitting)",
            Text(state_word(c.state), style=fmt.state_style(c.state)),
            f"{fmt.duration(job.elapsed_s)} / {limit}",
            "-" if job.nodes is None else str(job.nodes),
            fmt.seconds(c.train_time_s),
            fmt.seconds(fixed if isinstance(fixed, float | int) else None),
        )))
    return rows


def gpu_rows(series: list[GpuSeries], running: bool) -> list[Row]:
    """The GPUs of one job over time. While it runs, a GPU (or a whole node) idling now is flagged; after it
    ended, each GPU says how many times it sat idle during the run."""
    idle_by_node: dict[str, list[bool]] = {}
    for g in series:
        idle_by_node.setdefault(g.host, []).append(gpu_is_idle(g))
    rows = []
    for g in sorted(series, key=lambda s: (s.host, s.gpu)):
        last = g.latest
        idle = gpu_is_idle(g)
        if running and all(idle_by_node[g.host]):
            flag = Text("NODE IDLE", style="bold white on red")
        elif running and idle:
            flag = Text("idle", style="bold red")
        elif running:
            flag = Text("ok", style="green")
        else:
            times = idle_stretches(g)
            flag = Text(f"idle ×{times}", style="bold red") if times else Text("never idle", style="green")
        util = [s.util_pct for s in g.samples if s.util_pct is not None]
        used = [s.mem_used_bytes for s in g.samples if s.mem_used_bytes is not None]
        mem = "-"
        if last and last.mem_used_bytes is not None:
            total = f"/{last.mem_total_bytes / 2**30:.0f}" if last.mem_total_bytes else ""
            mem = f"{last.mem_used_bytes / 2**30:.1f}{total} GiB"
        top = last.mem_total_bytes if last and last.mem_total_bytes else None
        rows.append(Row(f"{g.config_id}:{g.host}:{g.gpu}", (
            g.host,
            str(g.gpu),
            "-" if not last or last.util_pct is None else f"{last.util_pct:.0f}%",
            Text(fmt.sparkline(spread(util, 24), 24, 0.0, 100.0), style="red" if idle and running else "green"),
            mem,
            Text(fmt.sparkline(spread(used, 16), 16, 0.0, top), style="cyan"),
            "-" if not last or last.power_w is None else f"{last.power_w:.0f} W",
            "-" if not last or last.temp_c is None else f"{last.temp_c:.0f} °C",
            flag,
        )))
    return rows


# --- the study's four figures -------------------------------------------------------------------------


def workers_of(row: ConfigRow) -> int:
    return int(cast("int | None", row.values.get("nodes", 1)) or 1) * int(cast("int | None", row.values.get("gpus_per_node", 1)) or 1)


def analysis_rows(snapshot: StudySnapshot) -> tuple[list[dict], list[dict]]:
    """(cockpit.analysis rows of the configurations that have one, the rest as pending points), the input
    of cockpit.series: the plots tab draws what the report's PNGs draw."""
    done, pending = [], []
    for c in snapshot.configs:
        if c.analysis:
            done.append(c.analysis)
        else:
            pending.append({"group_id": c.group_id, "workers": workers_of(c),
                            "cpus_per_task": c.values.get("cpus_per_task"), "status": c.state})
    return done, pending


def new_lines(old: list[str], new: list[str]) -> list[str]:
    """Lines of `new` (a log tail) that follow what `old` already showed, found by overlap."""
    if not old:
        return list(new)
    if not new:
        return []
    last = old[-1]
    for m in range(min(len(old), len(new)), 0, -1):
        if new[m - 1] == last and new[:m] == old[-m:]:
            return new[m:]
    return list(new)
