"""One place for the launch and scheduler variables (trainer/environment.py) and one place for the model's
defaults (trainer/config_keys/)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from trainer import environment
from trainer.config_keys import DEFAULTS

TRAINER = Path(__file__).resolve().parents[2] / "trainer"


def test_only_trainer_environment_reads_or_sets_process_variables() -> None:
    offenders = []
    for path in sorted(TRAINER.rglob("*.py")):
        if path.name == "environment.py" and path.parent == TRAINER:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "putenv") and \
                    isinstance(node.value, ast.Name) and node.value.id == "os":
                offenders.append(f"{path.relative_to(TRAINER.parent)}:{node.lineno}")
    assert offenders == [], "read them through trainer/environment.py"


def test_launch_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "SLURM_CPUS_PER_TASK", "HLM_LAUNCH_TIME"):
        monkeypatch.delenv(name, raising=False)
    assert environment.layout() == environment.Layout(0, 1, 0, 1) and environment.is_main_rank()
    assert environment.slurm_cpus_per_task() is None and environment.launch_time() is None
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "8")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "0")
    monkeypatch.setenv("HLM_LAUNCH_TIME", "12.5")
    assert environment.layout() == environment.Layout(3, 8, 1, 8) and not environment.is_main_rank()
    assert environment.slurm_cpus_per_task() is None and environment.launch_time() == 12.5
    monkeypatch.setenv("HLM_LAUNCH_TIME", "soon")
    assert environment.launch_time() is None


def test_omp_threads_are_set_once_and_put_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    restore = environment.threads_for_process(3)
    assert environment.os.environ["OMP_NUM_THREADS"] == "3"
    restore()
    assert "OMP_NUM_THREADS" not in environment.os.environ
    monkeypatch.setenv("OMP_NUM_THREADS", "5")  # the launcher's choice stands
    restore = environment.threads_for_process(3)
    assert environment.os.environ["OMP_NUM_THREADS"] == "5"
    restore()
    assert environment.os.environ["OMP_NUM_THREADS"] == "5"


def test_the_model_takes_its_defaults_from_the_key_table() -> None:
    from trainer.model import ModelConfig

    fields = {f.name: f.default for f in dataclasses.fields(ModelConfig)}
    for key in ("layers", "d_model", "heads", "dropout", "pool"):
        assert fields[key] == DEFAULTS[key], key
