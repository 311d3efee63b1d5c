"""`cockpit plan` of a script workload: its swept keys are columns, the HLM trainer's axes and data are not
mentioned, and the plan says what the workload's mode cannot give."""

from __future__ import annotations

from pathlib import Path

from cockpit.cli import main as cli

STUDY = """
[study]
name = "plan-script"
[cluster]
gpus_per_node = 2
[workload]
kind = "script"
command = ["train.py", "--lr", "{lr}", "--pin", "{pin_memory}"]
mode = "hooks"
[workload.keys]
lr = {type = "float", default = 0.1, minimum = 0}
pin_memory = {type = "bool", default = false}
[sweep]
lr = [0.1, 0.5]
gpus_per_node = [1, 2]
"""


def test_plan_shows_the_scripts_keys_and_what_its_mode_cannot_give(tmp_path: Path, capsys):
    (tmp_path / "train.py").write_text("pass\n")
    path = tmp_path / "study.toml"
    path.write_text(STUDY.replace("[cluster]", f"[cluster]\nworkdir = \"{tmp_path / 'work'}\""))
    assert cli(["plan", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "4 configurations (2 gpus_per_node x 2 lr) in 2 baseline groups" in out
    assert "fixed: precision=fp32, batch_size=32, cpus_per_task=1, strategy=ddp, pin_memory=false" in out
    assert "window" not in out and "synthetic" not in out and "dataset" not in out
    assert ("what the script workload (mode hooks) cannot give: communication where the script builds no "
            "DistributedDataParallel; data wait where the script uses no DataLoader") in out
