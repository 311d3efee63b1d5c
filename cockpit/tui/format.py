"""Number and time formatting shared by every view, so one value looks the same everywhere."""

from __future__ import annotations

import math

from cockpit.figures.units import percent, points

__all__ = ["percent", "points"]  # an efficiency and its change as every view prints them (cockpit.figures.units)

SPARK_BLOCKS = "▁▂▃▄▅▆▇█"


def missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def duration(seconds: float | None) -> str:
    """Compact duration: 42s, 3m05s, 2h07m, 1d03h."""
    if seconds is None or missing(seconds):
        return "-"
    s = int(round(max(0.0, float(seconds))))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600:02d}h"


def seconds(value: float | None, digits: int = 1) -> str:
    return "-" if missing(value) else f"{value:.{digits}f}"


def ratio(value: float | None, suffix: str = "x") -> str:
    return "-" if missing(value) else f"{value:.2f}{suffix}"




def rate(value: float | None) -> str:
    """Throughput with a k/M suffix: 1.2M, 830k, 95."""
    if value is None or missing(value):
        return "-"
    v = float(value)
    if v >= 1e6:
        return f"{v / 1e6:.2f}M"
    if v >= 1e3:
        return f"{v / 1e3:.1f}k"
    return f"{v:.0f}"


def quality(value: float | None, change: float | None) -> str:
    """A run's quality and its change against the group's 1x1 run: `0.571 -0.022` (`-` when not scored)."""
    if missing(value):
        return "-"
    return f"{value:.3f}" + ("" if missing(change) else f" {change:+.3f}")


def efficiency_style(value: float | None) -> str:
    """Colour of an efficiency: green near ideal, yellow acceptable, red poor."""
    if value is None or missing(value):
        return "dim"
    if value >= 0.85:
        return "bold green"
    if value >= 0.6:
        return "yellow"
    return "bold red"


def state_style(state: str) -> str:
    return {
        "running": "bold cyan",
        "completing": "cyan",
        "pending": "yellow",
        "held": "magenta",
        "requeued": "yellow",
        "submitting": "yellow",
        "completed": "green",
        "not_submitted": "dim",
    }.get(state, "bold red" if state else "dim")


def sparkline(values: list[float], width: int = 20, lo: float | None = 0.0, hi: float | None = None) -> str:
    """A one-line text sparkline of the last `width` values (cheap enough for a table cell)."""
    vals = [v for v in values[-width:] if not missing(v)]
    if not vals:
        return ""
    low = min(vals) if lo is None else lo
    high = max(vals) if hi is None else hi
    span = high - low
    out = []
    for v in vals:
        frac = 0.0 if span <= 0 else min(1.0, max(0.0, (v - low) / span))
        out.append(SPARK_BLOCKS[min(len(SPARK_BLOCKS) - 1, int(frac * len(SPARK_BLOCKS)))])
    return "".join(out)


def ago(now: float, then: float | None) -> str:
    if then is None:
        return "never"
    return f"{duration(now - then)} ago"
