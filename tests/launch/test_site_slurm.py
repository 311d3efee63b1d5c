"""The test Slurm refuses what MeluXina refuses (tests/infra/slurm.sh + accounting.sh): every batch script of
examples/meluxina.toml is accepted by `sbatch --test-only` on the site-shaped `gpu` partition, and a wrong
account, a wrong QOS or a --time over the QOS's MaxWall is refused by sbatch itself, with Slurm's reason
reaching the cockpit's SubmitRefused and the headless run's lines."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
import uuid
from pathlib import Path

import pytest

from cockpit.launch.slurm.parse import SubmitRefused, parse_sbatch
from cockpit.launch.slurm.render import render_script, submit_command
from cockpit.launch.ssh import CommandResult
from cockpit.study.sites import SiteError, site_for
from cockpit.study.spec import load_study
from tests.control.conftest import make_study, remote_workdir, slurm_env  # noqa: F401 - fixtures
from tests.studies import to_toml

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "meluxina.toml"
ACCEPTED = re.compile(r"^sbatch: Job \d+ to start at \S+ using \d+ processors on nodes (mel2\d{3}) in partition gpu$")

# Slurm 22.05's own words (sbatch's stderr) for each refusal.
BAD_ACCOUNT = "Batch job submission failed: Invalid account or account/partition combination specified"
BAD_QOS = "Batch job submission failed: Invalid qos specification"
OVER_WALL = "QOSMaxWallDurationPerJobLimit"
OVER_POLICY = "Batch job submission failed: Job violates accounting/QOS policy"
OVER_QOS = "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"
OVER_PARTITION = "Requested time limit is invalid (missing or exceeds some limit)"
NO_SUCH_NODE = "Requested node configuration is not available"


def _example(work: Path, name: str = "example", **cluster) -> Path:
    """examples/meluxina.toml pointed at this cluster: its workdir and container under `work`, [cluster]
    keys overridden by `cluster` (account p200000, qos default and partition gpu stay unless given)."""
    raw = tomllib.loads(EXAMPLE.read_text())
    raw["study"]["name"] = f"{raw['study']['name']}-{uuid.uuid4().hex[:6]}"
    raw["cluster"].update(workdir=str(work / "hlm-scaling"), container=str(work / "hlm.sif"), **cluster)
    path = work / f"{name}.toml"
    path.write_text(to_toml(raw))
    return path


def _test_only(cluster, scripts: list[Path], *options: str) -> list[str]:
    """`sbatch --test-only` on each script as the test user, in one shell; what sbatch printed for each
    script (its last line says accepted or refused; an error line before it gives the reason)."""
    loop = "; ".join(
        f"sbatch --test-only {shlex.join(options)} {shlex.quote(str(s))} 2>&1; echo '<end>'" for s in scripts
    )
    out = cluster.run(["bash", "-c", loop], timeout=120).stdout
    return [part.strip() for part in out.split("<end>")[:-1]]


def _submit(cluster, study, cfg, work: Path) -> subprocess.CompletedProcess:
    """The cockpit's own submit line (mkdir, cd, sbatch --parsable) for one configuration's script."""
    script = work / f"{cfg.config_id}.sbatch"
    script.write_text(render_script(study, cfg))
    return cluster.run(["bash", "-c", submit_command(study, cfg, str(script))], check=False)


def _one_config(study):
    return next(c for c in study.runnable() if c.gpus_per_node == 4 and c.cpus_per_task == 16)


def test_every_batch_script_of_the_meluxina_example_is_accepted(slurm_cluster) -> None:
    assert {"cpu", "gpu"} <= set(slurm_cluster.site_partitions), slurm_cluster.site_partitions
    work = slurm_cluster.workdir("site-all")
    spec = _example(work)
    scripts_dir = work / "scripts"
    # rendered by the account that submits them, as a user does: the scripts are private to their writer
    rendered = slurm_cluster.run([sys.executable, "-m", "cockpit", "plan", "--render", str(scripts_dir), str(spec)],
                                 cwd=Path(__file__).resolve().parents[2], check=False, timeout=300)
    assert rendered.returncode == 0, rendered.stderr
    scripts = sorted(scripts_dir.glob("*.sbatch"))
    study = load_study(spec)
    assert len(scripts) == len(study.runnable()) == 288
    lines = _test_only(slurm_cluster, scripts)
    refused = [(s.name, line) for s, line in zip(scripts, lines, strict=True) if not ACCEPTED.match(line)]
    assert not refused, refused[:5]
    # The shapes the cockpit lists as too big for a node (gpus x cpus_per_task > 128, never rendered) are
    # the ones the site-shaped nodes cannot hold either: a script of the same GPU count, with that
    # --cpus-per-task on sbatch's command line (it overrides the script's #SBATCH line).
    runnable = study.runnable()
    too_big = {(c.gpus_per_node, c.cpus_per_task) for c in study.matrix() if c not in runnable}
    # (4 x 128 = 512 CPUs is more than the whole gpu partition's 256: Slurm says so in other words.)
    expected = {(2, 128): NO_SUCH_NODE, (4, 64): NO_SUCH_NODE, (4, 128): "More processors requested than permitted"}
    assert too_big == set(expected)
    for (gpus, cpus), message in expected.items():
        cfg = next(c for c in runnable if c.gpus_per_node == gpus)
        (out,) = _test_only(slurm_cluster, [scripts_dir / f"{cfg.config_id}.sbatch"], f"--cpus-per-task={cpus}")
        assert out == f"allocation failure: {message}", (gpus, cpus, out)


@pytest.mark.parametrize(
    ("cluster", "message"),
    [
        ({"account": "p200001"}, BAD_ACCOUNT),  # an account that exists, but not the user's
        ({"account": "p999999"}, BAD_ACCOUNT),  # an account that does not exist
        ({"qos": "defualt"}, BAD_QOS),
    ],
    ids=["foreign-account", "unknown-account", "unknown-qos"],
)
def test_a_wrong_account_or_qos_is_refused_by_sbatch_with_slurms_reason(slurm_cluster, cluster, message) -> None:
    work = slurm_cluster.workdir("site-refuse")
    study = load_study(_example(work, **cluster))
    cfg = _one_config(study)
    result = _submit(slurm_cluster, study, cfg, work)
    assert result.returncode == 1, result.stdout
    assert f"sbatch: error: {message}" in result.stderr, result.stderr
    with pytest.raises(SubmitRefused, match=re.escape(message)):
        parse_sbatch(CommandResult("sbatch", result.returncode, result.stdout, result.stderr))


def test_a_time_over_the_qos_maxwall_is_refused_by_the_profile_and_by_sbatch(slurm_cluster) -> None:
    work = slurm_cluster.workdir("site-wall")
    # The MeluXina profile refuses it before anything is rendered ...
    study = load_study(_example(work, "meluxina", qos="test", time_limit="01:00:00"))
    with pytest.raises(SiteError, match=r"time_limit 01:00:00 exceeds the 30 minutes QOS 'test'"):
        render_script(study, _one_config(study))
    # ... and a profile that does not know the limit (generic) leaves it to Slurm, which refuses at submit.
    study = load_study(_example(work, "generic", site="generic", qos="test", time_limit="01:00:00",
                                cores_per_node=128))  # the generic profile knows no node
    result = _submit(slurm_cluster, study, _one_config(study), work)
    assert result.returncode == 1, result.stdout
    assert f"sbatch: error: {OVER_WALL}" in result.stderr and OVER_POLICY in result.stderr, result.stderr
    with pytest.raises(SubmitRefused, match=OVER_WALL):
        parse_sbatch(CommandResult("sbatch", result.returncode, result.stdout, result.stderr))


def test_each_qos_allows_exactly_the_site_profiles_minutes(slurm_cluster) -> None:
    """sacctmgr's MaxWall per QOS is the profile's [site.qos_max_minutes]: the cap is accepted, a minute more
    is refused; the cpu partition has no GPUs, as the profile says."""
    work = slurm_cluster.workdir("site-qos")
    script = work / "probe.sh"
    script.write_text("#!/bin/bash\ntrue\n")
    limits = site_for(load_study(EXAMPLE)).qos_max_minutes
    assert limits == {"test": 30, "short": 360, "default": 2880}
    common = ("-A", "p200000", "-p", "gpu", "--gpus-per-node=1")
    for qos, minutes in limits.items():
        (ok,) = _test_only(slurm_cluster, [script], *common, "-q", qos, f"--time={minutes}")
        assert ACCEPTED.match(ok), (qos, ok)
        (over,) = _test_only(slurm_cluster, [script], *common, "-q", qos, f"--time={minutes + 1}")
        if minutes < 2880:
            assert over.splitlines() == [f"sbatch: error: {OVER_WALL}", f"allocation failure: {OVER_QOS}"], (qos, over)
        else:  # the partitions' MaxTime is the same 2 days, and Slurm checks it first
            assert over == f"allocation failure: {OVER_PARTITION}", (qos, over)
    (cpu,) = _test_only(slurm_cluster, [script], "-A", "p200000", "-q", "short", "-p", "cpu", "--gpus-per-node=1")
    assert cpu == f"allocation failure: {NO_SUCH_NODE}"
    (cpu_ok,) = _test_only(slurm_cluster, [script], "-A", "p200000", "-q", "short", "-p", "cpu", "-c", "256")
    assert re.match(r"sbatch: Job \d+ to start at \S+ using 256 processors on nodes mel0001 in partition cpu$", cpu_ok)


@pytest.mark.sshd
def test_a_refused_configuration_shows_slurms_reason_while_the_rest_of_the_study_runs(
    make_study, tmp_path: Path  # noqa: F811 - the fixture imported above
) -> None:
    """QOS `onenode` (MaxTRESPerJob=node=1, DenyOnLimit; a QOS of the test cluster, not of MeluXina) refuses
    the study's 2-node configuration at sbatch; the 1-node one runs to the end. The headless lines name the
    refused configuration with Slurm's reason, and the run exits 1."""
    name = f"siteqos-{uuid.uuid4().hex[:6]}"
    spec = make_study(name, "nodes = [1, 2]\ngpus_per_node = [1]", steps=5, qos="onenode", partition="multi")
    study = load_study(spec)
    assert len(study.runnable()) == 2
    one, two = (next(c for c in study.runnable() if c.nodes == n) for n in (1, 2))
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg"), "PYTHONPATH": str(REPO)}
    run = subprocess.run(
        [sys.executable, "-m", "cockpit", "run", "--headless", "--skip-preflight", str(spec),
         "--out", str(tmp_path / "report"), "--timeout", "240"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )
    out = run.stdout
    assert run.returncode == 1, out + run.stderr
    failed = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1 and two.config_id in failed[0], out
    assert "QOSMaxNodePerJobLimit" in failed[0] and OVER_POLICY in failed[0], failed[0]
    assert f"{name}: 1 of 2 configurations failed" in out, out
    # The refusal is named with Slurm's reason at once, and the 1-node run goes on to complete after it.
    lines = out.splitlines()
    refused_at = next(i for i, line in enumerate(lines) if "(0 ok, 1 failed)" in line)
    assert f"REFUSED {two.config_id} (" in lines[refused_at] and "QOSMaxNodePerJobLimit" in lines[refused_at], out
    done_at = next(i for i, line in enumerate(lines) if f"completed {one.config_id}" in line)
    assert refused_at < done_at and "2/2 finished (1 ok, 1 failed)" in lines[done_at], out
