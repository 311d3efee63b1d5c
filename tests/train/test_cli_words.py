"""`hlm-train` as a newcomer types it: a bad argument is one `hlm-train: ...` line with exit code 2 (a bad
--tokenizer too: a command line, not bad data), an --out or a --run-dir that cannot be created is named, `--version` is the
installed distribution's and `train --help` says what it does and groups its flags by the registry's sections."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

from runcontract.contract import EXIT_DISK_FULL, EXIT_USAGE
from trainer.commands.cli import TRAIN_GROUPS, TRAIN_KEYS, main, parser
from trainer.config_keys import TOKENIZER_KEYS


def refused(capsys, *argv: str) -> str:
    """The one line a refused command printed (exit code 2, no traceback)."""
    assert main(list(argv)) == EXIT_USAGE, argv
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("hlm-train: ") and "Traceback" not in err, err
    return err.strip()


def test_an_out_that_cannot_be_created_is_named(tmp_path: Path, capsys):
    assert refused(capsys, "prepare", "--synthetic", "--out", "/proc/x") == (
        "hlm-train: --out /proc/x: cannot write the token cache there (No such file or directory: /proc/x); choose a "
        "directory you can write")
    (tmp_path / "file").write_text("", encoding="utf-8")
    assert "(Not a directory: " in refused(capsys, "prepare", "--synthetic", "--out", str(tmp_path / "file" / "cache"))


def test_a_run_dir_that_cannot_be_created_is_named(tmp_path: Path, capsys):
    assert refused(capsys, "train", "--run-dir", "/proc/x") == (
        "hlm-train: --run-dir /proc/x: cannot create /proc/x (No such file or directory: /proc does not take new "
        "directories); choose a directory you can write")
    (tmp_path / "file").write_text("", encoding="utf-8")
    assert refused(capsys, "train", "--run-dir", str(tmp_path / "file"), "--steps", "1") == (
        f"hlm-train: --run-dir {tmp_path / 'file'}: a file, not a directory; choose a directory you can write")


def test_a_run_dir_on_a_full_disk_is_exit_5_in_one_line(small_fs, capsys):
    fs = small_fs("64k")
    fs.fill()
    run_dir = fs.path / "run"
    assert main(["train", "--run-dir", str(run_dir), "--steps", "1"]) == EXIT_DISK_FULL
    err = capsys.readouterr().err
    assert err.startswith(f"hlm-train: work directory full: {run_dir / 'config.json'} needed ") and err.count("\n") == 1
    assert "Traceback" not in err


@pytest.mark.parametrize("command", ["prepare", "train"])
def test_a_bad_tokenizer_flag_is_a_bad_command_line(tmp_path: Path, capsys, command: str):
    where = ["--synthetic", "--out", str(tmp_path / "cache")] if command == "prepare" else \
        ["--run-dir", str(tmp_path / "run"), "--steps", "1"]
    assert refused(capsys, command, *where, "--tokenizer", "nosuch") == \
        "hlm-train: --tokenizer (tokenizer.name): expected one of samples, beats, got 'nosuch'"
    assert refused(capsys, command, *where, "--vocab", "1") == \
        "hlm-train: --vocab (tokenizer.vocab): expected an integer in [2, 65531], got 1"
    assert not (tmp_path / "cache").exists()


def test_version_is_the_installed_distributions(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"hlm-train {metadata.version('hlm-cockpit')}\n"


def test_train_help_says_what_it_does_and_groups_its_flags_by_section():
    train = next(a for a in parser()._actions if a.choices and "train" in a.choices).choices["train"]
    assert train.description.startswith("Train one run: one plain process or one torchrun rank.")
    assert train.format_usage() == "usage: hlm-train train --run-dir RUN [--KEY VALUE ...]\n"
    groups = {g.title: {a.dest for a in g._group_actions} for g in train._action_groups}
    for k in TRAIN_KEYS:
        assert k.name in groups[TRAIN_GROUPS[k.section][0]], k.dest
    assert {k.name for k in TOKENIZER_KEYS} == groups["tokenizer"]
    assert groups["records and split"] == {"skip_bad_records", "test_records", "patient_pattern"}
    assert groups["options"] == {"help", "run_dir"}
