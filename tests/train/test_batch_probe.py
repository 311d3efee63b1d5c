"""`train.batch_probe` on a real 1-worker run: forward and backward timed at the run's batch and at twice it at
start-up (outside T), the training itself untouched (the weights, the gradients and every random stream as they
were, dropout on), and the cockpit's compute line drawn through the two points when no second baseline batch size
exists. (Two CPU runs of one process need not end on the same loss, probe or not: the first run, and the first at a
new batch shape, take other kernel paths; so the runs are compared by what they recorded, not by their loss.)"""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from cockpit.forecast.batch_fit import compute_factor, fit, probe_line
from runcontract.contract import EXIT_OK
from runcontract.records import read_result
from tests.train.tiny import tiny_data, tiny_settings
from trainer.measure.timing import Clock
from trainer.model import HeartLanguageModel, ModelConfig
from trainer.run.batch_probe import PROBE_STEPS, batch_probe
from trainer.run.train import run


def test_a_batch_probe_times_b_and_2b_at_start_up_and_the_cockpit_draws_its_line(tmp_path):
    results = {}
    for name, probe in (("plain", False), ("probed", True)):
        s = tiny_settings(tmp_path / name, steps=6, eval=False, batch_probe=probe)
        assert run(s, tiny_data(s)) == EXIT_OK
        results[name] = read_result(tmp_path / name)
    plain, probed = results["plain"], results["probed"]
    assert plain["batch_probe"] is None
    p = probed["batch_probe"]
    assert p["batch_sizes"] == [4, 8] and p["steps"] == PROBE_STEPS and min(p["compute_s"]) > 0
    assert 0 < p["probe_s"] < probed["timing"]["startup_s"]  # start-up, not T
    assert probed["timing"]["steps"] == plain["timing"]["steps"] == 6
    line = probe_line(probed)
    assert line is not None and line.samples == (4.0, 8.0)
    assert line.factor(8.0, 4.0) == pytest.approx(p["compute_s"][1] / p["compute_s"][0])
    assert fit([probed]) == line and fit([plain]) is None  # one batch size: the probe's line, else none
    factor, words = compute_factor(line, probed, 2.0)
    assert factor == pytest.approx(p["compute_s"][1] / p["compute_s"][0])
    assert f"through the baseline's batch probe at 4, 8 samples per step ({p['probe_s']:.2f} s of start-up)" in words


def test_a_batch_probe_too_big_for_the_split_says_so_and_the_run_trains(tmp_path):
    s = tiny_settings(tmp_path / "few", steps=2, eval=False, batch_probe=True, batch_size=8)
    assert run(s, tiny_data(s, n=12)) == EXIT_OK
    p = read_result(tmp_path / "few")["batch_probe"]
    assert p["error"] == "the training split has 12 windows, fewer than 16" and p["probe_s"] >= 0
    assert probe_line(read_result(tmp_path / "few")) is None


def test_the_probe_leaves_the_weights_the_gradients_and_every_random_stream_as_they_were(tmp_path):
    s = tiny_settings(tmp_path / "direct", eval=False)
    data = tiny_data(s)
    model = HeartLanguageModel(ModelConfig(vocab_size=32, max_len=16, layers=1, d_model=16, heads=2, dropout=0.1))
    model.train()  # dropout draws from torch's stream on every pass
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    before = (random.getstate(), np.random.get_state()[1].copy(), torch.get_rng_state())
    cpu = torch.device("cpu")
    probe = batch_probe(model, data.train, 4, cpu, lambda: torch.autocast("cpu", enabled=False), Clock(cpu))
    assert probe["batch_sizes"] == [4, 8] and len(probe["compute_s"]) == 2
    assert random.getstate() == before[0] and (np.random.get_state()[1] == before[1]).all()
    assert torch.equal(torch.get_rng_state(), before[2])
    assert all(p.grad is None for p in model.parameters())
    assert all(torch.equal(v, weights[k]) for k, v in model.state_dict().items())
