"""Rendered batch scripts compared byte for byte with reviewed files in tests/launch/golden/.

Regenerate after an intended template change with `UPDATE_GOLDEN=1 python -m pytest tests/launch` and review
the diff. Every script must also parse (`bash -n`).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from cockpit.launch.slurm.render import job_comment, job_name, render_script, render_study_scripts
from cockpit.study.spec import load_study

HERE = Path(__file__).parent
GOLDEN = HERE / "golden"
STUDIES = {"generic": HERE / "studies" / "generic.toml", "meluxina": HERE / "studies" / "meluxina.toml"}
SHAPES = [(1, 1), (1, 2), (1, 4), (2, 4)]


def _config(study, nodes: int, gpus: int):
    return next(c for c in study.matrix() if c.nodes == nodes and c.gpus_per_node == gpus)


@pytest.mark.parametrize("site", sorted(STUDIES))
@pytest.mark.parametrize(("nodes", "gpus"), SHAPES, ids=[f"{n}N{g}G" for n, g in SHAPES])
def test_script_matches_golden_and_parses(site: str, nodes: int, gpus: int, tmp_path: Path) -> None:
    study = load_study(STUDIES[site])
    text = render_script(study, _config(study, nodes, gpus))
    golden = GOLDEN / f"{site}-{nodes}N{gpus}G.sbatch"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"{golden} missing: run with UPDATE_GOLDEN=1 and review it"
    assert text == golden.read_text(encoding="utf-8"), f"{golden.name} differs; UPDATE_GOLDEN=1 if intended"
    script = tmp_path / golden.name
    script.write_text(text)
    parsed = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert parsed.returncode == 0, parsed.stderr


def _directives(text: str) -> dict[str, str]:
    return dict(re.findall(r"^#SBATCH --([a-z-]+)(?:=(\S*))?$", text, flags=re.M))


@pytest.mark.parametrize(("nodes", "gpus"), SHAPES, ids=[f"{n}N{g}G" for n, g in SHAPES])
def test_resources_follow_the_configuration(nodes: int, gpus: int) -> None:
    study = load_study(STUDIES["meluxina"])
    cfg = _config(study, nodes, gpus)
    text = render_script(study, cfg)
    d = _directives(text)
    assert d["nodes"] == str(nodes)
    assert d["ntasks-per-node"] == str(gpus)
    assert d["cpus-per-task"] == "16"
    assert d["gpus-per-node"] == str(gpus)
    assert d["account"] == "p200000" and d["qos"] == "short" and d["partition"] == "gpu"
    assert d["signal"] == "B:USR1@120" and "requeue" in d
    assert d["job-name"] == job_name(study, cfg) and d["comment"] == job_comment(study)
    assert d["output"] == f"{study.run_dir(cfg)}/slurm-%j.out"
    assert "module load Apptainer" in text, "the site's container module is loaded"
    assert "apptainer exec --nv" in text
    if nodes == 1:
        assert f"--standalone --nproc-per-node {gpus}" in text and "srun --" not in text
    else:
        assert "--rdzv-backend c10d" in text and 'scontrol show hostnames "$SLURM_JOB_NODELIST"' in text
        assert f"--cpus-per-task=$(( SLURM_CPUS_PER_TASK * {gpus} ))" in text
        assert '--nodes="$SLURM_NNODES" --ntasks="$SLURM_NNODES" --ntasks-per-node=1' in text


def test_generic_site_uses_gres_hint_and_expanding_paths() -> None:
    study = load_study(STUDIES["generic"])
    text = render_script(study, _config(study, 1, 2))
    d = _directives(text)
    assert d["gres"] == "gpu:2" and "gpus-per-node" not in d
    assert "hint" in d
    # $SCRATCH expands on the cluster, so logs are relative to the run directory sbatch is started from.
    assert d["output"] == "slurm-%j.out"
    assert 'RUN_DIR="${SCRATCH}"' in text
    assert 'PYTHON="$HOME"/venvs/hlm/bin/python' in text
    assert "CONTAINER=()" in text
    assert "export NCCL_SOCKET_IFNAME=ib0" in text and "export OMP_NUM_THREADS=4" in text


def test_render_study_scripts_writes_every_runnable_configuration(tmp_path: Path) -> None:
    study = load_study(STUDIES["meluxina"])
    paths = render_study_scripts(study, tmp_path / "scripts")
    assert [p.stem for p in paths] == [c.config_id for c in study.runnable()]
    assert len(paths) == 6
    for path in paths:
        assert path.read_text().startswith("#!/bin/bash -l\n")


def test_plan_render_command_writes_scripts(tmp_path: Path) -> None:
    """`cockpit plan --render DIR study.toml` is how a user inspects every script of a study."""
    out = tmp_path / "rendered"
    result = subprocess.run(
        ["python", "-m", "cockpit", "plan", "--render", str(out), str(STUDIES["generic"])],
        capture_output=True,
        text=True,
        cwd=HERE.parent.parent,
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{c.config_id}.sbatch" for c in load_study(STUDIES["generic"]).runnable())
