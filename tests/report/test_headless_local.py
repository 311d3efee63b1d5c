"""`cockpit run --headless` with the local executor: a configuration the trainer refuses makes the run exit 1,
and the report lists it with the trainer's exit code."""

from __future__ import annotations

from pathlib import Path

from cockpit.cli import main as cli
from tests.report.test_report import markdown_rows
from tests.studies import write_study


def _study(path: Path, workdir: Path, **train) -> Path:
    """One configuration whose window (4096) the two-second synthetic records cannot fill: refused."""
    return write_study(path, "refused-window", workdir, cluster={"gpus_per_node": 1, "max_concurrent_jobs": 1},
                       data={"datasets": {"synthetic": {"synthetic": True, "records": 2, "seconds": 2}}},
                       train={"steps": 5, "window": None, "metrics_interval_s": None, **train},
                       sweep={"window": [4096]})


def test_failed_configuration_exits_non_zero_and_is_reported(tmp_path: Path, capsys):
    spec = _study(tmp_path / "study.toml", tmp_path / "work")
    # no preflight: its local probe job is another torch start, and the preflight has tests of its own
    rc = cli(["run", "--headless", "--skip-preflight", str(spec), "--out", str(tmp_path / "report"),
              "--timeout", "180"])
    out = capsys.readouterr().out
    assert rc == 1, out
    assert "1/1 finished (0 ok, 1 failed)" in out
    failed = next(line for line in out.splitlines() if line.startswith("FAILED"))
    assert "w4096" in failed and "exit 3" in failed and "4096" in failed.split(": ", 2)[2]  # the trainer's reason
    assert "--resubmit-failed" in out
    assert "refused-window: 1 of 1 configurations failed" in out
    rows = markdown_rows((tmp_path / "report" / "report.md").read_text(), "Jobs without a result")
    assert len(rows) == 1 and rows[0][2] == "failed" and rows[0][3] == "3"  # exit 3 = bad input data
    assert rows[0][4].startswith("exit 3:") and "4096" in rows[0][4], rows[0]  # the trainer's own message


def test_spec_error_is_reported_with_file_and_key(tmp_path: Path, capsys):
    spec = _study(tmp_path / "typo.toml", tmp_path, steps=None, stepz=5)
    assert cli(["run", "--headless", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "typo.toml" in err and "stepz" in err
