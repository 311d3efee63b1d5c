"""docs/workloads.md holds what it promises: each Python example is the script the tests run (byte for byte),
and each bash example marked `run` runs here and leaves a completed run directory whose parts add up to T."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from runcontract.contract import BREAKDOWN_PARTS, RUN_DIR_ENV
from runcontract.records import read_result

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "workloads.md"


def examples(kind: str) -> list[tuple[str, str]]:
    """(marker argument, body) of every fenced block after `<!-- example: KIND ... -->`."""
    return [((m.group(1) or "").strip(), m.group(2)) for m in
            re.finditer(rf"<!-- example: {kind}( [^>]*)? -->\n```\w+\n(.*?)```", PAGE.read_text(), flags=re.S)]


def test_each_python_example_is_a_script_the_tests_run():
    shown = examples("file")
    assert len(shown) == 4
    for path, body in shown:
        assert body == (REPO / path).read_text(), f"docs/workloads.md shows {path} as it is"


@pytest.mark.parametrize("command", [body.strip() for _, body in examples("run")])
def test_each_command_runs_and_completes(command, tmp_path):
    words = shlex.split(command)
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    while "=" in words[0]:
        name, _, value = words.pop(0).partition("=")
        env[name] = str(tmp_path / value) if name == RUN_DIR_ENV else value
    done = subprocess.run(words, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = read_result(env[RUN_DIR_ENV])
    assert result is not None and result["status"] == "completed"
    assert sum(result["breakdown_s"][p] for p in BREAKDOWN_PARTS) == pytest.approx(
        result["timing"]["train_time_s"], rel=1e-9)
