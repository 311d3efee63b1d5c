"""An efficiency printed one way in every view (cockpit.figures.units): a whole percent, its change in
percentage points; the views that print E all go through it."""

from __future__ import annotations

import math

from cockpit.figures import units
from cockpit.tui import format as fmt


def test_percent_and_points():
    assert units.percent(0.856) == "86%" and units.percent(1.0) == "100%" and units.percent(1.4) == "140%"
    assert units.percent(0.004) == "0%"
    for missing in (None, math.nan, math.inf):
        assert units.percent(missing) == "-" and units.points(missing) == "-"
    assert units.points(0.856 - 0.48) == "+38 pp" and units.points(0.48 - 0.856) == "-38 pp"
    assert units.points(0.001) == "0 pp"
    assert fmt.percent is units.percent  # the TUI's cells are the same function's


def test_no_view_formats_an_efficiency_itself():
    """Every place that prints E calls units.percent: no `.0%`, `.2f` or `.3f` of an efficiency left."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "cockpit"
    pattern = re.compile(r"efficiency['\"]?\]?\)?(:\s*|,\s*['\"][+]?|,\s*\"E = S/N\",\s*\")\.\d[f%]")
    found = [f"{p.relative_to(root)}: {line.strip()}" for p in root.rglob("*.py")
             for line in p.read_text(encoding="utf-8").splitlines() if pattern.search(line)]
    assert found == []
