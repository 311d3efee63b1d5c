"""[train] profile_*: a real 2-rank gloo run records torch.profiler traces per rank with the trainer's step
parts as ranges, result.json says which steps were profiled, `cockpit trace` summarises the traces (from a
run directory, and from a study's run read through its backend, over SSH for a Slurm study), and the study
file accepts and refuses the keys in the key table's words."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from cockpit.cli import main as cockpit
from cockpit.figures.traces import load, summarise, torch_view
from cockpit.study.spec import SpecError, parse_study
from runcontract.contract import EXIT_OK, METRICS_FILE, TRACE_INDEX_FILE, trace_file
from runcontract.files import read_json, read_jsonl
from runcontract.records import read_result
from tests.studies import study_raw, write_study
from tests.train.tiny import spawn_world
from trainer.settings import ConfigError, from_config

PROFILE = {"steps": 6, "gpus_per_node": 2, "profile_wait": 1, "profile_warmup": 1, "profile_active": 2,
           "metrics_interval_s": 1e-6}  # one metrics line per step: the trainer's figures of each step
RECORDED = [3, 4]  # step 1 waits, step 2 warms the profiler up, steps 3 and 4 are recorded


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("profiled") / "run"
    spawn_world(2, run_dir, PROFILE)
    return run_dir


def test_each_rank_writes_a_trace_and_result_json_says_which_steps_are_in_it(profiled: Path) -> None:
    r = read_result(profiled)
    assert r is not None
    files = [trace_file(rank, 3, 4) for rank in (0, 1)]
    assert r["profile"]["steps"] == RECORDED and r["profile"]["warmup_steps"] == [2]
    assert r["profile"]["traces"] == files
    assert r["profile"]["schedule"] == {"wait": 1, "warmup": 1, "active": 2, "repeat": 1}
    assert r["timing"]["profiled_steps"] == 3  # warm-up and recorded steps ran under the profiler, inside T
    assert 0 < r["profile"]["traced_s"] < r["timing"]["train_time_s"]
    assert r["timing"]["profile_s"] > 0  # starting, stepping and exporting: outside T
    assert abs(sum(r["breakdown_s"].values()) - r["timing"]["train_time_s"]) < 1e-6  # still adds up to T
    index = read_json(profiled / TRACE_INDEX_FILE)
    assert index is not None and index["cycles"] == [{"first_step": 3, "last_step": 4, "files": files}]
    for rank, rel in enumerate(files):
        summary = summarise(load((profiled / rel).read_bytes(), rel), rel)
        assert summary.rank == rank and summary.steps == RECORDED  # ProfilerStep#N is the run's step N
        steps = {m["step"]: m for m in read_jsonl(profiled / METRICS_FILE).records
                 if m["rank"] == rank and not m.get("final")}
        envelopes = {int(e.name.removeprefix("ProfilerStep#")): e for e in summary.events
                     if e.name.startswith("ProfilerStep#") and e.tid == summary.main_tid}
        for step in RECORDED:  # what does not depend on the machine's load: which parts each step has, on both clocks
            parts = summary.parts_s[step]
            assert parts["comm"] > 0 and parts["compute"] > 0 and parts["data_wait"] > 0 and parts["optimizer"] > 0
            assert all(steps[step][f"{part}_s"] > 0 for part in ("data_wait", "compute", "comm", "optimizer"))
            # the ranges' nesting: the trainer's ranges of step N lie inside ProfilerStep#N, so their sum is
            # at most the step's range and the rest is its "other" part
            env = envelopes[step]
            for e in summary.events:
                if e.name.startswith("hlm:") and env.ts <= e.ts < env.end:
                    assert e.end <= env.end + 1e-3, (rank, step, e.name)
            timed = sum(parts[p] for p in ("data_wait", "compute", "comm", "optimizer"))
            assert timed <= env.dur / 1e6 + 1e-9
            assert timed + parts["other"] == pytest.approx(env.dur / 1e6)
        # sums over the recorded steps: on the trace's clock, the parts add up to the steps' ranges; on the
        # trainer's, the recorded steps are part of T, whose parts add up to it exactly
        assert sum(summary.totals().values()) == pytest.approx(sum(envelopes[s].dur for s in RECORDED) / 1e6)
        assert sum(steps[s]["interval_s"] for s in RECORDED) <= r["timing"]["train_time_s"]
        assert set(torch_view(summary)) == set(RECORDED)
        grads = [s for s in summary.all_reduce if s.in_backward]  # one per gradient bucket and step
        assert len(grads) == len(RECORDED) * r["comm"]["buckets"] and {s.step for s in grads} == set(RECORDED)
        assert any(not s.in_backward for s in summary.all_reduce)  # the stop vote, between steps


def test_cockpit_trace_prints_top_operations_and_all_reduce_spans_per_rank(profiled: Path, capsys) -> None:
    assert cockpit(["trace", str(profiled), "--top", "5"]) == 0
    out = capsys.readouterr().out
    for rank in (0, 1):
        assert f"rank {rank}: {(profiled / trace_file(rank, 3, 4)).resolve()} (steps 3-4)" in out
    assert out.count("top 5 operations by self time:") == 2
    assert "aten::" in out or "autograd::" in out
    assert out.count("all-reduce spans over 2 steps: ") == 2 and "launched during backward (gradient buckets)" in out
    assert "gloo:all_reduce" in out and "exposed wait (hlm:comm)" in out and "ms per step" in out
    assert "step parts (the trainer's hlm: ranges)" in out
    assert "open in Perfetto (https://ui.perfetto.dev, Open trace file) or chrome://tracing:" in out
    assert "these hold none (a CPU run), so it is not computed here" in out  # Holistic Trace Analysis: no GPU


def test_the_comm_range_has_a_track_of_its_own(profiled: Path) -> None:
    """hlm:comm starts in the last bucket's hook (inside autograd's range of that gradient) and ends after
    backward: moved beside the thread, so that every track nests as trace viewers need."""
    trace = json.loads((profiled / trace_file(0, 3, 4)).read_text())
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    comm = [e for e in events if e["name"] == "hlm:comm"]
    compute = [e for e in events if e["name"] == "hlm:compute"]
    assert len(comm) == len(compute) == 2
    assert {e["tid"] for e in comm}.isdisjoint(e["tid"] for e in events if e["name"] != "hlm:comm")
    for c, w in zip(compute, comm, strict=True):
        assert c["ts"] <= w["ts"] and w["ts"] + w["dur"] <= c["ts"] + c["dur"] + 1  # inside compute
    names = [e for e in trace["traceEvents"] if e.get("ph") == "M" and e.get("name") == "thread_name"]
    assert any("hlm:comm" in e["args"]["name"] for e in names)


def test_cockpit_trace_reads_a_local_studys_run_through_its_backend(profiled: Path, tmp_path: Path, capsys) -> None:
    study_file = write_study(tmp_path / "s.toml", "traced", tmp_path / "work",
                             cluster={"cores_per_node": 2, "gpus_per_node": 2},
                             train={"profile_active": 2})
    from cockpit.study.spec import load_study

    study = load_study(study_file)
    cfg = study.matrix()[1]
    shutil.copytree(profiled, study.run_dir(cfg))
    assert cockpit(["trace", str(study_file), cfg.config_id[:6]]) == 0
    out = capsys.readouterr().out
    assert f"2 traces of {study.run_dir(cfg)}\n" in out
    assert out.count("top 10 operations by self time:") == 2
    assert cockpit(["trace", str(study_file), "zzz"]) == 2
    assert "'zzz' names 0 configurations" in capsys.readouterr().err


def test_cockpit_trace_reads_a_slurm_studys_run_over_ssh(profiled: Path, sshd_server, capsys) -> None:
    """The Slurm backend's read_file over the one SSH connection (SFTP, in pieces of at most 8 MiB)."""
    from cockpit.study.spec import load_study

    workdir = Path(tempfile.mkdtemp(prefix="hlm-trace-"))
    try:
        workdir.chmod(0o755)
        study_file = write_study(workdir / "s.toml", "traced", workdir, sweep={"gpus_per_node": [2]}, cluster={
            "kind": "slurm", "host": "127.0.0.1", "port": sshd_server.port, "user": sshd_server.user,
            "identity_file": str(sshd_server.key), "known_hosts": str(sshd_server.known_hosts),
            "cores_per_node": 2, "gpus_per_node": 2})
        study = load_study(study_file)
        cfg = study.matrix()[0]
        run_dir = Path(study.run_dir(cfg))
        shutil.copytree(profiled, run_dir)
        for path in [workdir, *workdir.rglob("*")]:
            shutil.chown(path, sshd_server.user)
        out_dir = workdir / "copies"
        assert cockpit(["trace", str(study_file), cfg.config_id, "--out", str(out_dir)]) == 0
        out = capsys.readouterr().out
        assert f"2 traces of {run_dir} (on " in out and out.count("all-reduce spans over 2 steps: ") == 2
        for rank in (0, 1):  # fetched whole over SFTP and copied for a local viewer
            name = Path(trace_file(rank, 3, 4)).name
            assert (out_dir / name).read_bytes() == (run_dir / trace_file(rank, 3, 4)).read_bytes()
            assert str((out_dir / name).resolve()) in out
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def test_a_run_that_ends_inside_a_cycle_writes_what_it_recorded(tmp_path: Path) -> None:
    """One process, no DDP: the trace is written when the profiler stops with the run; no comm range."""
    from tests.train.tiny import tiny_data, tiny_settings
    from trainer.run.train import run

    s = tiny_settings(tmp_path / "one", steps=4, profile_active=5, profile_wait=0, profile_warmup=0)
    assert run(s, tiny_data(s)) == EXIT_OK
    r = read_result(s.run_dir)
    assert r is not None and r["profile"]["steps"] == [2, 3, 4]  # the first step is never profiled
    assert r["profile"]["traces"] == [trace_file(0, 2, 4)] and r["timing"]["profiled_steps"] == 3
    summary = summarise(load((s.run_dir / trace_file(0, 2, 4)).read_bytes(), "t"), "t")
    assert summary.steps == [2, 3, 4] and summary.all_reduce == []
    assert all(parts["comm"] == 0 and parts["compute"] > 0 for parts in summary.parts_s.values())


