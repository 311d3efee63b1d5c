"""docs/workloads.md's `[workload]` study is a study the cockpit plans: its script is the explicit-loop fixture,
its keys sweep, and the plan says what the mode cannot give."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from cockpit.cli import main as cli
from cockpit.study.spec import load_study

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "workloads.md"
SCRIPT = REPO / "tests" / "fixtures" / "workloads" / "tiny_loop.py"


def the_example() -> str:
    found = re.findall(r"<!-- example: study -->\n```toml\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    assert len(found) == 1
    return found[0]


def test_the_pages_study_plans(tmp_path: Path, capsys):
    shutil.copy(SCRIPT, tmp_path / "train.py")
    path = tmp_path / "study.toml"
    path.write_text(the_example().replace('workdir = "~/cockpit-work"', f'workdir = "{tmp_path / "work"}"'))
    study = load_study(path)
    assert len(study.matrix()) == 4 and len({c.group_id for c in study.matrix()}) == 2
    assert cli(["plan", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "4 configurations (2 gpus_per_node x 2 pin_memory) in 2 baseline groups" in out
    assert "what the script workload (mode explicit) cannot give" in out
