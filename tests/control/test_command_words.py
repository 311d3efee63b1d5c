"""The cockpit's commands as a newcomer types them, on the store the real `cockpit demo` recorded
(tests/fixtures/demo-store): every refusal is one `cockpit: ...` line with return code 2, never a traceback;
the plan of a finished study shows what its runs measured (the report's figures, cockpit.forecast.analysis), and the
what-if marks the configurations a plain plan marks "too big"; the positional arguments have one name per
concept and a CPU study's plan speaks of workers, as its report does."""

from __future__ import annotations

import argparse
import json
import re
import shutil
from importlib import metadata
from pathlib import Path

import pytest

from cockpit.cli import build_parser
from cockpit.cli import main as cli
from cockpit.forecast.analysis import analyse
from cockpit.report.source import from_store, study_or_store
from tests.studies import REPO
from trainer.commands.cli import parser as trainer_parser

FIXTURE = REPO / "tests" / "fixtures" / "demo-store"
STORE = Path("local-demo") / "cockpit.sqlite"


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """A copy of the demo store and its study file, with [cluster].cores_per_node = 2 so that a 1x4
    configuration is too big on any machine; returns the study file."""
    (tmp_path / "local-demo").mkdir()
    text = (FIXTURE / "study.toml").read_text(encoding="utf-8")
    (tmp_path / "study.toml").write_text(text.replace('kind = "local"\n', 'kind = "local"\ncores_per_node = 2\n', 1),
                                         encoding="utf-8")
    shutil.copyfile(FIXTURE / STORE, tmp_path / STORE)
    return tmp_path / "study.toml"


def refused(capsys, *argv: str) -> str:
    """The one line a refused command printed (return code 2, nothing on stdout, no traceback)."""
    assert cli(list(argv)) == 2, argv
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err, (argv, out, err)
    assert err.count("\n") == 1 and err.startswith("cockpit: "), (argv, err)
    return err.strip()


def printed(capsys, *argv: str) -> str:
    assert cli(list(argv)) == 0, argv
    out, err = capsys.readouterr()
    assert err == "", err
    return out


def test_scores_of_a_store_or_an_unreadable_result_is_one_line(demo: Path, tmp_path: Path, capsys):
    store = demo.parent / STORE
    assert f"{store}: a cockpit store (an SQLite database), not a result.json" in refused(capsys, "scores", str(store))
    run = tmp_path / "run"
    run.mkdir()
    (run / "result.json").write_bytes(b'{"eval": \xff\xfe')  # not text: a disk error, a wrong file renamed
    assert refused(capsys, "scores", str(run)) == f"cockpit: {run / 'result.json'}: not a JSON text file (byte 9 is not UTF-8)"
    (run / "result.json").write_text('{"eval": {"confusion": [[1, 2]', encoding="utf-8")  # cut short
    assert f"{run / 'result.json'}: not valid JSON" in refused(capsys, "scores", str(run))


def test_scores_top_is_a_count_of_records(capsys):
    finetune = Path(__file__).resolve().parents[1] / "fixtures" / "h200-runs" / "bf16-w256-finetune"
    assert refused(capsys, "scores", str(finetune), "--top", "-3") == "cockpit: --top must be 0 or more, got -3"
    assert "most errors" not in printed(capsys, "scores", str(finetune), "--top", "0")