def test_a_run_without_traces_says_how_to_get_them(tmp_path: Path, capsys) -> None:
    (tmp_path / "run").mkdir()
    assert cockpit(["trace", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "no traces" in err and "[train] profile_active = N" in err


def test_the_study_and_the_trainer_take_the_profile_keys_from_the_key_table(tmp_path: Path) -> None:
    def parse(train: dict) -> dict:
        study = parse_study(study_raw("p", tmp_path, cluster={"cores_per_node": 4}, train=train, sweep={}), tmp_path / "p.toml")
        return study.run_config(study.matrix()[0])["train"]

    config = parse({"profile_active": 3, "profile_wait": 0, "profile_warmup": 2, "profile_repeat": 0})
    assert {k: config[k] for k in config if k.startswith("profile_")} == {
        "profile_active": 3, "profile_wait": 0, "profile_warmup": 2, "profile_repeat": 0}
    assert not any(k.startswith("profile_") for k in parse({}))  # unset: not profiled, left out of config.json
    with pytest.raises(SpecError, match=r"p\.toml: \[train\]\.profile_active: expected an integer >= 1, got 0"):
        parse({"profile_active": 0})
    with pytest.raises(SpecError, match=r"\[train\]\.profile_wait: expected an integer >= 0, got '1'"):
        parse({"profile_wait": "1"})
    with pytest.raises(SpecError, match=r"\[train\]\.profile_repeat: expected an integer >= 0, got -1"):
        parse({"profile_repeat": -1})
    with pytest.raises(ConfigError, match=r"config.json: train\.profile_active: expected an integer >= 1, got 0"):
        from_config(tmp_path, {"train": {"steps": 1, "profile_active": 0}})


def test_the_trace_reader_does_not_import_torch() -> None:
    code = ("import sys, cockpit.figures.traces, cockpit.commands.trace; "
            "sys.exit('torch' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
