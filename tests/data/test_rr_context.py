"""RR context tokens: the intervals that define S and V beats, put before each window."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from trainer.data import DataError
from trainer.data.dataset import WindowDataset, load_manifest
from trainer.data.labels import RHYTHM_CLASSES
from trainer.data.prepare import prepare_dataset
from trainer.data.rr_context import (
    AF_FEATURE,
    CONTEXT_FEATURES,
    CONTEXT_TOKENS,
    EVIDENCE_FEATURE,
    RR_BINS,
    check_context,
    context_length,
    context_tokens,
    extra_vocab,
    feature_site,
    gate_feature,
    rr_features,
)

NAMES = list(CONTEXT_FEATURES)


def test_a_premature_beat_is_early_against_both_averages_and_followed_by_a_pause() -> None:
    rr = np.full(40, 800.0)
    rr[19], rr[20] = 480.0, 1120.0  # beat 20 comes early, the next one after a compensatory pause
    f = rr_features(rr)
    assert f.shape == (41, len(NAMES))
    col = {n: f[:, i] for i, n in enumerate(NAMES)}
    assert col["pre_ms"][20] == 480.0 and col["post_ms"][20] == 1120.0
    assert col["pre_local"][20] < 0.7 and col["pre_long"][20] < 0.7
    assert col["post_local"][20] > 1.3 and col["post_long"][20] > 1.3
    assert col["pre_local"][5] == pytest.approx(1.0) and col["local_long"][5] == pytest.approx(1.0)
    # the first beat has no previous interval, the last no next one: both read as "not premature"
    assert col["pre_ms"][0] == col["local_ms"][0] and col["post_ms"][40] == col["local_ms"][40]


def test_context_tokens_stay_in_their_own_id_range_per_feature() -> None:
    rr = np.random.default_rng(0).uniform(100, 3000, 500)  # beyond every bin range: clipped to the end bins
    tok = context_tokens(rr_features(rr), base=260).astype(np.int64)
    for k in range(len(NAMES)):
        assert tok[:, k].min() >= 260 + k * RR_BINS and tok[:, k].max() < 260 + (k + 1) * RR_BINS
    assert tok.max() < 260 + CONTEXT_TOKENS
    assert len(np.unique(tok[:, 0])) > RR_BINS // 2  # the bins are used, not collapsed
    with pytest.raises(ValueError, match="unknown context 'rhythm'"):
        check_context("rhythm")


def test_the_rhythm_token_tells_fibrillation_from_an_isolated_premature_beat() -> None:
    rng = np.random.default_rng(0)
    sinus = 800.0 + rng.normal(0, 15, 300)
    rr = np.concatenate([sinus, rng.uniform(400, 1000, 300), sinus])  # sinus, 300 beats of AF, sinus
    rr[100], rr[101] = 480.0, 1120.0  # one premature beat and its pause inside sinus rhythm
    f = rr_features(rr, "rr_rhythm")
    assert f.shape == (601 + 300, len(NAMES) + 1)
    np.testing.assert_array_equal(f[:, :len(NAMES)], rr_features(rr))  # `rr`'s eight first, unchanged
    irregular = f[:, -1]
    assert irregular[101] < 0.03 and irregular[450] > 0.1  # the ectopic beat hardly moves a median of 64
    assert irregular[101] == pytest.approx(irregular[60], abs=0.005)
    tok = context_tokens(f, base=260, context="rr_rhythm").astype(np.int64)
    assert tok[450, -1] > tok[101, -1] >= 260 + len(NAMES) * RR_BINS
    assert tok.max() < 260 + extra_vocab("rr_rhythm") == 260 + CONTEXT_TOKENS + RR_BINS
    assert context_length("rr_rhythm") == len(NAMES) + 1 and context_length("none") == 0


def test_the_af_token_forgives_a_bigeminy_that_the_rhythm_token_counts_as_irregular() -> None:
    """Sinus, a bigeminy (short, long, ...), atrial fibrillation: the lag-1 irregularity is high in both of the
    last two, the irregularity no repeating pattern explains only in the fibrillation."""
    rng = np.random.default_rng(0)
    sinus = 800.0 + rng.normal(0, 15, 200)
    bigeminy = np.tile([500.0, 1100.0], 100) + rng.normal(0, 15, 200)
    rr = np.concatenate([sinus, bigeminy, rng.uniform(400, 1000, 200), sinus])
    lag1, af = rr_features(rr, "rr_rhythm")[:, -1], rr_features(rr, "rr_af")[:, -1]
    np.testing.assert_array_equal(rr_features(rr, "rr_af")[:, :len(NAMES)], rr_features(rr))
    assert lag1[300] > 0.5 and af[300] < 0.05  # the bigeminy: irregular beat to beat, regular at lag 2
    assert lag1[500] > 0.2 and af[500] > 0.2  # the fibrillation: irregular at every lag
    assert af[100] < 0.05 and af[700] < 0.05
    assert feature_site("rr_af", AF_FEATURE, 260) == (len(NAMES), 260 + len(NAMES) * RR_BINS)
    assert feature_site("rr", AF_FEATURE, 260) is None and context_length("rr_af") == len(NAMES) + 1


def _shards(physionet: Path, cache: Path, tokenizer: str) -> Path:
    return prepare_dataset(physionet / "mitdb", {"name": tokenizer, "records": ["100", "201"]}, cache, 1)


def test_samples_windows_start_with_the_context_of_their_beat(physionet: Path, cache: Path) -> None:
    shard = _shards(physionet, cache, "samples")
    m = load_manifest(shard)
    plain = WindowDataset(shard, 64, "beat", ["201"])
    ds = WindowDataset(shard, 64, "beat", ["201"], context="rr")
    assert ds.length == 64 + len(NAMES) and ds.vocab_size == m.vocab_size + CONTEXT_TOKENS
    tokens, label = ds[10]
    ref, ref_label = plain[10]
    assert label == ref_label and tokens.shape == (ds.length,)
    assert (tokens[: len(NAMES)] >= m.vocab_size).all() and bool((tokens[len(NAMES):] == ref).all())
    # S beats of record 201 come earlier than the N beats around them
    pre_local = ds.item_context[:, NAMES.index("pre_local")].astype(int) - m.vocab_size - 3 * RR_BINS
    assert np.median(pre_local[ds.labels == 1]) < np.median(pre_local[ds.labels == 0])
    with pytest.raises(DataError, match="unknown context"):
        WindowDataset(shard, 64, "beat", ["201"], context="bogus")


def test_beats_windows_hide_the_class_of_the_beat_they_classify(physionet: Path, cache: Path) -> None:
    shard = _shards(physionet, cache, "beats")
    m = load_manifest(shard)
    ds = WindowDataset(shard, 16, "beat", ["201"], context="rr")
    c = len(NAMES)
    tokens, _ = ds[100]
    assert int(tokens[c + 8]) == m.mask_id  # the centre beat's token carries its class: masked
    stream = np.load(next((shard / "records").glob("201.*.tokens.npy")))
    start = int(ds.item_start[100])
    assert tokens[c:c + 8].tolist() == stream[start:start + 8].tolist()  # its neighbours are shown
    found = WindowDataset(shard, 16, "foundation", ["201"], context="rr")
    assert int(found[3][0][c + 8]) != m.mask_id  # nothing is hidden where no class is asked for


def test_the_evidence_token_is_the_irregularity_where_no_p_wave_keeps_time() -> None:
    """`rr_af_lock`: `rr_af`'s tokens and irregularity x (1 - lock)^2, which the gate reads; it needs the lock."""
    rng = np.random.default_rng(1)
    rr = np.concatenate([800.0 + rng.normal(0, 15, 100), rng.uniform(400, 1000, 100)])
    lock = np.concatenate([np.full(51, 0.9), np.full(150, 0.05)])
    f = rr_features(rr, "rr_af_lock", lock)
    np.testing.assert_array_equal(f[:, :-1], rr_features(rr, "rr_af"))
    np.testing.assert_allclose(f[:, -1], f[:, -2] * (1 - lock) ** 2)
    assert f[150, -1] > 0.15 > 0.001 > f[20, -1]
    assert gate_feature("rr_af_lock") == EVIDENCE_FEATURE and gate_feature("rr_af") == AF_FEATURE
    assert gate_feature("rr") is None and context_length("rr_af_lock") == len(NAMES) + 2
    assert feature_site("rr_af_lock", EVIDENCE_FEATURE, 260) == (len(NAMES) + 1, 260 + (len(NAMES) + 1) * RR_BINS)
    with pytest.raises(ValueError, match=r"context 'rr_af_lock': needs each beat's atrial lock \(201 beats; none given\)"):
        rr_features(rr, "rr_af_lock")