def test_the_study_may_follow_the_what_ifs(demo: Path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    after = printed(capsys, "plan", "--what-if", "train.bucket_cap_mb=0.1", str(demo))
    assert "what-if: [train] bucket_cap_mb unset -> 0.1" in after
    assert printed(capsys, "plan", str(demo), "--what-if", "train.bucket_cap_mb=0.1") == after
    assert refused(capsys, "plan", "--what-if", "train.bucket_cap_mb=0.1") == \
        "cockpit: give the study file: cockpit plan STUDY [--what-if KEY=VALUE ...]"


def plan_rows(out: str) -> dict[str, list[str]]:
    """The printed plan table's cells by configuration id."""
    return {ids[0]: line.split() for line in out.splitlines() for ids in [re.findall(r"\b[0-9a-f]{10}\b", line)[-1:]]
            if ids}


def test_a_finished_studys_plan_shows_what_its_runs_measured(demo: Path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    out = printed(capsys, "plan", str(demo))
    rows = plan_rows(out)
    assert "every configuration is done: the 4 runs' node-hours are measured" in out
    assert "no configuration ran faster than the baseline" in out and "predicted faster" not in out
    measured = {r["config_id"]: r for r in analyse(from_store(demo.parent / STORE, "local-demo").results)}
    assert set(rows) == set(measured) and len(rows) == 4
    for cid, cells in rows.items():
        m = measured[cid]
        assert cells[-1] == "done" or cells[-2:] == ["done", "(baseline)"]
        assert f"{m['train_time_s']:.1f}" in cells and f"{m['speedup']:.2f}x" in cells, (cells, m["train_time_s"])
    slower = [r for r in measured.values() if r["workers"] == 2 and r["speedup"] < 1]
    assert slower, "the demo's 2-worker runs are slower than their baselines: the figures the model-only plan hid"


def test_the_what_if_marks_too_big_what_the_plan_marks_too_big(demo: Path, tmp_path: Path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    wider = ["sweep.gpus_per_node=[1, 2, 4]", "cluster.gpus_per_node=4"]
    what_if = printed(capsys, "plan", str(demo), "--what-if", *wider)
    variant = demo.read_text(encoding="utf-8").replace("gpus_per_node = 2 ", "gpus_per_node = 4 ", 1) \
        .replace("gpus_per_node = [1, 2]", "gpus_per_node = [1, 2, 4]", 1)
    demo.write_text(variant, encoding="utf-8")  # the same study, widened in the file: its plain plan
    plain = printed(capsys, "plan", str(demo))
    too_big_plan = [next(c for c in cells if re.fullmatch(r"\d+x\d+", c))
                    for cells in plan_rows(plain).values() if cells[-2:] == ["too", "big"]]
    assert too_big_plan == ["1x4", "1x4"]
    too_big_rows = [line for line in what_if.splitlines() if line.strip().startswith("w") and "too big" in line]
    assert [line.split()[1] for line in too_big_rows] == ["1x4", "1x4"]
    assert all(set(line.split()[4:]) == {"-"} for line in too_big_rows)  # nothing predicted for them
    assert "too big (2): more cores than a node's 2, never submitted" in what_if


def test_what_ifs_typed_into_a_shell_work_or_say_what_does(demo: Path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    # train.device="cpu" typed unquoted reaches the cockpit as train.device=cpu: a bare word is the string
    assert 'what-if: [train] device "cpu" -> "auto"' in printed(capsys, "plan", str(demo), "--what-if", "train.device=auto")
    hint = "[sweep].gpus_per_node contains 4 but [cluster].gpus_per_node is 2; add cluster.gpus_per_node=4 to the what-if"
    assert hint in refused(capsys, "plan", str(demo), "--what-if", "sweep.gpus_per_node=[1, 2, 4]")
    # the same typed without quotes: the shell splits it at the spaces, the cockpit joins it again
    assert hint in refused(capsys, "plan", str(demo), "--what-if", "sweep.gpus_per_node=[1,", "2,", "4]")
    printed(capsys, "plan", str(demo), "--what-if", "sweep.gpus_per_node=[1,", "2,", "4]", "cluster.gpus_per_node=4")
    assert "in a shell quote the whole argument: 'train.lr=[1, 2]'" in \
        refused(capsys, "plan", str(demo), "--what-if", "train.lr=1e-")


def test_plan_flags_refuse_bad_values_before_printing_anything(demo: Path, tmp_path: Path, capsys):
    assert refused(capsys, "plan", str(demo), "--limit", "-1") == "cockpit: --limit must be 0 (every row) or more, got -1"
    assert refused(capsys, "plan", str(demo), "--baselines", str(demo)) == (
        f"cockpit: --baselines {demo}: expected a directory with result.json files below it, or one result.json; "
        "found another file")
    assert "no such file or directory" in refused(capsys, "plan", str(demo), "--baselines", str(tmp_path / "none"))
    assert refused(capsys, "plan", str(demo), "--render", "/proc/x") == (
        "cockpit: --render /proc/x: cannot write the batch scripts there (No such file or directory); choose a "
        "directory you can write")


def test_one_result_json_is_a_baseline(demo: Path, tmp_path: Path, capsys, monkeypatch):
    """`--baselines FILE`: the one result.json given is read as a baseline of a study with no store yet (its
    1x2 has no link figure to be predicted with: the demo's come from its 2-worker runs' probes)."""
    monkeypatch.setenv("COLUMNS", "200")
    results = from_store(demo.parent / STORE, "local-demo").results
    base = next(r for r in results if r["config"]["gpus_per_node"] == 1 and r["config"]["window"] == 128)
    run = tmp_path / "elsewhere" / "run"
    run.mkdir(parents=True)
    (run / "result.json").write_text(json.dumps(base), encoding="utf-8")
    (demo.parent / STORE).unlink()  # nothing recorded here: the plan predicts from the file alone
    out = printed(capsys, "plan", str(demo), "--baselines", str(run / "result.json"))
    assert "predicted from the group's baseline for 1 configuration," in out
    row = plan_rows(out)[base["config_id"]]  # ..., S, node-h, T's 90% interval (a prior's: nothing finished here)
    assert row[-5:-3] == ["1.00x", "0.00"] and row[-2:] == ["submit", "(baseline)"]
    assert re.fullmatch(r"\d+\.\d+-\d+\.\d+", row[-3]), row


def test_open_names_a_directory_and_a_missing_study_in_the_reports_words(demo: Path, tmp_path: Path, capsys):
    assert refused(capsys, "open", str(demo.parent)) == (
        f"cockpit: {demo.parent}: a directory; expected a study file (.toml) or a cockpit store (.sqlite)")
    store = str(demo.parent / STORE)
    opened = refused(capsys, "open", store, "--study", "nosuch")
    assert opened == f"cockpit: {store}: no study 'nosuch'; it holds local-demo"
    assert refused(capsys, "report", store, "--study", "nosuch", "--out", str(tmp_path / "r")) == opened
    copy = tmp_path / "cockpit.sqlite.bak"  # a store kept under another name is still read as one
    shutil.copyfile(store, copy)
    assert study_or_store(copy) == "store"


def test_trace_refuses_bad_input_with_code_2(demo: Path, tmp_path: Path, capsys):
    assert refused(capsys, "trace", str(tmp_path / "nosuch")) == f"cockpit: {tmp_path / 'nosuch'}: no such run directory or trace file"
    assert "'zzz' names 0 configurations" in refused(capsys, "trace", str(demo), "zzz")
    assert "expected RUN" in refused(capsys, "trace", "a", "b", "c")


def test_version_is_the_installed_distributions(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"cockpit {metadata.version('hlm-cockpit')}\n"


def test_one_name_per_positional_argument(capsys):
    """A study file or a store is STUDY in every command (the second of `compare` is OTHER), a run directory RUN."""
    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    names = {}
    for command, parser in subparsers.choices.items():
        for action in parser._actions:
            if not action.option_strings:
                names[command] = (*names.get(command, ()), action.metavar)
    assert names == {"plan": ("STUDY",), "preflight": ("STUDY",), "open": ("STUDY",), "run": ("STUDY",),
                     "report": ("STUDY",), "compare": ("STUDY", "OTHER"), "export": ("STUDY",), "scores": ("RUN",),
                     "trace": ("RUN",), "serve": ("STUDY",)}


def test_a_cpu_studys_plan_speaks_of_workers(demo: Path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    out = printed(capsys, "plan", str(demo))
    assert "NxG nodes x workers per node" in out and "the worker-hours" in out
    assert "GPU" not in out


def test_every_refusal_has_the_one_prefix():
    """`cockpit: ...` and `hlm-train: ...`, never `cockpit report: ...` or `hlm-train prepare: ...` (written
    once: cockpit.commands._args.error, trainer.config_flags.error)."""
    other = re.compile(r"[\"'](cockpit|hlm-train) [a-z-]+: ")
    found = [f"{path.relative_to(REPO)}:{n}" for top in ("cockpit", "trainer") for path in (REPO / top).rglob("*.py")
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if other.search(line)]
    assert found == []


@pytest.mark.parametrize(("parser", "argv", "line"), [
    (build_parser, ["plan", "--nosuch", "x"], "cockpit: unrecognized arguments: --nosuch"),
    (build_parser, ["nosuch"], "cockpit: argument COMMAND: invalid choice: 'nosuch'"),
    (trainer_parser, ["train"], "hlm-train: train: the following arguments are required: --run-dir"),
    (trainer_parser, ["prepare", "--vocab", "many"], "hlm-train: prepare: argument --vocab: invalid int value"),
])
def test_argparse_refusals_take_the_one_prefix(parser, argv: list[str], line: str, capsys) -> None:
    with pytest.raises(SystemExit) as caught:
        parser().parse_args(argv)
    err = capsys.readouterr().err.splitlines()
    assert caught.value.code == 2 and err[0].startswith("usage: ") and err[-1].startswith(line), err


def test_hlm_train_names_a_run_directory_run_and_a_folder_dir():
    """A run directory is RUN in every hlm-train command (as in the cockpit's), a folder to write DIR, the token
    cache root CACHE."""
    subparsers = next(a for a in trainer_parser()._actions if isinstance(a, argparse._SubParsersAction))
    metavars = {(command, action.dest): action.metavar for command, parser in subparsers.choices.items()
                for action in parser._actions if action.dest in ("run_dir", "out", "members", "models")}
    assert metavars == {("prepare", "run_dir"): "RUN", ("prepare", "out"): "CACHE", ("preflight", "run_dir"): "RUN",
                        ("train", "run_dir"): "RUN", ("ensemble", "out"): "DIR", ("ensemble", "members"): "RUN",
                        ("evaluate", "models"): "RUN", ("evaluate", "out"): "DIR", ("download", "out"): "DIR"}
