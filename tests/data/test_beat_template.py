"""Windows as the difference from the patient's template beat: normal beats near zero, V beats not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from trainer.data import DataError
from trainer.data.beat_template import TEMPLATE_BEATS, difference, record_templates
from trainer.data.dataset import WindowDataset, load_manifest
from trainer.data.prepare import prepare_dataset
from trainer.data.tokenizers import N_SPECIAL


def test_template_is_the_median_window_of_each_block_and_ignores_positions_outside() -> None:
    rng = np.random.default_rng(0)
    tokens = rng.integers(4, 260, 5000).astype(np.uint16)
    centres = np.arange(2, 5000, 10)  # 500 beats: two blocks; the first beat's window starts before 0
    t = record_templates(tokens, centres, 8, pad_id=0)
    assert t.shape == (2, 8)
    block = centres[:TEMPLATE_BEATS, None] + np.arange(8)[None, :] - 4
    # beat 0's window has positions -2 and -1 outside the record: those columns take the other 255 beats
    expected = np.concatenate([np.median(tokens[block[1:, :2]], axis=0), np.median(tokens[block[:, 2:]], axis=0)])
    assert t[0].tolist() == np.rint(expected).tolist()
    second = centres[TEMPLATE_BEATS:, None] + np.arange(8)[None, :] - 4
    assert t[1].tolist() == np.rint(np.median(tokens[second], axis=0)).tolist()


def test_difference_keeps_the_vocabulary_and_the_padding() -> None:
    window = np.array([0, 10, 200, 250, 4], dtype=np.int64)
    template = np.array([9, 10, 100, 4, 250], dtype=np.uint16)
    d = difference(window, template, bins=256, first_id=N_SPECIAL, pad_id=0)
    assert d[0] == 0  # padding stays padding
    assert d[1] == N_SPECIAL + 128  # equal: the middle id
    assert d[2] == N_SPECIAL + 128 + 100
    assert d[3] == N_SPECIAL + 255 and d[4] == N_SPECIAL  # clipped to the shard's own id range
    assert d.min() >= 0 and d.max() < N_SPECIAL + 256


def test_diff_windows_are_flat_for_normal_beats_and_not_for_ventricular_ones(physionet: Path, cache: Path) -> None:
    shard = prepare_dataset(physionet / "mitdb", {"name": "samples", "records": ["119"], "fs": 180}, cache, 1)
    m = load_manifest(shard)
    raw = WindowDataset(shard, 64, "beat", ["119"])
    diff = WindowDataset(shard, 64, "beat", ["119"], waveform="diff")
    assert diff.length == raw.length and diff.vocab_size == raw.vocab_size == m.vocab_size
    middle = N_SPECIAL + (m.vocab_size - N_SPECIAL) // 2

    def spread(ds: WindowDataset, label: int) -> float:
        items = np.flatnonzero(ds.labels == label)[:200]
        return float(np.median([np.abs(ds[int(i)][0].numpy() - middle).mean() for i in items]))

    n, v = spread(diff, 0), spread(diff, 2)  # record 119: 1,543 N and 444 V beats
    assert n < spread(raw, 0) / 2 and v > 3 * n  # measured: 10 against 25 raw, V beats 37
    tokens, label = diff[5]
    assert label == raw[5][1] and tokens.shape == (64,)
    # 'both': the window as tokenized, then its difference; with RR context, the context first
    both = WindowDataset(shard, 64, "beat", ["119"], waveform="both", context="rr")
    c = both.context_length
    assert both.length == c + 2 * 64
    for i in (5, 400):
        item, label = both[i]
        assert label == raw[i][1] and item.shape == (c + 128,)
        assert np.array_equal(item[c:c + 64].numpy(), raw[i][0].numpy())
        assert np.array_equal(item[c + 64:].numpy(), diff[i][0].numpy())


def test_diff_needs_samples_and_a_known_name(physionet: Path, cache: Path) -> None:
    beats = prepare_dataset(physionet / "mitdb", {"name": "beats", "records": ["100"]}, cache, 1)
    for waveform in ("diff", "both"):
        with pytest.raises(DataError, match=f"waveform '{waveform}'.*needs the samples tokenizer.*'beats'"):
            WindowDataset(beats, 16, "beat", ["100"], waveform=waveform)
    with pytest.raises(DataError, match="unknown waveform 'delta'"):
        WindowDataset(beats, 16, "beat", ["100"], waveform="delta")


def test_a_finetune_on_template_differences_runs_from_the_cli_and_records_its_choices(physionet: Path,
                                                                                     tmp_path: Path) -> None:
    """The recipe's data flags end to end on two real records (one DS1, one DS2): high-pass, RR context,
    template-difference windows; the result says what the windows were."""
    from tests.data.conftest import copy_records
    from trainer import rundir
    from trainer.cli import main

    data = copy_records(physionet / "mitdb", tmp_path / "db", ["119", "200"], ("hea", "atr", "dat"))
    run_dir = tmp_path / "run"
    code = main(["train", "--run-dir", str(run_dir), "--data", str(data), "--token-cache", str(tmp_path / "c"),
                 "--tokenizer", "samples", "--fs", "180", "--highpass", "0.5", "--waveform", "diff", "--context",
                 "rr", "--pool", "centre", "--mode", "finetune", "--window", "64", "--batch-size", "8",
                 "--layers", "1", "--d-model", "16", "--heads", "2", "--steps", "3", "--device", "cpu",
                 "--cpus-per-task", "1", "--num-workers", "0"])
    assert code == 0, rundir.read_exit(run_dir)
    result = rundir.read_result(run_dir)
    assert result["data"]["waveform"] == "diff" and result["data"]["context"] == "rr"
    assert result["data"]["tokenizer_params"]["highpass_hz"] == 0.5
    assert result["eval"]["samples"] == result["data"]["test_windows"] > 2000  # record 200's beats, all scored
    assert result["eval"]["by_record"]["200"] == result["eval"]["confusion"]  # the one test record
