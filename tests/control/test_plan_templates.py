"""`cockpit plan --render` of a few hundred configurations compiles each batch template once: compiling them
again per configuration made a plan of 10,000 take minutes (bench/README.md, "Plans at scale")."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import jinja2

from cockpit.cli import main as cli
from cockpit.launch.slurm import render
from cockpit.study.spec import load_study
from tests.studies import REPO

MELUXINA = REPO / "examples" / "meluxina.toml"


def test_plan_and_render_compile_each_template_once(tmp_path: Path, capsys, monkeypatch):
    compiled: Counter[str | None] = Counter()
    compile_source = jinja2.Environment.compile

    def counted(self, source, name=None, filename=None, raw=False, defer_init=False):  # noqa: ANN001, ANN202
        compiled[name] += 1
        return compile_source(self, source, name, filename, raw, defer_init)

    monkeypatch.setattr(jinja2.Environment, "compile", counted)
    render._environment.cache_clear()  # as in a fresh process: nothing compiled yet
    runnable = len(load_study(MELUXINA).runnable())
    assert runnable >= 200
    assert cli(["plan", str(MELUXINA), "--render", str(tmp_path / "scripts")]) == 0
    assert f"wrote {runnable} batch scripts" in capsys.readouterr().out
    assert compiled and set(compiled.values()) == {1}, compiled
