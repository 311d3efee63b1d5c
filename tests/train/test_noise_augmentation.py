"""train.augment_noise_db: a fine-tune also trains on noisy versions of its training records (the tokenizer's motion
noise), on real mitdb records through the product's own command line; validation and test stay clean."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from trainer.config_keys import KEYS
from trainer.data.batches import LabelledWindows
from trainer.data.dataset import WindowDataset
from trainer.data.prepare import prepare_dataset
from trainer.run.sources import AUGMENT_NOISE_SEED


def test_a_share_of_the_windows_comes_from_each_noisy_version_with_its_clean_label(physionet: Path,
                                                                                   tmp_path: Path) -> None:
    tokenizer = {"name": "samples", "records": ["119"], "fs": 180}
    shards = [prepare_dataset(physionet / "mitdb", {**tokenizer, **extra}, tmp_path, 1)
              for extra in ({}, {"noise_snr_db": 12.0, "noise_seed": 1}, {"noise_snr_db": 0.0, "noise_seed": 1})]
    clean, *noisy = (WindowDataset(shard, 64, "beat", ["119"], waveform="both") for shard in shards)
    train = LabelledWindows(clean, noisy=tuple(noisy), share=0.5, seed=3)
    versions = np.array([train.version(epoch, i) for epoch in (0, 1) for i in range(len(clean))])
    counts = np.bincount(versions, minlength=3) / len(versions)
    assert abs(counts[0] - 0.5) < 0.03 and abs(counts[1] - 0.25) < 0.03 and abs(counts[2] - 0.25) < 0.03
    assert np.mean(versions[: len(clean)] != versions[len(clean):]) > 0.4  # drawn anew each epoch
    for i in range(40):
        tokens, label = train[(0, i)]
        v = train.version(0, i)
        source = (clean, *noisy)[v]
        assert np.array_equal(tokens.numpy(), source[i][0]) and int(label) == int(clean.labels[i])
    # the noise changes the windows, more at 0 dB than at 12
    spread = [np.mean([(w[i][0].long() - clean[i][0].long()).abs().float().mean().item() for i in range(0, 1500, 50)])
              for w in noisy]
    assert 0 < spread[0] < spread[1]


def test_a_finetune_with_noise_augmentation_says_what_it_trained_on(physionet: Path, tmp_path: Path) -> None:
    from runcontract.records import read_exit, read_result
    from tests.data.conftest import copy_records
    from trainer.commands.cli import main

    data = copy_records(physionet / "mitdb", tmp_path / "db", ["119", "100"], ("hea", "atr", "dat"))
    run_dir = tmp_path / "run"
    code = main(["train", "--run-dir", str(run_dir), "--data", str(data), "--token-cache", str(tmp_path / "c"),
                 "--tokenizer", "samples", "--fs", "180", "--augment-noise-db", "12", "6", "--augment-share", "0.5",
                 "--mode", "finetune", "--pool", "centre", "--window", "32", "--batch-size", "8", "--layers", "1",
                 "--d-model", "16", "--heads", "2", "--steps", "3", "--device", "cpu", "--cpus-per-task", "1",
                 "--num-workers", "0"])
    assert code == 0, read_exit(run_dir)
    result = read_result(run_dir)
    augment = result["data"]["augment"]
    assert augment["noise_snr_db"] == [12.0, 6.0] and augment["share"] == 0.5
    assert augment["noise_seed"] == AUGMENT_NOISE_SEED
    for level, shard in zip((12.0, 6.0), augment["shard_dirs"], strict=True):
        params = json.loads((Path(shard) / "manifest.json").read_text())["params"]
        assert params["noise_snr_db"] == level and params["noise_seed"] == AUGMENT_NOISE_SEED
    assert result["data"]["shard_dir"] not in augment["shard_dirs"]  # the test split is scored on the clean data
    assert "noise augmentation: 50% of the training windows" in (run_dir / "train.log").read_text()


def test_the_levels_must_be_numbers(tmp_path: Path) -> None:
    from trainer.commands.cli import main

    key = next(k for k in KEYS if k.name == "augment_noise_db")
    assert key.problem([12, 6.5]) is None and key.problem([]) is None
    assert "a list of signal-to-noise ratios in dB" in (key.problem([12, "loud"]) or "")
    with pytest.raises(SystemExit) as refused:  # the command line reads numbers
        main(["train", "--run-dir", str(tmp_path), "--augment-noise-db", "12", "loud"])
    assert refused.value.code == 2
