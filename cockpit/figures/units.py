"""How an efficiency is printed, in every view: the TUI, the headless lines, the report's Markdown and HTML,
`cockpit compare`, the advice, the plan and the what-if. An efficiency E = S/N is a fraction of the ideal
(1.0 = N times faster) and is shown as a percent of it, "86%"; a change in efficiency is shown in percentage
points, "+38 pp" (0.48 -> 0.86). The CSV, the JSON events and the notebook keep the raw fraction."""

from __future__ import annotations

import math


def _missing(value: float | None) -> bool:
    return value is None or isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)


def percent(fraction: float | None) -> str:
    """An efficiency (or any fraction) as a whole percent: 0.856 -> "86%"; "-" when missing or not finite."""
    return "-" if fraction is None or _missing(fraction) else f"{fraction * 100:.0f}%"


def points(change: float | None) -> str:
    """A change in efficiency (a difference of two fractions) in percentage points: 0.38 -> "+38 pp"."""
    if change is None or _missing(change):
        return "-"
    pp = round(change * 100)
    return f"{pp:+d} pp" if pp else "0 pp"
