"""Every data-parallel strategy on 2 real gloo ranks: stopped by SIGTERM, resumed, and ending where one process
on the doubled batch ends; memory per rank counted from the tensors, communication split by kind adding up."""

from __future__ import annotations

import faulthandler
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.multiprocessing as mp

from cockpit.forecast.prediction import Links, Prediction, measured_links, predict
from cockpit.forecast.prediction_words import memory_flag
from cockpit.forecast.straggler import TERM as WAIT
from runcontract.axes import STRATEGIES
from runcontract.contract import EXIT_CHECKPOINTED, EXIT_OK, METRICS_FILE
from runcontract.files import read_jsonl
from runcontract.records import read_result
from tests.train.test_ddp import weights
from tests.train.tiny import free_port, tiny_data, tiny_settings
from trainer import rundir
from trainer.run import checkpoint
from trainer.run.train import run

# The pair accumulates 2 micro-batches of 2 (the first without gradient synchronisation), so its global batch is
# the single process's 8 windows; rank 1 gets SIGTERM during step 5 (its 9th fetch).
PAIR = {"batch_size": 2, "grad_accum": 2, "steps": 6, "d_model": 32, "layers": 2}
SIGNAL_FETCH = 4 * 2 + 1


def _ranks(rank: int, world: int, ports: list[int], base: str, signal_rank: int) -> None:
    """One rank's life through every strategy in turn, interrupted and then resumed: one process start for all
    eight runs (starting torch twice per run would cost most of the test's time)."""
    faulthandler.enable()  # a rank that dies of a signal prints where it was (the parent sees only the signal)
    os.environ.update({"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank),
                       "LOCAL_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1"})
    for i, strategy in enumerate(STRATEGIES * 2):
        interrupted = i < len(STRATEGIES)
        os.environ["MASTER_PORT"] = str(ports[i])
        s = tiny_settings(Path(base) / strategy, strategy=strategy, **PAIR)
        code = run(s, tiny_data(s, signal_at=SIGNAL_FETCH if interrupted and rank == signal_rank else 0))
        expect = EXIT_CHECKPOINTED if interrupted else EXIT_OK
        if code != expect:
            raise SystemExit(f"rank {rank}, {strategy}: exited with {code}, expected {expect}")
        if interrupted and rank == 0:  # what the stop left for the resume to read
            left = {str(f.relative_to(s.run_dir)): f.stat().st_mode & 0o777 for f in s.run_dir.rglob("*")}
            named = checkpoint.load(s.run_dir / rundir.CHECKPOINT_FILE)["shards"]
            (Path(base) / f"{strategy}.stopped.json").write_text(json.dumps({"files": left, "shards": named}))


