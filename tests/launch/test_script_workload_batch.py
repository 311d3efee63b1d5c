"""A script workload's batch script: torchrun (under srun across nodes) runs the script with the configuration's
values, each a quoted shell word; no token preparation; the run directory named to the runcontract library;
values no script line can carry are refused naming their key."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from cockpit.launch.slurm.quoting import UnsafeValueError
from cockpit.launch.slurm.render import render_script
from cockpit.study.spec import SpecError, load_study

STUDY = """
[study]
name = "paper-image"
[cluster]
kind = "slurm"
site = "generic"
host = "cluster.example.org"
workdir = "$SCRATCH/hlm"
gpus_per_node = 4
cores_per_node = 32
signal_seconds = 90
[workload]
kind = "script"
command = ["~/work/train_image.py", "--pin-memory", "{pin_memory}", "--tag", "{tag}", "--batch", "{batch_size}"]
mode = "MODE"
env = {DATA_HOME = "$HOME/it's data"}
[workload.keys]
pin_memory = {type = "bool", default = false}
tag = {type = "str", default = "a b'c; $(reboot)"}
[sweep]
gpus_per_node = [1, 4]
nodes = [1, 2]
pin_memory = [false, true]
"""


def study(tmp_path: Path, mode: str = "hooks", text: str = STUDY):
    path = tmp_path / "study.toml"
    path.write_text(text.replace("MODE", mode))
    return load_study(path)


def words_of(script: str, marker: str) -> list[str]:
    """The shell words of the launch line that holds `marker` (continuation lines joined)."""
    joined = script.replace("\\\n", " ")
    line = next(li for li in joined.splitlines() if marker in li)
    return shlex.split(line)


@pytest.mark.parametrize("mode", ["hooks", "explicit"])
def test_the_script_runs_under_torchrun_with_quoted_values(tmp_path: Path, mode: str):
    s = study(tmp_path, mode)
    cfg = next(c for c in s.matrix() if c.nodes == 1 and c.key_values["pin_memory"])
    script = render_script(s, cfg)
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)
    assert "trainer prepare" not in script and "-m trainer" not in script
    assert 'export RUNCONTRACT_RUN_DIR="$RUN_DIR"' in script
    words = words_of(script, "torch.distributed.run")
    tail = words[words.index("--nproc-per-node") + 2:]
    attach = ["-m", "runcontract.attach"] if mode == "hooks" else []
    assert tail == [*attach, "$HOME/work/train_image.py", "--pin-memory", "true", "--tag", "a b'c; $(reboot)",
                    "--batch", "32"]
    assert "export DATA_HOME='$HOME/it'\"'\"'s data'" in script  # a value, never expanded


def test_several_nodes_launch_one_torchrun_per_node_under_srun(tmp_path: Path):
    s = study(tmp_path)
    cfg = next(c for c in s.matrix() if c.nodes == 2)
    script = render_script(s, cfg)
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)
    words = words_of(script, "--rdzv-endpoint")
    assert words[:2] == ["hlm_supervise", "srun"]
    assert words[-4:] == ["--tag", "a b'c; $(reboot)", "--batch", "32"]
    assert "#SBATCH --signal=B:USR1@90" in script


def test_a_value_no_script_line_can_carry_is_refused_naming_its_key(tmp_path: Path):
    with pytest.raises(SpecError, match=r"^study.toml: \[workload.keys\].tag.default: expected a string without a "
                                        r"line break or NUL, got 'two\\nlines'$"):
        study(tmp_path, text=STUDY.replace('default = "a b\'c; $(reboot)"', 'default = "two\\nlines"'))
    s = study(tmp_path, text=STUDY.replace("~/work/train_image.py", "~bob/train.py"))
    with pytest.raises(UnsafeValueError, match=r"^\[workload\].command\[0\]: '~bob/train.py' uses ~user"):
        render_script(s, s.matrix()[0])


def test_a_relative_script_on_a_cluster_is_refused(tmp_path: Path):
    with pytest.raises(SpecError, match=r"^study.toml: \[workload\].command\[0\]: 'train.py' is relative"):
        study(tmp_path, text=STUDY.replace("~/work/train_image.py", "train.py"))
