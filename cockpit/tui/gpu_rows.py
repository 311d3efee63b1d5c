"""The GPU view's rows: per job (allocated time against T) and per GPU (utilisation and memory over time,
with the idle flags), from a StudySnapshot. Pure: no Textual, as cockpit.tui.model."""

from __future__ import annotations

from rich.text import Text

from cockpit.store.snapshot import GpuSeries, StudySnapshot
from cockpit.tui import format as fmt
from cockpit.tui.columns import state_word
from cockpit.tui.model import Row, folded_axes, short_label

IDLE_UTIL_PCT = 5.0
IDLE_SAMPLES = 5


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
