"""bench/seeds.py: its rank correlation and the goal's misses, and a run directory it cannot use (a fine-tune
recorded without a validation part, tests/fixtures/h200-runs) named and left out, never dropped silently."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from seeds import misses, spearman  # noqa: E402  (a bench script, not a package)

NO_VALIDATION = REPO / "tests" / "fixtures" / "h200-runs" / "bf16-w256-finetune"


def test_spearman_ranks_ties_and_refuses_too_few() -> None:
    assert spearman([1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 40.0]) == pytest.approx(1.0)
    assert spearman([1.0, 2.0, 3.0, 4.0], [9.0, 1.0, 5.0, 0.0]) == pytest.approx(-0.8)
    assert spearman([1.0, 1.0, 2.0], [1.0, 2.0, 3.0]) == pytest.approx(0.866, abs=1e-3)  # tied ranks averaged
    assert spearman([1.0, 2.0], [2.0, 1.0]) is None and spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) is None


def test_misses_names_each_goal_figure_below_it_with_its_value() -> None:
    row = {"accuracy": 0.95, "S Se": 0.517, "S +P": 0.339, "V Se": 0.93, "macro-F1 NSVF": None}
    assert misses(row) == ["S Se 0.517 < 0.8", "S +P 0.339 < 0.6"]


def test_a_run_without_validation_is_named_and_left_out(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, str(REPO / "bench" / "seeds.py"), str(NO_VALIDATION), str(tmp_path)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 1
    assert f"{NO_VALIDATION}/result.json: no 'validation'" in out.stdout
    assert f"{tmp_path}: no result.json (an unfinished run)" in out.stdout
    assert "no finished beat fine-tune among the run directories given" in out.stderr