def test_the_evidence_token_of_real_fibrillation_beats_sinus_and_needs_the_waveform(physionet: Path,
                                                                                     cache: Path) -> None:
    """201 (fibrillation, then sinus with runs of S beats) against 100 (sinus), from the samples tokens."""
    shard = _shards(physionet, cache, "samples")
    m = load_manifest(shard)
    ds = WindowDataset(shard, 64, "beat", ["100", "201"], context="rr_af_lock")
    site = feature_site("rr_af_lock", EVIDENCE_FEATURE, m.vocab_size)
    assert site is not None
    evidence = ds.item_context[:, site[0]].astype(int) - site[1]  # the bin, 0..RR_BINS-1
    i201 = [r["name"] for r in ds.records].index("201")
    in_201 = ds.item_record == i201
    afib = np.zeros(len(evidence), dtype=bool)
    afib[in_201] = ds.record_array(i201, "rhythm")[ds.item_beat[in_201]] == RHYTHM_CLASSES.index("AFIB")
    assert afib.sum() > 800
    assert np.median(evidence[afib]) >= 14 > 4 >= np.median(evidence[~in_201])  # bin 14: 0.075
    with pytest.raises(DataError, match="context 'rr_af_lock' .* needs the samples tokenizer; this shard holds 'beats'"):
        WindowDataset(_shards(physionet, cache, "beats"), 16, "beat", ["201"], context="rr_af_lock")


