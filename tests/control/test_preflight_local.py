"""The preflight on this machine (the local executor runs the same `hlm-train preflight` under torchrun):
seconds long, every check either run or saying why not, kept in the store by the study file's digest so
the runner submits only after it passed and never runs it twice for the same file."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cockpit.preflight.checks import FAIL, NOT_RUN, PASS
from cockpit.preflight.jobs import job_config, preflight_jobs, study_digest
from cockpit.preflight.table import report_lines
from cockpit.run.preflight import run_preflight
from cockpit.run.runner import PreflightFailed
from cockpit.run.session import open_session
from cockpit.store import preflights
from cockpit.study.spec import load_study
from runcontract.contract import EXIT_USAGE
from tests.studies import mitdb_data, write_study
from trainer.config_keys import PREFLIGHT_KEYS, check_preflight_config


def _study(tmp_path: Path, **data):
    path = write_study(tmp_path / "pf.toml", "pf", tmp_path / "work",
                       cluster={"gpus_per_node": 2, "cores_per_node": 2}, data=data or None,
                       train={"steps": 2, "window": 32}, sweep={"gpus_per_node": [1, 2]})
    return load_study(path)


def test_one_job_per_node_count_with_the_largest_gpus_per_node(tmp_path: Path):
    jobs = preflight_jobs(_study(tmp_path))
    assert [(j.nodes, j.gpus_per_node) for j in jobs] == [(1, 2)]


async def test_local_preflight_runs_every_check_or_says_why_not(tmp_path: Path):
    study = _study(tmp_path, **mitdb_data(tmp_path / "tokens"))
    backend = open_session(study).backend
    try:
        report = await run_preflight(study, backend, poll_s=0.2)
    finally:
        await backend.close()
    assert report.passed, report_lines(report)
    rows = {c.area: c for c in report.jobs[0].checks}
    assert rows["torch"].verdict == PASS and rows["trainer"].verdict == PASS
    assert rows["workers"].verdict == PASS and rows["workers"].found.startswith("2 ranks on 1 node")
    assert rows["data mitdb"].verdict == PASS and "101: 360 Hz" in rows["data mitdb"].found
    assert re.match(r"gloo 2 ranks: bus bandwidth [0-9.]+ GB/s", rows["all-reduce intra-node"].found)
    for area in ("gpus", "nvml", "queue wait"):
        assert rows[area].verdict == NOT_RUN and rows[area].found  # never passed without having run
    assert report.links["intra_node"] > 0


async def test_tokenizer_invalid_for_the_records_rate_is_caught_with_the_tokenizers_words(tmp_path: Path):
    data = mitdb_data(tmp_path / "tokens")
    data["tokenizer"] = {**data["tokenizer"], "fs": 30, "highpass_hz": 19}
    study = _study(tmp_path, **data)
    backend = open_session(study).backend
    try:
        report = await run_preflight(study, backend, poll_s=0.2)
    finally:
        await backend.close()
    assert not report.passed
    (job, check), = report.failures()
    assert check.area == "data mitdb" and check.verdict == FAIL
    assert "tokenizer.highpass_hz = 19 Hz is not below the Nyquist frequency of record '101' (15 Hz at 30 Hz)" in check.found


async def test_runner_submits_only_after_the_files_preflight_passed_and_runs_it_once(tmp_path: Path):
    data = mitdb_data(tmp_path / "tokens")
    data["datasets"]["mitdb"]["path"] = str(tmp_path / "missing")
    study = _study(tmp_path, **data)
    bad_digest = study_digest(study)
    session = open_session(study, preflight=True)
    try:
        with pytest.raises(PreflightFailed, match="data mitdb"):
            await session.runner.start()
        assert session.store.jobs(session.runner.key) == []
    finally:
        await session.runner.close()
        session.store.close()
    good = _study(tmp_path, **mitdb_data(tmp_path / "tokens"))  # the file fixed: a new digest
    assert study_digest(good) != bad_digest
    lines: list[str] = []
    session = open_session(good, preflight=True)
    session.runner.preflight_listeners.append(lines.append)
    session.runner.preflight_report_listeners.append(lambda report: lines.append(f"report {report.passed}"))
    try:
        await session.runner.start()
        assert preflights.passed(session.store, good.name, study_digest(good))
        assert lines[-2:] == ["preflight passed: 1 job(s)", "report True"]
        lines.clear()
        await session.runner.start()  # the same file again: the kept preflight holds
        assert lines == [f"preflight of this study file ({study_digest(good)}) passed before: not run again"]
    finally:
        await session.runner.close()
        session.store.close()


async def test_a_study_that_does_not_fit_its_work_directory_is_refused_with_the_estimate_beside(small_fs,
                                                                                               tmp_path: Path):
    """A 2 MB work directory (a real tmpfs) and a study of two runs of a model whose checkpoints alone need
    more: both space rows fail, each showing the free space and the estimate with its inputs."""
    fs = small_fs("2m")
    path = write_study(tmp_path / "big.toml", "big", fs.path, cluster={"gpus_per_node": 2, "cores_per_node": 2},
                       data=mitdb_data(tmp_path / "tokens"), model={"layers": 2, "d_model": 128, "heads": 2},
                       train={"steps": 2, "window": 32}, sweep={"gpus_per_node": [1, 2]})
    study = load_study(path)
    backend = open_session(study).backend
    try:
        report = await run_preflight(study, backend, poll_s=0.2)
    finally:
        await backend.close()
    assert not report.passed
    rows = {c.area: c for c in report.jobs[0].checks}
    space, free = rows["work directory space"], rows["free space"]
    assert space.verdict == FAIL and free.verdict == FAIL
    assert re.fullmatch(rf"[\d.]+ [kM]?B / 2.1 MB, [\d.]+ [kM]?B free \(df on {re.escape(str(fs.path))}\)", space.found)
    assert re.match(r"at least [\d.]+ MB = 2 runs' checkpoints and models [\d.]+ MB \([\d,]+ parameters at most, "
                    r"16 B each\) \+ saves in flight", space.expected), space.expected
    assert "free space in the work directory, or move [cluster].workdir" in space.fix


def test_the_written_config_json_is_judged_by_the_one_schema_hlm_train_reads(tmp_path: Path):
    study = _study(tmp_path, **mitdb_data(tmp_path / "tokens"))
    job = preflight_jobs(study)[0]
    config = job_config(study, job, str(tmp_path / "work" / "pf"))
    assert set(config) <= {k.name for k in PREFLIGHT_KEYS}
    judged = check_preflight_config(config, "config.json", ValueError)
    assert judged["nodes"] == 1 and judged["gpus_per_node"] == 2 and "mitdb" in judged["datasets"]


@pytest.mark.parametrize(("change", "words"), [
    ({"probe_byte": 4}, r"config\.json: preflight\.probe_byte is not a known key \(did you mean 'probe_bytes'\?\)"),
    ({"nodes": 0}, r"config\.json: preflight\.nodes: expected an integer >= 1, got 0"),
    ({"datasets": {"mitdb": {"pth": "/x"}}}, r"preflight\.datasets: expected a table of dataset name = "),
])
def test_hlm_train_preflight_refuses_a_bad_config_json_in_one_line(tmp_path: Path, change: dict, words: str):
    study = _study(tmp_path, **mitdb_data(tmp_path / "tokens"))
    run_dir = tmp_path / "pf-run"
    run_dir.mkdir()
    config = {**job_config(study, preflight_jobs(study)[0], str(tmp_path / "work" / "pf")), **change}
    (run_dir / "config.json").write_text(json.dumps(config))
    done = subprocess.run([sys.executable, "-m", "trainer", "preflight", "--run-dir", str(run_dir)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == EXIT_USAGE, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and re.search(words, lines[0]), done.stderr
    assert not (run_dir / "preflight.json").exists()
