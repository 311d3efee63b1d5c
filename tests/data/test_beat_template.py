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


def test_diff_needs_samples_and_a_known_name(physionet: Path, cache: Path) -> None:
    beats = prepare_dataset(physionet / "mitdb", {"name": "beats", "records": ["100"]}, cache, 1)
    with pytest.raises(DataError, match="waveform 'diff'.*needs the samples tokenizer.*'beats'"):
        WindowDataset(beats, 16, "beat", ["100"], waveform="diff")
    with pytest.raises(DataError, match="unknown waveform 'delta'"):
        WindowDataset(beats, 16, "beat", ["100"], waveform="delta")