@pytest.fixture(scope="module")
def pair_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("strategies")
    mp.spawn(_ranks, args=(2, [free_port() for _ in range(2 * len(STRATEGIES))], str(base), 1), nprocs=2,
             join=True)
    return base


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One process on the doubled batch, configured as fsdp: with one worker every strategy is the plain model."""
    run_dir = tmp_path_factory.mktemp("single")
    s = tiny_settings(run_dir, strategy="fsdp", **{**PAIR, "batch_size": 8, "grad_accum": 1})
    assert run(s, tiny_data(s)) == EXIT_OK
    return run_dir


def _result(run_dir: Path) -> dict[str, Any]:
    result = read_result(run_dir)
    assert result is not None, f"{run_dir}: no result.json"
    return result


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_each_strategy_resumes_after_sigterm_and_ends_where_one_process_ends(pair_runs: Path, single: Path,
                                                                            strategy: str) -> None:
    run_dir = pair_runs / strategy
    result = _result(run_dir)
    assert result["parallel"]["applied"] == strategy and result["world_size"] == 2
    assert result["timing"]["resumes"] == 1 and result["timing"]["steps"] == 6
    assert not (run_dir / rundir.CHECKPOINT_FILE).exists()
    a, b = weights(single), weights(run_dir)
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(b[key], a[key], rtol=1e-4, atol=1e-5, msg=f"{strategy}: parameter {key} differs")
    # the loss curve continues: the resumed segment's records start after the step the first one stopped at
    records = [r for r in read_jsonl(run_dir / METRICS_FILE).records if r["rank"] == 0]
    steps = [r["step"] for r in records if r["steps_in_interval"]]
    assert steps == sorted(steps) and steps[-1] == 6 and len(set(steps)) == len(steps)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_sharded_strategy_saves_each_ranks_shard_and_no_rank_gathers_the_state(pair_runs: Path,
                                                                                strategy: str) -> None:
    stopped = json.loads((pair_runs / f"{strategy}.stopped.json").read_text())
    left, named = stopped["files"], stopped["shards"]
    shards = [f for f in left if f.startswith(rundir.SHARDS_DIR + "/") and not left[f] & 0o100]
    assert rundir.CHECKPOINT_FILE in left
    if strategy.startswith("fsdp"):  # torch.distributed.checkpoint: one file per rank and the metadata
        assert sorted(Path(f).name for f in shards) == [".metadata", "__0_0.distcp", "__1_0.distcp"], shards
        assert {str(Path(f).parent) for f in shards} == {named}  # one save, the one checkpoint.pt names
        assert {left[f] for f in shards} == {0o600} and left[named] == left[rundir.SHARDS_DIR] == 0o700  # private
    else:
        assert not shards and named is None, shards  # whole in checkpoint.pt (ZeroRedundancyOptimizer consolidated on rank 0)
    assert not (pair_runs / strategy / rundir.SHARDS_DIR).exists()  # the finished run removed them


def test_one_process_degenerates_to_the_plain_model(single: Path) -> None:
    result = _result(single)
    assert result["parallel"] == {"strategy": "fsdp", "applied": "none", "sharded": [], "mixed_precision": None}
    assert result["comm"]["by_kind"] == {} and result["breakdown_s"]["comm"] == 0.0


def test_sharded_strategies_hold_less_per_rank_than_ddp(pair_runs: Path) -> None:
    memory = {s: _result(pair_runs / s)["memory"] for s in STRATEGIES}
    ddp = memory["ddp"]
    assert {m["rank"] for m in ddp["by_rank"]} == {0, 1} and ddp["peak_bytes"] > 0
    assert ddp["params_bytes"] == ddp["grads_bytes"] > 0 and ddp["optimizer_bytes"] >= 2 * ddp["params_bytes"]
    for rank in (0, 1):  # ZeRO-1 shards the optimizer state only
        zero, full = memory["zero1"]["by_rank"][rank], ddp["by_rank"][rank]
        assert zero["params_bytes"] == full["params_bytes"] and zero["optimizer_bytes"] < full["optimizer_bytes"]
    for fsdp in ("fsdp", "fsdp_noreshard"):  # FSDP shards all three: about half each on 2 ranks (plus padding)
        for part in ("params_bytes", "grads_bytes", "optimizer_bytes"):
            assert memory[fsdp][part] < 0.6 * ddp[part], (fsdp, part)
        assert memory[fsdp]["model_states_bytes"] < memory["zero1"]["model_states_bytes"] < ddp["model_states_bytes"]


def test_communication_by_kind_adds_up_to_the_comm_part(pair_runs: Path) -> None:
    kinds = {"ddp": {"all_reduce"}, "zero1": {"all_reduce", "broadcast"}, "fsdp": {"all_gather", "reduce_scatter"},
             "fsdp_noreshard": {"all_gather", "reduce_scatter"}}
    for strategy in STRATEGIES:
        result = _result(pair_runs / strategy)
        by_kind, breakdown = result["comm"]["by_kind"], result["breakdown_s"]
        assert set(by_kind) == kinds[strategy], strategy
        assert breakdown["comm"] == pytest.approx(sum(k["exposed_s"] for k in by_kind.values()), rel=1e-9)
        assert sum(breakdown.values()) == pytest.approx(result["timing"]["train_time_s"], rel=1e-9)
    grad_bytes = _result(pair_runs / "ddp")["comm"]["grad_bytes"]
    steps = 6
    assert _result(pair_runs / "ddp")["comm"]["by_kind"]["all_reduce"]["bytes"] == steps * grad_bytes
    fsdp = _result(pair_runs / "fsdp")["comm"]["by_kind"]
    noreshard = _result(pair_runs / "fsdp_noreshard")["comm"]["by_kind"]
    # parameters gathered before forward and again before backward, unless kept from forward to backward
    assert fsdp["all_gather"]["bytes"] == 2 * noreshard["all_gather"]["bytes"]
    assert fsdp["reduce_scatter"]["bytes"] == noreshard["reduce_scatter"]["bytes"] >= steps * grad_bytes


def test_prediction_prices_each_strategy_and_shards_memory_as_measured(pair_runs: Path, single: Path) -> None:
    """cockpit.forecast.prediction from the real one-process baseline and the pair runs' own link probe: each strategy's
    collectives (fsdp 1.5x ddp's bytes, fsdp_noreshard and ddp the same, zero1 a broadcast more), its memory
    per rank against what the pair runs held, and the GPU memory flag."""
    base = _result(single)
    runs = {s: _result(pair_runs / s) for s in STRATEGIES}
    measured = measured_links(runs.values())
    assert measured.intra_node is not None and measured.intra_node.fits.get(2)  # each pair run's probe swept sizes
    # the ring model first, as for a probe without the alpha-beta sweep (an older trainer's)
    links = Links(intra_node=replace(measured.intra_node, fits={}), contention=measured.contention)
    predicted = {s: predict(base, 1, 2, 1.0, links, strategy=s) for s in STRATEGIES}
    p = {s: v for s, v in predicted.items() if isinstance(v, Prediction)}
    assert set(p) == set(STRATEGIES), predicted
    # each strategy's collectives, beside the wait for the slower rank the baseline's per-step spread prices
    # (cockpit/forecast/straggler.py, tested there)
    assert set(p["zero1"].comm_by_kind) - {WAIT} == {"all_reduce", "broadcast"}
    assert set(p["fsdp"].comm_by_kind) - {WAIT} == {"all_gather", "reduce_scatter"}
    # per step on 2 workers, G the model's bytes over the probed bus bandwidth, alpha the probed latency per ring
    # step, 3 FSDP groups (2 blocks and the root), ZeRO-1 one broadcast per trainable tensor; one DDP bucket leaves
    # nothing to overlap on this tiny model
    link = links.intra_node
    assert link is not None and link.latency_s > 0
    g, alpha, steps = base["comm"]["grad_bytes"] / link.busbw, link.latency_s, base["timing"]["steps"] / 2
    tensors = base["model"]["parameter_tensors"]
    expected = {"ddp": g + 2 * alpha, "zero1": g + 2 * alpha + 0.5 * g + tensors * alpha,
                "fsdp": 1.5 * g + 2 * 3 * alpha + 3 * alpha, "fsdp_noreshard": g + 3 * alpha + 3 * alpha}
    for s in STRATEGIES:
        assert p[s].parts["comm"] == pytest.approx(steps * expected[s] + p[s].comm_by_kind.get(WAIT, 0.0)), s
    # with the sweep: each call kind the probe fitted on 2 ranks is priced calls x alpha + G / beta per round
    # (exposed by the rule: the pair runs' measured overlap is tests/foundation/test_overlap.py's)
    grad, buckets = base["comm"]["grad_bytes"], max(1, int(base["comm"]["buckets"]))
    for s in STRATEGIES:
        fitted = predict(base, 1, 2, 1.0, replace(measured, overlap={}), strategy=s)
        assert isinstance(fitted, Prediction) and "alpha-beta per call measured on 2 ranks" in fitted.link
        for kind, seconds in fitted.comm_by_kind.items():
            fit = measured.intra_node.fit(kind, 2)
            if fit is None:  # the time did not grow with the size on this run: the ring model prices it
                continue
            calls, rounds = {"all_reduce": (buckets, 1), "broadcast": (tensors, 1), "reduce_scatter": (3, 1),
                             "all_gather": (3, 2 if s == "fsdp" else 1)}[kind]
            assert seconds == pytest.approx(steps * rounds * (calls * fit[0] + grad / fit[1])), (s, kind)
    for s in STRATEGIES:
        mem, held = p[s].memory, runs[s]["memory"]
        assert mem is not None
        for part in ("params_bytes", "grads_bytes", "optimizer_bytes"):  # FSDP pads each shard a little
            assert mem[part] == pytest.approx(held[part], rel=0.05), (s, part)
    just_below = p["fsdp"].memory["peak_bytes"] - 1
    assert "exceeds the GPU's" in memory_flag(p["fsdp"].memory, "gpu", just_below)
    assert memory_flag(p["fsdp"].memory, "cpu", just_below) == ""
    assert memory_flag(p["fsdp"].memory, "gpu", just_below + 2) == ""


def test_a_ddp_worker_loads_neither_the_sharded_strategies_nor_scipy_signal() -> None:
    """The sharded strategies' modules are imported by the runs that shard, and scipy.signal (about 1 s of a
    worker's CPU at start-up: bench/worker_startup.py) by the runs that filter."""
    heavy = ("trainer.parallelism.fsdp", "trainer.parallelism.zero1", "scipy.signal")
    code = ("import sys; from trainer.run.train import run; import trainer.data.dataset; "
            "from trainer.parallelism.parallel import layout_of; layout_of('ddp'); layout_of('none'); "
            "print(' '.join(sorted(sys.modules)))")
    loaded = set(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                                cwd=Path(__file__).resolve().parents[2]).stdout.split())
    assert {"trainer.parallelism.layout", "torch.nn.parallel", "trainer.data.atrial_lock"} <= loaded
    assert not [m for m in loaded if m.startswith(heavy)]
