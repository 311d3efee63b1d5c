"""Tokenizers on real records: beat counts, labels, quantisation error, resampling, RR tokens."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import wfdb

from trainer.data.errors import DataError
from trainer.data.labels import AAMI, BEAT_SYMBOLS, RHYTHM_CLASSES, TOKEN_CLASS_NAMES
from trainer.data.records import Record, read_record
from trainer.data.synthetic import generate_record
from trainer.data.tokenizers import N_SPECIAL, Quantizer, canonical, tokenize, vocab_size


def ref_beats(folder: Path, record: str, ext: str) -> tuple[np.ndarray, list[str]]:
    ann = wfdb.rdann(str(folder / record), ext)
    keep = [i for i, s in enumerate(ann.symbol) if s in BEAT_SYMBOLS]
    return ann.sample[keep], [ann.symbol[i] for i in keep]


@pytest.mark.parametrize("record", ["100", "208"])
def test_samples_beats_and_labels_match_annotations(physionet: Path, record: str) -> None:
    name, params = canonical({"name": "samples"})
    rec = read_record(physionet / "mitdb", record, "atr", params["lead"])
    out = tokenize(name, params, rec)
    sample, symbols = ref_beats(physionet / "mitdb", record, "atr")
    assert len(out.beats) == len(sample)
    assert np.array_equal(out.beats, sample)  # 360 Hz native: token index == sample index
    assert out.labels.tolist() == [AAMI.get(s, -1) for s in symbols]
    assert len(out.tokens) == 650000 and out.tokens.dtype == np.uint16
    assert out.tokens.min() >= N_SPECIAL and out.tokens.max() < vocab_size(name, params)


@pytest.mark.parametrize("kind", ["uniform", "mulaw"])
def test_quantisation_error_within_one_bin(physionet: Path, kind: str) -> None:
    name, params = canonical({"name": "samples", "quantizer": kind, "vocab": 64})
    rec = read_record(physionet / "mitdb", "100", "atr", 0)
    out = tokenize(name, params, rec)
    q = Quantizer(**{k: v for k, v in out.info["quantizer"].items() if k != "bins"}, bins=64)
    x = rec.signal.astype(np.float64)
    inside = np.abs(x - q.centre) < q.half
    bins = out.tokens.astype(np.int64) - N_SPECIAL
    lo, hi = q.edges(bins[inside])
    assert inside.mean() > 0.99  # the robust range covers the signal (clip_percentile 0.1 + margin)
    assert np.all(x[inside] >= lo - 1e-9) and np.all(x[inside] <= hi + 1e-9)  # each sample inside its own bin


def test_samples_resamples_by_time_not_by_index(physionet: Path) -> None:
    name, params = canonical({"name": "samples", "fs": 250})
    rec = read_record(physionet / "mitdb", "100", "atr", "MLII")
    out = tokenize(name, params, rec)
    assert out.info["fs"] == 250 and out.info["native_fs"] == 360
    assert abs(len(out.tokens) - 650000 * 250 / 360) <= 1
    sample, _ = ref_beats(physionet / "mitdb", "100", "atr")
    assert np.array_equal(out.beats, np.rint(sample * 250 / 360).astype(np.int64))


def test_samples_on_a_500_hz_record_lands_beats_on_r_peaks() -> None:
    """Any native rate: a 500 Hz synthetic record tokenized at 360 Hz keeps beats on their R peaks."""
    rec = generate_record(0, seconds=60, seed=3, fs=500)
    name, params = canonical({"name": "samples", "fs": 360, "quantizer": "uniform"})
    out = tokenize(name, params, rec)
    assert out.info["native_fs"] == 500 and abs(len(out.tokens) - 60 * 360) <= 1
    n_beats = out.labels != 2  # V beats have a different polarity pattern; check the N/S peaks
    t = out.tokens.astype(np.int64)
    for b in out.beats[n_beats][:20]:
        seg = t[b - 10 : b + 11]
        assert abs(int(np.argmax(seg)) - 10) <= 2


def test_highpass_removes_baseline_wander_and_keeps_r_peaks(physionet: Path) -> None:
    """A 0.1 Hz wander as tall as the QRS, added to record 100, changes the tokens without the
    high-pass and hardly at all with it; the filter is zero-phase, so the R peaks stay on their beats."""
    rec = read_record(physionet / "mitdb", "100", "atr", 0)
    wander = np.rint(200 * np.sin(2 * np.pi * 0.1 * np.arange(len(rec.signal)) / 360)).astype(rec.signal.dtype)
    wandering = dataclasses.replace(rec, signal=rec.signal + wander)

    def tokens(r: Record, hz: float) -> np.ndarray:
        name, params = canonical({"name": "samples", "quantizer": "uniform", "highpass_hz": hz})
        return tokenize(name, params, r).tokens.astype(np.int64)

    plain, moved = tokens(rec, 0), tokens(wandering, 0)
    clean, filtered = tokens(rec, 0.5), tokens(wandering, 0.5)
    assert np.median(np.abs(moved - plain)) > 10  # the wander moves most samples by many bins
    assert np.median(np.abs(filtered - clean)) <= 1  # after the high-pass the two records agree
    beats = rec.ann.sample[(rec.ann.sample > 20) & (rec.ann.sample < len(rec.signal) - 20)]
    peaks = [int(np.argmax(filtered[b - 10 : b + 11])) - 10 for b in beats]
    assert np.median(np.abs(peaks)) <= 2
    with pytest.raises(DataError, match=r"tokenizer\.highpass_hz: expected a cut-off in Hz"):
        canonical({"name": "samples", "highpass_hz": -1})
    name, params = canonical({"name": "samples", "highpass_hz": 15, "fs": 25})
    with pytest.raises(DataError, match=r"100\.hea: tokenizer\.highpass_hz = 15 Hz is not below the Nyquist "
                                        r"frequency of record '100' \(12\.5 Hz at 25 Hz\)"):
        tokenize(name, params, rec)


@pytest.mark.parametrize(("db", "record", "ext"), [("nsrdb-annotations", "16265", "atr"),
                                                      ("sddb-annotations", "30", "ari")])
def test_beats_tokenizer_on_annotation_only_records(physionet: Path, db: str, record: str, ext: str) -> None:
    name, params = canonical({"name": "beats", "rr_bins": 16})
    rec = read_record(physionet / db, record, "auto", None)
    out = tokenize(name, params, rec)
    sample, symbols = ref_beats(physionet / db, record, ext)
    assert len(out.tokens) == len(sample) and np.array_equal(out.beats, np.arange(len(sample)))
    cls, rr_bin = np.divmod(out.tokens.astype(np.int64) - N_SPECIAL, 16)
    expected_cls = [AAMI.get(s, TOKEN_CLASS_NAMES.index("other")) for s in symbols]
    assert cls.tolist() == expected_cls
    assert rr_bin[0] == 0 and rr_bin[1:].min() >= 1
    # RR bins follow the RR intervals computed from the header's rate, in ms.
    rr_ms = np.diff(sample) * 1000.0 / rec.fs
    order = np.argsort(rr_ms, kind="stable")
    assert np.all(np.diff(rr_bin[1:][order]) >= 0)
    assert out.info["fs"] == {"nsrdb-annotations": 128, "sddb-annotations": 250}[db]


def test_beats_rhythm_labels_from_aux_notes(physionet: Path) -> None:
    name, params = canonical({"name": "beats"})
    rec = read_record(physionet / "sddb-annotations", "30", "ari", None)
    out = tokenize(name, params, rec)
    ann = wfdb.rdann(str(physionet / "sddb-annotations" / "30"), "ari")
    changes = [(s, a.rstrip("\x00")) for s, sym, a in zip(ann.sample, ann.symbol, ann.aux_note, strict=True)
               if sym == "+" and a.startswith("(")]
    sample, _ = ref_beats(physionet / "sddb-annotations", "30", "ari")
    # Every beat after an "(AFIB" change and before the next change is labelled AFIB.
    for (start, text), (end, _) in zip(changes, changes[1:], strict=False):
        inside = (sample > start) & (sample < end)
        want = RHYTHM_CLASSES.index("AFIB") if text == "(AFIB" else RHYTHM_CLASSES.index("N")
        assert np.all(out.rhythm[inside] == want)
    assert np.all(out.rhythm[sample < changes[0][0]] == -1)
    assert (out.rhythm == RHYTHM_CLASSES.index("AFIB")).sum() > 1000


def test_unknown_tokenizer_and_bad_parameters() -> None:
    with pytest.raises(DataError, match=r"tokenizer\.name: expected one of samples, beats, got 'wavelet'"):
        canonical({"name": "wavelet"})
    with pytest.raises(DataError, match=r"unknown key\(s\) bins"):
        canonical({"name": "samples", "bins": 3})
    with pytest.raises(DataError, match=r"tokenizer\.quantizer: expected one of uniform, mulaw"):
        canonical({"name": "samples", "quantizer": "log"})
    with pytest.raises(DataError, match=r"tokenizer\.rr_max_ms"):
        canonical({"name": "beats", "rr_min_ms": 500, "rr_max_ms": 400})
    # Keys of the other tokenizer are accepted (a study has one table for all) and ignored.
    assert "vocab" not in canonical({"name": "beats", "vocab": 512})[1]
