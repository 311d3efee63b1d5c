"""Packaging: the laptop side never imports torch; templates ship inside the wheel."""

from __future__ import annotations

import os
import site
import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_import_cockpit_never_imports_torch():
    code = (
        "import sys, cockpit, cockpit.cli, cockpit.study.spec, cockpit.forecast.analysis, cockpit.launch.backend, trainer.rundir\n"
        "import cockpit.commands.plan\n"
        "heavy = [m for m in ('torch', 'numpy', 'wfdb') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_cockpit_cli_help_does_not_import_torch():
    code = (
        "import sys\nfrom cockpit.cli import build_parser\nbuild_parser()\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_wheel_ships_templates_and_container(tmp_path):
    """Build the wheel, install it into a fresh venv and find the data files from outside any checkout."""
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(REPO)],
        check=True, capture_output=True,
    )
    wheel = next(dist.glob("hlm_cockpit-*.whl"))
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    # the dependencies come from the environment running the tests (a venv's, or the system interpreter's), listed
    # as plain paths: their .pth files, an editable install of this checkout among them, are not run
    own = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         check=True, capture_output=True, text=True).stdout.strip()
    (Path(own) / "test_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)],
        check=True, capture_output=True,
    )
    code = (
        "import importlib.resources as r, sbatch_templates, containers, cockpit\n"
        "t = [p.name for p in r.files('sbatch_templates').iterdir()]\n"
        "c = [p.name for p in r.files('containers').iterdir()]\n"
        "print(cockpit.__file__)\n"
        "print(sorted(n for n in t if n.endswith('.j2')))\n"
        "print(sorted(n for n in c if n.endswith('.def')))\n"
        "import cockpit.commands.demo as d; assert d.EXAMPLE.exists(), d.EXAMPLE\n"
        "import cockpit.web.server as w; assert 'textual.js' in w.INDEX  # `cockpit serve`'s page\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([str(python), "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    where, templates, defs = out.stdout.strip().splitlines()
    assert str(env_dir) in where, f"imported from {where}, not from the installed wheel"
    assert templates != "[]", "no Jinja2 templates in the wheel"
    assert defs != "[]", "no Apptainer definition in the wheel"

