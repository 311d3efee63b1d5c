"""The second paper's examples (examples/workloads/) as studies on the real test Slurm, reached over the real sshd:
each on 1 and 2 workers to the end through sbatch, torchrun under srun and the preflight, with `--json` lines
whose figures add up (tests/control/test_json_events._check), the parts adding up to T on every row of the
report, and the 2-worker T predicted from the 1-worker baseline and the runs' own start-up probes."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import pytest

from tests.control.conftest import slurm_cluster_table
from tests.control.test_json_events import _check, _run_json
from tests.control.test_workload_examples import EXAMPLES, check_rows, rows_of
from tests.studies import to_toml

SIZES = {"image": ({"batch_size": [16]}, {"steps": 4, "size": 16}),
         "lm": ({"batch_size": [4]}, {"steps": 4, "seq": 32, "layers": 1, "width": 64})}


def slurm_example(example: str, name: str, workdir: Path, sshd, slurm_env: dict[str, str]) -> Path:
    """The example's study on the test Slurm: its script by absolute path (as a cluster study names it), a
    test-sized sweep on 1 and 2 workers."""
    raw = tomllib.loads((EXAMPLES / f"{example}.toml").read_text())
    sweep, defaults = SIZES[example]
    raw["study"]["name"] = name
    raw["cluster"] = slurm_cluster_table(sshd, slurm_env, workdir=str(workdir))
    raw["workload"]["command"][0] = str(EXAMPLES / raw["workload"]["command"][0])
    raw["sweep"] = {"gpus_per_node": [1, 2], **sweep}
    for key, value in defaults.items():
        raw["workload"]["keys"][key]["default"] = value
    path = workdir / f"{name}.toml"
    path.write_text(to_toml(raw))
    return path


@pytest.mark.slurm
@pytest.mark.sshd
@pytest.mark.parametrize("example", ["image", "lm"])
def test_each_example_runs_on_the_test_slurm_on_one_and_two_workers(example, sshd_server, slurm_env, remote_workdir):
    pytest.importorskip("sklearn" if example == "image" else "transformers",
                        reason="the examples need the workloads extra: pip install -e .[workloads]")
    name = f"{example}-slurm"
    study = slurm_example(example, name, remote_workdir, sshd_server, slurm_env)
    report = remote_workdir / "report"
    code, events, err = _run_json(study, "--timeout", "500", "--out", str(report))
    assert code == 0, err
    _check(events, name)
    two = check_rows(rows_of(report))  # DDP's all-reduce, seen by the hooks (image) or the callback (LM)
    # predicted from the baseline's comm.grad_bytes and the 2-worker run's own start-up probe (runcontract.probe)
    assert two["predicted_t_same_work_s"] != "", two["prediction_note"]
    assert "measured by 1 run(s) of this study" in two["prediction_note"]
    assert math.isclose(float(two["prediction_error"]),
                        float(two["t_same_work_s"]) / float(two["predicted_t_same_work_s"]) - 1, rel_tol=1e-6)
