"""The loop's parts on their own: masking, sampling, schedule, scores, encoder transfer, settings."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from runcontract.contract import EXIT_CHECKPOINTED
from runcontract.records import read_exit, read_result
from tests.train.tiny import MASK_ID, RandomWindows, tiny_data, tiny_settings
from trainer import rundir
from trainer.data.batches import MaskedWindows, ResumableSampler
from trainer.model import IGNORE_INDEX, HeartLanguageModel, ModelConfig, load_encoder, mask_blocks
from trainer.run import checkpoint
from trainer.run.sources import balanced_weights
from trainer.run.train import lr_at, run
from trainer.scoring.scores import class_scores
from trainer.settings import ConfigError, from_config


def test_mask_blocks_masks_exact_spans_deterministically() -> None:
    tokens = torch.arange(64) % 30 + 1
    inputs, targets = mask_blocks(tokens, MASK_ID, 0.25, 4, np.random.default_rng([0, 0, 5]))
    masked = targets != IGNORE_INDEX
    assert masked.sum() == 16  # round(0.25 * 64 / 4) = 4 spans of 4
    assert torch.equal(inputs[masked], torch.full((16,), MASK_ID)) and torch.equal(inputs[~masked], tokens[~masked])
    assert torch.equal(targets[masked], tokens[masked])
    starts = masked.nonzero().flatten()[::4]
    assert all(s % 4 == 0 and masked[s:s + 4].all() for s in starts.tolist())
    again, _ = mask_blocks(tokens, MASK_ID, 0.25, 4, np.random.default_rng([0, 0, 5]))
    other, _ = mask_blocks(tokens, MASK_ID, 0.25, 4, np.random.default_rng([0, 1, 5]))
    assert torch.equal(inputs, again) and not torch.equal(inputs, other)


def test_masks_depend_on_sample_and_epoch_not_on_the_dataset_copy() -> None:
    base = RandomWindows(8, 16, 0)
    a, b = MaskedWindows(base, MASK_ID, 0.2, 2, 7), MaskedWindows(base, MASK_ID, 0.2, 2, 7)
    assert torch.equal(a[(3, 5)][0], b[(3, 5)][0])
    assert not torch.equal(a[(3, 5)][0], a[(4, 5)][0])


def test_sampler_resumes_inside_an_epoch_and_shards_like_one_big_batch() -> None:
    data = list(range(20))
    whole = ResumableSampler(data, 1, 0, seed=3)
    whole.set_epoch(2)
    order = [i for _, i in whole]
    part = ResumableSampler(data, 1, 0, seed=3)
    part.set_position(2, 7)
    assert [i for _, i in part] == order[7:] and len(part) == 13
    r0, r1 = ResumableSampler(data, 2, 0, seed=3), ResumableSampler(data, 2, 1, seed=3)
    r0.set_epoch(2), r1.set_epoch(2)
    first = [i for _, i in r0][:2] + [i for _, i in r1][:2]
    assert sorted(first) == sorted(order[:4])
    assert all(epoch == 2 for epoch, _ in r0)


def test_lr_schedule_warms_up_then_decays_to_a_tenth() -> None:
    s = tiny_settings(Path("."), lr=1.0, warmup_steps=4, steps=104)
    assert [lr_at(i, 104, s) for i in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert lr_at(4, 104, s) == pytest.approx(1.0)
    assert lr_at(54, 104, s) == pytest.approx(0.55)
    assert lr_at(104, 104, s) == pytest.approx(0.1)


def test_class_scores_on_a_known_confusion_matrix() -> None:
    out = class_scores([[8, 2, 0], [1, 9, 0], [0, 0, 0]], ["A", "B", "C"])
    assert out["sensitivity"] == {"A": 0.8, "B": 0.9, "C": None}
    assert out["ppv"]["A"] == pytest.approx(8 / 9) and out["ppv"]["B"] == pytest.approx(9 / 11)
    f1a, f1b = 2 * 0.8 * (8 / 9) / (0.8 + 8 / 9), 2 * 0.9 * (9 / 11) / (0.9 + 9 / 11)
    assert out["f1"]["A"] == pytest.approx(f1a) and out["f1"]["C"] is None
    assert out["macro_f1"] == pytest.approx((f1a + f1b) / 2)
    assert out["accuracy"] == pytest.approx(17 / 20) and out["support"] == {"A": 10, "B": 10, "C": 0}


def test_balanced_weights_have_mean_one_over_training_windows() -> None:
    w = balanced_weights(np.array([90, 9, 1]), 5)
    counts = [90, 9, 1]
    assert sum(c * x for c, x in zip(counts, w, strict=False)) / 100 == pytest.approx(1.0)
    assert w[3] == w[4] == 0.0 and w[2] == pytest.approx(100 / 3)


def test_load_encoder_adapts_positions_and_rejects_mismatches() -> None:
    big = HeartLanguageModel(ModelConfig(vocab_size=32, max_len=64, layers=1, d_model=16, heads=2))
    small = HeartLanguageModel(ModelConfig(vocab_size=32, max_len=16, layers=1, d_model=16, heads=2, num_classes=5))
    notes = load_encoder(small, big.state_dict(), "f.pt")
    assert notes == ["position table truncated from 64 to 16"]
    assert torch.equal(small.pos.weight, big.pos.weight[:16]) and torch.equal(small.tok.weight, big.tok.weight)
    with pytest.raises(ValueError, match="f.pt: position table has 16 rows but the window needs 64"):
        load_encoder(big, small.state_dict(), "f.pt")
    other = HeartLanguageModel(ModelConfig(vocab_size=40, max_len=16, layers=1, d_model=16, heads=2))
    with pytest.raises(ValueError, match=r"f.pt: parameter 'tok.weight' has shape \(40, 16\)"):
        load_encoder(small, other.state_dict(), "f.pt")


def test_finetune_starts_from_the_foundation_checkpoint_or_says_why_not(tmp_path: Path) -> None:
    s = tiny_settings(tmp_path / "found", steps=3)
    assert run(s, tiny_data(s)) == 0
    model_pt = tmp_path / "found" / rundir.MODEL_FILE
    s = tiny_settings(tmp_path / "fine", mode="finetune", steps=3, init_checkpoint=str(model_pt))
    assert run(s, tiny_data(s)) == 0
    r = read_result(tmp_path / "fine")
    assert r["init"] == str(model_pt)
    assert set(r["eval"]) >= {"sensitivity", "ppv", "f1", "macro_f1", "confusion", "accuracy"}
    assert sum(map(sum, r["eval"]["confusion"])) == 16
    encoder = checkpoint.load(model_pt)["model"]["blocks.0.mlp.0.weight"]
    assert not torch.equal(checkpoint.load(tmp_path / "fine" / rundir.MODEL_FILE)["model"]["blocks.0.mlp.0.weight"],
                           encoder)  # trained further, from there
    s = tiny_settings(tmp_path / "rand", mode="finetune", steps=1, init_checkpoint=str(tmp_path / "none.pt"))
    assert run(s, tiny_data(s)) == 0
    assert read_result(tmp_path / "rand")["init"] == f"random: {tmp_path / 'none.pt'} does not exist"


def test_grad_accumulation_equals_the_big_batch(tmp_path: Path) -> None:
    a = tiny_settings(tmp_path / "a", batch_size=8, steps=3)
    b = tiny_settings(tmp_path / "b", batch_size=4, grad_accum=2, steps=3)
    assert run(a, tiny_data(a)) == 0 and run(b, tiny_data(b)) == 0
    wa, wb = (checkpoint.load(p / rundir.MODEL_FILE)["model"] for p in (tmp_path / "a", tmp_path / "b"))
    for key in wa:
        torch.testing.assert_close(wb[key], wa[key], rtol=1e-5, atol=1e-6)


def test_settings_defaults_and_precise_errors(tmp_path: Path) -> None:
    s = from_config(tmp_path, {"train": {"steps": 5}})
    assert (s.axes.mode, s.axes.precision, s.axes.window, s.train.grad_accum, s.train.device) == ("foundation", "fp32", 256, 1, "auto")
    assert s.train.epochs is None and from_config(tmp_path, {"train": {"epochs": 0.5}}).train.epochs == 0.5
    with pytest.raises(ConfigError, match=r"config.json: train.grad_accum: expected an integer >= 1, got 0"):
        from_config(tmp_path, {"train": {"steps": 5, "grad_accum": 0}})
    with pytest.raises(ConfigError, match=r"train.task: expected one of beat, rhythm, got 'qrs'"):
        from_config(tmp_path, {"train": {"steps": 5, "task": "qrs"}})
    with pytest.raises(ConfigError, match=r"config.json: model.layers: expected an integer >= 1, got '4'"):
        from_config(tmp_path, {"model": {"layers": "4"}, "train": {"steps": 5}})
    with pytest.raises(ConfigError, match="train.lr: expected a number > 0, got nan"):
        from_config(tmp_path, {"train": {"steps": 5, "lr": math.nan}})


def test_loader_workers_follow_cpus_per_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "8")
    s = from_config(tmp_path, {"train": {"steps": 1}})
    assert (s.cpus, s.loader_workers) == (8, 7)
    s = from_config(tmp_path, {"cpus_per_task": 1, "train": {"steps": 1}})
    assert (s.cpus, s.loader_workers) == (1, 0)


def test_loader_workers_feed_the_same_batches(tmp_path: Path) -> None:
    """Worker processes (persistent, prefetching) must not change what is trained on."""
    a = tiny_settings(tmp_path / "a", steps=20)
    b = tiny_settings(tmp_path / "b", steps=20, num_workers=1)
    assert run(a, tiny_data(a, n=24)) == 0 and run(b, tiny_data(b, n=24)) == 0  # crosses 3 epochs
    wa, wb = (checkpoint.load(p / rundir.MODEL_FILE)["model"] for p in (tmp_path / "a", tmp_path / "b"))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert read_result(tmp_path / "b")["loader"]["workers"] == 1


def test_reduced_precision_runs_train_and_report_it(tmp_path: Path) -> None:
    for precision in ("bf16", "fp16"):
        s = tiny_settings(tmp_path / precision, steps=3, precision=precision)
        assert run(s, tiny_data(s)) == 0
        r = read_result(tmp_path / precision)
        assert r["optimizer"]["precision"] == precision and math.isfinite(r["final_loss"])


def test_sigusr1_checkpoints_like_sigterm(tmp_path: Path) -> None:
    import signal

    from tests.train.tiny import SignalAt

    s = tiny_settings(tmp_path, steps=6)
    data = tiny_data(s)
    data.train = SignalAt(data.train, 6, signal.SIGUSR1)
    assert run(s, data) == EXIT_CHECKPOINTED
    info = read_exit(tmp_path)
    assert info["signal"] == "SIGUSR1" and info["step"] == 2


def test_epochs_and_launch_time_accounting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("HLM_LAUNCH_TIME", str(time.time() - 100.0))
    s = tiny_settings(tmp_path, steps=None, epochs=1.5)
    assert run(s, tiny_data(s, n=24)) == 0  # 6 steps per epoch
    t = read_result(tmp_path)["timing"]
    assert t["steps"] == 9 and t["epochs"] == 1.5 and t["samples"] == 36
    assert t["launch_time_source"] == "HLM_LAUNCH_TIME" and t["startup_s"] >= 100.0 and t["wall_s"] >= 100.0
    assert 0 < t["first_step_s"] <= t["train_time_s"]


def test_trainer_package_and_settings_stay_torch_free() -> None:
    """The cockpit imports trainer.rundir on a laptop without torch."""
    import subprocess
    import sys

    code = "import sys, trainer, trainer.rundir, trainer.settings; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2]).returncode == 0
