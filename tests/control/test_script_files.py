"""A script finds its files as the study names them: `files = ["input.txt"]` with `command = [..., "--text",
"input.txt"]` runs in its run directory, where the argument names the file's whole path on this machine."""

from __future__ import annotations

import csv
from pathlib import Path

from cockpit.cli import main as cli
from cockpit.study.spec import load_study
from tests.studies import to_toml

READER = '''"""Reads the text file --text names, then trains a few explicit steps (the file's words as the data)."""
import argparse

import torch

import runcontract

parser = argparse.ArgumentParser()
parser.add_argument("--text", required=True)
words = open(parser.parse_args().text).read().split()  # FileNotFoundError where the path is not found
data = torch.tensor([float(len(w)) for w in words]).reshape(-1, 1)
model = torch.nn.Linear(1, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
with runcontract.Run() as run:
    for x in run.data(data.split(2)):
        with run.part("compute"):
            loss = model(x).pow(2).mean()
            loss.backward()
        with run.part("optimizer"):
            opt.step()
            opt.zero_grad()
        run.step(samples=len(x), loss=loss.item())
'''


def test_a_file_named_in_command_and_files_is_found_where_the_script_runs(tmp_path: Path, capsys):
    (tmp_path / "train.py").write_text(READER)
    (tmp_path / "input.txt").write_text("the study names its files from its own folder " * 4)
    raw = {
        "study": {"name": "reads-a-file"},
        "cluster": {"kind": "local", "workdir": str(tmp_path / "work"), "gpus_per_node": 1, "max_concurrent_jobs": 1},
        "train": {"device": "cpu"},
        "workload": {"kind": "script", "mode": "explicit", "files": ["input.txt"],
                     "command": ["train.py", "--text", "input.txt"]},
        "sweep": {"gpus_per_node": [1]},
    }
    path = tmp_path / "study.toml"
    path.write_text(to_toml(raw))
    study = load_study(path)
    assert list(study.workload.command) == [str(tmp_path / "train.py"), "--text", str(tmp_path / "input.txt")]
    rc = cli(["run", "--headless", str(path), "--out", str(tmp_path / "report"), "--timeout", "200", "--skip-preflight"])
    out = capsys.readouterr().out
    assert rc == 0, out
    rows = list(csv.DictReader((tmp_path / "report" / "scaling.csv").open()))
    assert len(rows) == 1 and float(rows[0]["train_time_s"]) > 0, out
    assert int(float(rows[0]["samples"])) == 36  # the file's 36 words, read where the script ran
