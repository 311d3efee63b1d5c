"""Real 2-process gloo DDP against one process on the doubled batch: same parameters, measured comm."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import torch

from cockpit.forecast.prediction import Overlap, measured_links, overlap_setting
from runcontract import ddp_buckets, probe
from runcontract.contract import EXIT_OK, METRICS_FILE
from runcontract.files import read_jsonl
from runcontract.records import read_result
from tests.train.tiny import VOCAB, spawn_world, tiny_data, tiny_settings
from trainer import rundir
from trainer.measure.timing import union_s
from trainer.model import HeartLanguageModel, ModelConfig
from trainer.run import checkpoint
from trainer.run.train import run


def weights(run_dir: Path) -> dict[str, torch.Tensor]:
    return checkpoint.load(run_dir / rundir.MODEL_FILE)["model"]


def test_two_process_steps_equal_one_process_on_doubled_batch(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    s = tiny_settings(one, batch_size=8, steps=3)
    assert run(s, tiny_data(s)) == EXIT_OK
    spawn_world(2, two, {"batch_size": 4, "steps": 3})

    w1, w2 = weights(one), weights(two)
    assert w1.keys() == w2.keys()
    for key in w1:
        torch.testing.assert_close(w2[key], w1[key], rtol=1e-5, atol=1e-6, msg=f"parameter {key} differs")
    torch.manual_seed(0)
    initial = HeartLanguageModel(ModelConfig(vocab_size=VOCAB, max_len=16, layers=1, d_model=16, heads=2))
    changed = [k for k, v in initial.state_dict().items() if not torch.equal(v, w1[k])]
    assert len(changed) > len(w1) // 2, "training left most parameters at their initial values"

    r1, r2 = read_result(one), read_result(two)
    assert r1["world_size"] == 1 and r2["world_size"] == 2
    assert r1["timing"]["samples"] == r2["timing"]["samples"] == 24
    assert r1["breakdown_s"]["comm"] == 0.0
    assert r2["breakdown_s"]["comm"] > 0.0
    assert r2["backend"] == "gloo" and r1["backend"] == "none"
    ranks = {rec["rank"] for rec in read_jsonl(two / METRICS_FILE).records}
    assert ranks == {0, 1}


def test_a_slowed_rank_is_named_the_straggler_with_its_excess(tmp_path: Path) -> None:
    """Rank 1 sleeps 100 ms inside every step's compute (test-only keys): rank 0 waits for it in all-reduce.
    The margins are half the injected 0.8 s, so a loaded machine slowing both ranks does not matter."""
    from cockpit.forecast.analysis import analyse

    one, two = tmp_path / "one", tmp_path / "two"
    s = tiny_settings(one, steps=8)
    assert run(s, tiny_data(s)) == EXIT_OK
    spawn_world(2, two, {"steps": 8, "gpus_per_node": 2, "test_slow_rank": 1, "test_slow_step_s": 0.1})
    r2 = read_result(two)
    by_rank = {r["rank"]: r for r in r2["breakdown_by_rank"]}
    assert set(by_rank) == {0, 1}
    assert by_rank[1]["compute"] >= 8 * 0.1  # the sleep is in rank 1's compute ...
    assert by_rank[0]["comm"] > by_rank[1]["comm"] + 0.4  # ... and rank 0 waits for it in all-reduce
    row = next(r for r in analyse([read_result(one), r2]) if r["workers"] == 2)
    assert row["straggler_rank"] == 1
    assert row["straggler_excess_s"] == by_rank[0]["comm"] - by_rank[1]["comm"]
    assert "Straggler: rank 1" in row["explanation"]
    terms = sum(row[f"loss_{t}_s"] for t in ("data_wait", "compute", "comm", "optimizer", "other", "unaccounted"))
    assert abs(terms - row["overhead_s"]) < 1e-9


def test_result_records_what_a_prediction_needs(tmp_path: Path) -> None:
    """Gradient bytes, DDP's bucket count and an all-reduce probe per link kind, all outside T."""
    spawn_world(2, tmp_path / "two", {"steps": 3, "gpus_per_node": 2})
    r = read_result(tmp_path / "two")
    comm = r["comm"]
    params = r["model"]["parameters"]
    assert comm["grad_bytes"] == 4 * params  # fp32 gradients
    # the trainable tensors ZeRO-1 would broadcast one by one: the model's, counted here from its own shapes
    model = HeartLanguageModel(ModelConfig(**{f.name: r["model"][f.name] for f in fields(ModelConfig)
                                              if f.name in r["model"]}))
    assert r["model"]["parameter_tensors"] == len(list(model.parameters())) > 2 * r["model"]["layers"]
    assert comm["buckets"] >= 1 and comm["buckets_source"] == "measured"
    link = comm["probe"]["links"]["intra_node"]
    assert link["ranks"] == 2 and link["seconds"] > 0
    assert link["busbw_bytes_per_s"] == link["algbw_bytes_per_s"]  # 2(n-1)/n = 1 for two ranks
    assert comm["probe"]["probe_s"] < r["timing"]["startup_s"]  # measured in start-up, not in T
    # the alpha-beta sweep per collective kind, one element per rank up to the gradient's size (runcontract/probe.py)
    sweep = link["collectives"]
    assert set(sweep) == set(probe.KINDS)
    for kind, fit in sweep.items():
        assert "error" not in fit, (kind, fit)  # gloo runs every kind the strategies call
        assert fit["bytes"] == [4 * n for n in probe.sweep_sizes(comm["probe"]["bytes"] // 4, 2)]
        assert len(fit["seconds"]) == len(fit["bytes"]) and all(t > 0 for t in fit["seconds"])
        assert fit["alpha_s"] >= 0
    # what the prediction reads of it (cockpit.forecast.prediction): every kind whose time grew with the size; a
    # sweep drowned in a loaded machine's noise (beta NaN) is left out, not read as a bandwidth
    grew = {kind for kind, fit in sweep.items() if fit["beta_bytes_per_s"] > 0}
    fits = measured_links([r]).intra_node.fits
    assert {n: set(calls) for n, calls in fits.items()} == ({2: grew} if grew else {})
    contention = comm["probe"]["contention"]  # two ranks on this node: each alone, then both at once
    assert contention["ranks_on_node"] == 2 and len(contention["alone_s"]) == 2 and contention["slowdown"] > 0
    assert measured_links([r]).contention == {2: contention["slowdown"]}
    # how much of the all-reduce backward hid: the time a bucket was in flight, of which the rank waited exposed_s
    overlap, all_reduce = comm["overlap"], comm["by_kind"]["all_reduce"]
    assert overlap == ddp_buckets.overlap(comm["by_kind"]) and overlap["exposed_s"] == all_reduce["exposed_s"]
    assert overlap["busy_s"] > 0 and 0.0 <= overlap["hidden_share"] <= 1.0
    assert measured_links([r]).overlap == {overlap_setting(r): Overlap(overlap["hidden_share"], 1)}


def test_buckets_in_flight_at_once_count_once() -> None:
    assert union_s([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0), (5.5, 5.8)]) == 4.0 and union_s([]) == 0.0


def test_the_alpha_beta_fit_recovers_a_line_and_the_sweep_spans_one_element_to_the_gradient() -> None:
    fit = probe.fit_alpha_beta([(b, 20e-6 + b / 1e9) for b in (8, 64, 512, 4096, 2**20)])
    assert abs(fit["alpha_s"] - 20e-6) < 1e-12 and abs(fit["beta_bytes_per_s"] - 1e9) < 1e-3
    assert probe.fit_alpha_beta([(8, 1e-3), (64, 1e-3)])["beta_bytes_per_s"] != probe.fit_alpha_beta(
        [(8, 1e-3), (64, 1e-3)])["beta_bytes_per_s"]  # NaN: the time does not grow with the size
    assert probe.sweep_sizes(1000, 2) == [2, 16, 128, 1000] and probe.sweep_sizes(1, 4) == [4]
