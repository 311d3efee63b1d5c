"""Hostile study values end up inert in the script, or are refused with the key that carried them."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest

from cockpit.launch.slurm.quoting import UnsafeValueError, path_expr, sbatch_value, shell_quote
from cockpit.launch.slurm.render import render_script
from cockpit.study.spec import parse_study

HOSTILE = [
    "two words",
    "it's",
    'say "hi"',
    "$(touch PWNED)",
    "`touch PWNED`",
    "${HOME}",
    "a;touch PWNED",
    "a|b&c>d<e",
    "*",
    "-rf",
    "",
    "back\\slash",
    "ünïcödé",
]


def _echo(word: str) -> str:
    """What bash makes of one shell word: printf of the word's value."""
    out = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, text=True, check=True)
    return out.stdout


@pytest.mark.parametrize("value", HOSTILE)
def test_shell_quote_keeps_the_exact_value(value: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert _echo(shell_quote("k", value)) == value
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "a\x00b"])
def test_newline_and_nul_are_refused_naming_the_key(bad: str) -> None:
    with pytest.raises(UnsafeValueError, match=r"^\[cluster\]\.account: ") as info:
        shell_quote("[cluster].account", bad)
    assert isinstance(info.value, ValueError) and info.value.key == "[cluster].account"


def test_path_expr_expands_only_a_leading_home_or_variable(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SCRATCH", "/scratch/me")
    monkeypatch.setenv("HOME", "/home/me")
    assert _echo(path_expr("p", "$SCRATCH/a b/$(touch PWNED)")) == "/scratch/me/a b/$(touch PWNED)"
    assert _echo(path_expr("p", "${SCRATCH}/x")) == "/scratch/me/x"
    assert _echo(path_expr("p", "~/venv/bin/python")) == "/home/me/venv/bin/python"
    assert _echo(path_expr("p", "/abs/`touch PWNED`")) == "/abs/`touch PWNED`"
    assert not (tmp_path / "PWNED").exists()
    with pytest.raises(UnsafeValueError, match="~user"):
        path_expr("[cluster].workdir", "~alice/x")


@pytest.mark.parametrize("bad", ["a b", "a'b", "$(x)", "a`b`", 'a"b', "a;b"])
def test_sbatch_values_are_plain_or_refused(bad: str) -> None:
    with pytest.raises(UnsafeValueError, match=r"\[cluster\]\.qos: .*#SBATCH values"):
        sbatch_value("[cluster].qos", bad)
    assert sbatch_value("[cluster].qos", "normal-2") == "normal-2"


STUDY = """
[study]
name = "hostile"
[cluster]
kind = "slurm"
host = "h"
account = "acct"
qos = "q"
workdir = "$HLMTEST_WORK"
gpus_per_node = 2
cores_per_node = 8
[data.datasets.d]
path = "/data/d"
[train]
steps = 1
"""


def _study(tmp_path: Path, **cluster):
    raw = tomllib.loads(STUDY)
    raw["cluster"].update(cluster)
    return parse_study(raw, tmp_path / "hostile.toml")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("modules", ["cuda; touch PWNED", "$(touch PWNED)"]),
        ("env", {"NCCL_DEBUG": "`touch PWNED`", "X": "a'b\"c $(touch PWNED)"}),
        ("container", "/img/$(touch PWNED).sif"),
        ("container_binds", ["/d/`touch PWNED`"]),
        ("python", "/opt/py thon/$(touch PWNED)"),
        ("workdir", "$HLMTEST_WORK/it's $(touch PWNED) `touch PWNED`"),
    ],
)
def test_hostile_study_values_stay_inert_in_the_rendered_script(key, value, tmp_path: Path) -> None:
    """The whole script runs through bash with every external program replaced by a recorder: the
    hostile text must reach the programs verbatim and never run."""
    extra = {"container": "/img/hlm.sif"} if key == "container_binds" else {}
    study = _study(tmp_path, **{key: value}, **extra)
    script = tmp_path / "job.sh"
    script.write_text(render_script(study, study.matrix()[0]))
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name in ("module", "apptainer", "scontrol", "srun", "python3"):
        stub = stubs / name
        stub.write_text('#!/bin/sh\nprintf "%s\\n" "$0 $*" "X=$X" "NCCL_DEBUG=$NCCL_DEBUG" >> "$STUB_LOG"\n')
        stub.chmod(0o755)
    log = tmp_path / "calls.log"
    env = {"PATH": f"{stubs}:/usr/bin:/bin", "STUB_LOG": str(log), "HOME": str(tmp_path), "HLMTEST_WORK": str(tmp_path / "w")}
    done = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    assert not list(tmp_path.rglob("PWNED")), "hostile text was executed"
    calls = log.read_text() if log.exists() else ""
    if key == "modules":
        assert "module load cuda; touch PWNED" in calls and "module load $(touch PWNED)" in calls
    elif key == "env":
        assert "NCCL_DEBUG=`touch PWNED`\n" in calls and "X=a'b\"c $(touch PWNED)\n" in calls
    elif key == "container":
        assert "/img/$(touch PWNED).sif python3 -m trainer prepare" in calls
    elif key == "container_binds":
        assert "--bind /d/`touch PWNED`" in calls
    elif key == "python":
        assert "/opt/py thon/$(touch PWNED)" in done.stderr
    elif key == "workdir":
        run_dir = tmp_path / "w" / "it's $(touch PWNED) `touch PWNED`" / "hostile" / "runs" / study.matrix()[0].config_id
        assert (run_dir / "config.json").is_file()
        assert f"--run-dir {run_dir}" in calls


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        ("account", "acct\n#SBATCH --uid=0", r"\[cluster\]\.account"),
        ("qos", "q\x00", r"\[cluster\]\.qos"),
        ("modules", ["ok", "bad\nrm -rf /"], r"\[cluster\]\.modules"),
        ("env", {"NCCL_DEBUG": "INFO\nrm -rf /"}, r"\[cluster\.env\]\.NCCL_DEBUG"),
        ("container", "/img\n.sif", r"\[cluster\]\.container"),
        ("partition", "gpu part", r"\[cluster\]\.partition"),
        ("workdir", "/w/it\nis", r"\[cluster\]\.workdir"),
    ],
)
def test_values_that_cannot_be_quoted_are_refused_with_the_key(key, value, named, tmp_path: Path) -> None:
    study = _study(tmp_path, **{key: value})
    with pytest.raises(UnsafeValueError, match=named):
        render_script(study, study.matrix()[0])


def test_a_workdir_with_a_space_or_quote_gets_relative_log_paths(tmp_path: Path) -> None:
    """#SBATCH cannot carry such a path, so the logs are named relative to the run directory, which sbatch
    runs from; everywhere else the path is quoted."""
    study = _study(tmp_path, workdir="/w/my study's runs")
    text = render_script(study, study.matrix()[0])
    assert "#SBATCH --output=slurm-%j.out" in text and "#SBATCH --error=slurm-%j.err" in text
    import shlex

    assert shlex.quote(study.run_dir(study.matrix()[0])) in text
    script = tmp_path / "job.sh"
    script.write_text(text)
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
