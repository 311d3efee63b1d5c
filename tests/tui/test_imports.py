"""Start-up stays light: the TUI's modules pull in neither torch nor pandas nor matplotlib."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_tui_modules_do_not_import_heavy_packages():
    code = (
        "import sys\n"
        "import cockpit.cli, cockpit.commands.open, cockpit.commands.demo, cockpit.commands.run, cockpit.commands.scores\n"
        "import cockpit.tui.app, cockpit.tui.live, cockpit.tui.detail, cockpit.tui.plots, cockpit.tui.quality_panel\n"
        "print(sorted(m for m in ('torch', 'pandas', 'matplotlib', 'numpy') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
