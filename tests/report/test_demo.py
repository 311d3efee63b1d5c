"""`cockpit demo`: the study it runs (built from examples/local-demo.toml) and its argument checks.

The full run (4 real trainings) is what `cockpit demo --headless` does; its path — runner, local executor,
report — is exercised by tests/report/test_headless_local.py and tests/tui/test_live.py with smaller
studies, to keep the suite fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from cockpit.cli import main as cli
from cockpit.commands import demo
from cockpit.study.spec import parse_study
from tests.data.wfdb_corpus import CORPUS


def args(tmp_path: Path, *extra: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    demo.add_arguments(parser)
    return parser.parse_args(["--workdir", str(tmp_path), *extra])


def test_demo_study_is_the_example_on_this_machine(tmp_path: Path):
    a = args(tmp_path, "--steps", "50")
    study = parse_study(demo.demo_raw(a), tmp_path / "local-demo.toml")
    assert demo.EXAMPLE.exists()
    assert study.cluster.kind == "local"
    assert study.study_dir() == f"{tmp_path}/local-demo"
    assert study.train["steps"] == 50
    assert sorted((c.window, c.gpus_per_node) for c in study.runnable()) == [(128, 1), (128, 2), (256, 1), (256, 2)]
    assert all(c.dataset == "synthetic" for c in study.runnable())


def test_demo_with_real_mitdb_records(tmp_path: Path, physionet: Path):
    a = args(tmp_path, "--data", str(physionet / "mitdb"), "--records", "100, 101")
    assert demo.check(a) is None
    study = parse_study(demo.demo_raw(a), tmp_path / "local-demo.toml")
    (name, dataset), = study.datasets.items()
    assert name == "mitdb" and dataset.path == str((physionet / "mitdb").resolve())
    assert dataset.tokenizer["records"] == ["100", "101"]
    assert all(c.dataset == "mitdb" for c in study.runnable())


def test_examples_local_demo_is_the_shipped_demo_study():
    example = Path(__file__).resolve().parents[2] / "examples" / "local-demo.toml"
    assert example.resolve() == demo.EXAMPLE


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--steps", "0"], "--steps must be at least 1, got 0"),
        (["--records", "100"], "--records needs --data"),
        (["--data", "/nonexistent/mitdb"], "--data /nonexistent/mitdb: no such folder"),
        (["--timeout", "-1"], "--timeout must be positive"),
    ],
)
def test_bad_arguments_are_refused_before_anything_runs(tmp_path: Path, capsys, extra, message):
    assert cli(["demo", "--headless", "--workdir", str(tmp_path / "w"), *extra]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "w").exists()


def test_folder_without_records_is_refused(tmp_path: Path, capsys):
    assert cli(["demo", "--headless", "--data", str(tmp_path), "--workdir", str(tmp_path / "w")]) == 2
    assert "no RECORDS file and no *.hea headers" in capsys.readouterr().err


def test_a_workdir_that_cannot_be_created_is_one_line(capsys):
    assert cli(["demo", "--headless", "--workdir", "/proc/x"]) == 2
    assert capsys.readouterr().err == ("cockpit: --workdir /proc/x: cannot create /proc/x (No such file or directory: "
                                       "/proc does not take new directories); choose a directory you can write\n")


def qrs_database(tmp_path: Path) -> Path:
    """Record 100 of the WFDB corpus with only its .qrs annotations beside it (links, not copies): a database
    whose annotator is not one `auto` tries."""
    folder = tmp_path / "qrsdb"
    folder.mkdir()
    for name in ("100.hea", "100.dat", "100.qrs"):
        (folder / name).symlink_to(CORPUS / name)
    return folder


def test_a_qrs_database_is_refused_up_front_with_the_demo_flag_that_fixes_it(tmp_path: Path, capsys):
    data = qrs_database(tmp_path)
    assert cli(["demo", "--headless", "--data", str(data), "--workdir", str(tmp_path / "w")]) == 2
    assert capsys.readouterr().err == (
        f"cockpit: --data {data}: record 100 has no annotation file of those auto tries (.atr, .ari); run again with "
        "--annotator qrs (beside 100.hea: .qrs)\n")
    assert cli(["demo", "--headless", "--data", str(data), "--annotator", "atr", "--workdir", str(tmp_path / "w")]) == 2
    assert capsys.readouterr().err == (
        f"cockpit: --data {data}: record 100 has no .atr annotation file; run again with --annotator qrs "
        "(beside 100.hea: .qrs)\n")
    assert not (tmp_path / "w").exists()  # before any preflight job
    assert demo.check(args(tmp_path, "--data", str(data), "--annotator", "qrs")) is None


@pytest.mark.parametrize("flag", ["--records", "--test-records"])
def test_a_record_not_in_the_folder_is_refused_naming_those_that_are(tmp_path: Path, physionet: Path, capsys, flag):
    mitdb = physionet / "mitdb"
    assert cli(["demo", "--headless", "--data", str(mitdb), flag, "n99", "--workdir", str(tmp_path / "w")]) == 2
    assert capsys.readouterr().err == (f"cockpit: {flag} n99: not a record of {mitdb} (its records: 100, 101, 102, 103, "
                                       "104, 105, 106, 107, ... (48 in all))\n")
    assert not (tmp_path / "w").exists()


def test_a_failed_preflight_says_what_to_change_in_the_demos_flags(tmp_path: Path, physionet: Path, capsys):
    """A lead the record does not have passes the up-front check and fails the preflight's data check: the
    refusal names the demo's flags, not the study keys the demo wrote for itself."""
    mitdb = physionet / "mitdb"
    assert cli(["demo", "--headless", "--data", str(mitdb), "--records", "100", "--lead", "9",
                "--workdir", str(tmp_path / "w")]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == (f"cockpit: preflight 1 node x 2 data mitdb FAIL: {mitdb / '100.hea'}: lead index 9 out of range "
                    "(record has 2 signals); fix: check --data, --annotator, --records and --lead (the demo's study "
                    "is made from them), and run again")
    assert "[data.datasets]" not in last and "--skip-preflight" not in last