def _beats(physionet: Path, record: str) -> tuple[np.ndarray, np.ndarray]:
    """A mitdb record's intervals in ms (360 Hz) and each beat's AAMI class, from its annotation file alone."""
    from trainer.data.labels import AAMI_OF_CODE
    from trainer.data.mitann import read_annotations

    ann = read_annotations(physionet / "mitdb" / f"{record}.atr")
    cls = AAMI_OF_CODE[ann.code]
    beat = cls >= 0
    return np.diff(ann.sample[beat]) * (1000.0 / 360.0), cls[beat]


def test_the_sinus_token_sets_a_run_of_s_beats_apart_where_the_averages_cannot(physionet: Path) -> None:
    """Record 232: S beats are its main rhythm, in runs between sinus beats after long pauses. Inside a run a beat
    is as early against the long average as a faster sinus stretch; against the sinus interval it is far earlier."""
    from trainer.data.rr_context import SINUS_FEATURE, features_of

    rr, cls = _beats(physionet, "232")
    lock = np.full(len(cls), 0.9)
    f = rr_features(rr, "rr_af_lock_sinus", lock)
    np.testing.assert_array_equal(f[:, :-1], rr_features(rr, "rr_af_lock", lock))  # one more token, the same before
    col = dict(zip(features_of("rr_af_lock_sinus"), f.T, strict=True))
    n, s = cls == 0, cls == 1
    in_run = s & (np.r_[-1, cls[:-1]] == 1) & (np.r_[cls[1:], -1] == 1)
    assert in_run.sum() > 800 and n.sum() > 350
    assert 0.6 < np.median(col["pre_long"][in_run]) < 0.85  # the long average: early, as a faster sinus stretch
    assert np.median(col[SINUS_FEATURE][in_run]) < 0.5 < 0.9 < np.median(col[SINUS_FEATURE][n])
    rr, cls = _beats(physionet, "100")  # sinus rhythm: its N beats are on time against their sinus interval
    sinus = rr_features(rr, "rr_af_lock_sinus", np.full(len(cls), 0.9))[:, -1]
    assert 0.85 < np.median(sinus[cls == 0]) <= 1.0
    assert context_length("rr_af_lock_sinus") == len(NAMES) + 3 and gate_feature("rr_af_lock_sinus") == EVIDENCE_FEATURE
