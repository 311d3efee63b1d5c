"""`cockpit plan` refuses what `cockpit run` would, with one line naming the key; a site that does not
require account and qos does not get them required."""

from __future__ import annotations

from pathlib import Path

from cockpit.cli import main as cli
from tests.studies import write_study

SLURM = {"kind": "slurm", "host": "cluster.example", "workdir": "/scratch/hlm", "partition": "gpu",
         "gpus_per_node": 2, "cores_per_node": 8}


def _plan(tmp_path: Path, capsys, *extra: str, **cluster) -> tuple[int, str, str]:
    path = write_study(tmp_path / "study.toml", "refusals", tmp_path / "w", cluster={**SLURM, **cluster})
    code = cli(["plan", *extra, str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_hostile_value_is_refused_by_plan_and_plan_render(tmp_path: Path, capsys):
    for extra in ([], ["--render", str(tmp_path / "scripts")]):
        code, _, err = _plan(tmp_path, capsys, *extra, site="generic", account="acct\n#SBATCH --uid=0")
        assert code == 2
        assert "[cluster].account" in err and "line break" in err and "Traceback" not in err
    assert not (tmp_path / "scripts").exists()


def test_generic_site_needs_no_account_or_qos_but_meluxina_does(tmp_path: Path, capsys):
    code, out, err = _plan(tmp_path, capsys, "--render", str(tmp_path / "scripts"), site="generic")
    assert code == 0, err
    scripts = list((tmp_path / "scripts").glob("*.sbatch"))
    assert scripts and "--account" not in scripts[0].read_text()
    code, _, err = _plan(tmp_path, capsys, site="meluxina", qos="default", partition="gpu")
    assert code == 2 and "[cluster].account is required on the meluxina site" in err
