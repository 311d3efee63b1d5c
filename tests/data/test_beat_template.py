"""Windows as the difference from the patient's template beat: normal beats near zero, V beats not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from trainer.data import DataError
from trainer.data.beat_template import (
    TEMPLATE_BEATS,
    TEMPLATE_SHARE,
    difference,
    record_templates,
    template_beats,
)
from trainer.data.dataset import WindowDataset, load_manifest
from trainer.data.prepare import prepare_dataset
from trainer.data.tokenizers import N_SPECIAL


def test_template_is_the_median_window_of_each_blocks_longest_interval_beats() -> None:
    rng = np.random.default_rng(0)
    tokens = rng.integers(4, 260, 8000).astype(np.uint16)
    # 500 beats in two blocks; every fourth beat comes after a long interval (16 samples, the others 12); the
    # first beat's window starts before 0
    centres = np.cumsum(np.where(np.arange(500) % 4 == 0, 16, 12)) - 14
    t = record_templates(tokens, centres, 8, pad_id=0)
    assert t.shape == (2, 8)
    chosen = template_beats(np.diff(centres[:TEMPLATE_BEATS].astype(float), prepend=np.nan))
    assert chosen.tolist() == [1, *range(4, TEMPLATE_BEATS, 4)]  # 63 long ones and the first short one
    block = centres[chosen, None] + np.arange(8)[None, :] - 4
    assert np.rint(np.median(tokens[block], axis=0)).tolist() == t[0].tolist()
    second = centres[TEMPLATE_BEATS:]
    long_ones = second[np.diff(centres)[TEMPLATE_BEATS - 1:] == 16]
    assert len(long_ones) == 61 == int(np.ceil(TEMPLATE_SHARE * len(second)))
    assert t[1].tolist() == np.rint(np.median(tokens[long_ones[:, None] + np.arange(8) - 4], axis=0)).tolist()
    # positions outside the record do not count: a block whose one beat's window starts before 0
    edge = record_templates(tokens, np.array([2]), 8, pad_id=0)
    assert edge[0, :2].tolist() == [0, 0] and edge[0, 2:].tolist() == tokens[:6].tolist()


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
    assert n < spread(raw, 0) / 2 and v > 3 * n  # measured: 11 against 25 raw, V beats 40
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
    from runcontract.records import read_exit, read_result
    from tests.data.conftest import copy_records
    from trainer.commands.cli import main

    data = copy_records(physionet / "mitdb", tmp_path / "db", ["119", "200"], ("hea", "atr", "dat"))
    run_dir = tmp_path / "run"
    code = main(["train", "--run-dir", str(run_dir), "--data", str(data), "--token-cache", str(tmp_path / "c"),
                 "--tokenizer", "samples", "--fs", "180", "--highpass", "0.5", "--waveform", "diff", "--context",
                 "rr", "--pool", "centre", "--mode", "finetune", "--window", "64", "--batch-size", "8",
                 "--layers", "1", "--d-model", "16", "--heads", "2", "--steps", "3", "--device", "cpu",
                 "--cpus-per-task", "1", "--num-workers", "0"])
    assert code == 0, read_exit(run_dir)
    result = read_result(run_dir)
    assert result["data"]["waveform"] == "diff" and result["data"]["context"] == "rr"
    assert result["data"]["tokenizer_params"]["highpass_hz"] == 0.5
    assert result["eval"]["samples"] == result["data"]["test_windows"] > 2000  # record 200's beats, all scored
    assert result["eval"]["by_record"]["200"] == result["eval"]["confusion"]  # the one test record


def test_where_s_beats_are_the_main_rhythm_they_still_differ_from_the_template(physionet: Path, cache: Path) -> None:
    """mitdb 232: 1,382 S beats against 398 N, most of them in runs at the rhythm's own rate. The template of the
    beats after the longest intervals is the sinus beat, so the S beats' changed P wave stands out."""
    shard = prepare_dataset(physionet / "mitdb", {"name": "samples", "records": ["232"], "fs": 180, "highpass_hz": 0.5},
                            cache, 1)
    diff = WindowDataset(shard, 128, "beat", ["232"], waveform="diff")
    middle = N_SPECIAL + (load_manifest(shard).vocab_size - N_SPECIAL) // 2
    spread = {label: np.array([np.abs(diff[int(i)][0].numpy()[32:64] - middle).mean()  # the P wave's quarter
                               for i in np.flatnonzero(diff.labels == label)[:300]]) for label in (0, 1)}
    # measured: N 8.0, S 16.8; the median of all beats as the template gave N 14.6, S 10.7
    assert np.median(spread[1]) > 1.5 * np.median(spread[0])
