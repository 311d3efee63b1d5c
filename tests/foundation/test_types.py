"""The type check CI runs (.ci/run: `mypy`, configured in pyproject.toml) reaches the GPU-only code: a
misspelt torch.cuda / torch.distributed / pynvml name or a wrong call there fails it, although this
machine never runs those branches. Checked on small files with the project's own configuration; that
the project itself passes is CI's separate `mypy` step."""

from __future__ import annotations

from pathlib import Path

import pytest
from mypy import api

ROOT = Path(__file__).resolve().parents[2]


def check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> tuple[str, int]:
    """mypy's report on one file and its exit status, as CI would give them."""
    monkeypatch.chdir(ROOT)  # the project's packages are found from the repository root, as in CI
    path = tmp_path / "snippet.py"
    path.write_text(source, encoding="utf-8")
    out, err, status = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--no-error-summary", str(path)])
    return out + err, status


GOOD = '''
import datetime
from pathlib import Path

import pynvml
import torch
import torch.distributed as dist

from runcontract.nvml import NvmlSampler

def gpu_branch(handle: object) -> None:
    if torch.cuda.is_available() and torch.cuda.is_bf16_supported():
        dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=60), device_id=torch.device("cuda", 0))
    pynvml.nvmlInit()
    pynvml.nvmlDeviceGetUtilizationRates(handle)
    NvmlSampler(Path("gpu.jsonl"), 500).start().stop()
'''


def test_the_gpu_branch_as_written_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report, status = check(tmp_path, monkeypatch, GOOD)
    assert status == 0, report


@pytest.mark.parametrize(("written", "misspelt", "message"), [
    ("torch.cuda.is_bf16_supported()", "torch.cuda.is_bf16_suported()",
     'Module has no attribute "is_bf16_suported"'),
    ("timeout=datetime.timedelta(seconds=60)", "timeout=60", 'Argument "timeout" to "init_process_group"'),
    ("pynvml.nvmlDeviceGetUtilizationRates(handle)", "pynvml.nvmlDeviceGetUtilisationRates(handle)",
     'Module has no attribute "nvmlDeviceGetUtilisationRates"'),
    ("pynvml.nvmlInit()", "pynvml.nvmlInit(0)", 'Too many arguments for "nvmlInit"'),
    ("start().stop()", "start().stpo()", '"NvmlSampler" has no attribute "stpo"'),
])
def test_a_misspelling_in_a_gpu_branch_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, written: str,
                                             misspelt: str, message: str) -> None:
    assert written in GOOD
    report, status = check(tmp_path, monkeypatch, GOOD.replace(written, misspelt))
    assert status == 1 and message in report, report
