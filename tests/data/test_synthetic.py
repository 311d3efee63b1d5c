"""The synthetic ECG generator: deterministic, labelled beats with the morphology their labels claim."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from trainer.data.dataset import load_manifest
from trainer.data.labels import CODE_SYMBOLS, IS_BEAT, RHYTHM_CODE
from trainer.data.prepare import prepare_dataset
from trainer.data.synthetic import generate_record


def beats_of(rec):  # noqa: ANN001, ANN202 - tiny helper
    keep = IS_BEAT[rec.ann.code]
    return rec.ann.sample[keep], np.array([CODE_SYMBOLS[int(c)] for c in rec.ann.code[keep]])


def test_deterministic_by_seed_and_index() -> None:
    a, b = generate_record(2, seconds=60, seed=7), generate_record(2, seconds=60, seed=7)
    assert np.array_equal(a.signal, b.signal) and np.array_equal(a.ann.sample, b.ann.sample)
    c = generate_record(2, seconds=60, seed=8)
    assert not np.array_equal(a.signal, c.signal)
    assert a.name == "synthetic-002" and a.extra["synthetic"] is True


def test_premature_beats_and_their_morphology() -> None:
    rec = generate_record(0, seconds=600, seed=1)
    fs = rec.fs
    sample, sym = beats_of(rec)
    assert set(sym) == {"N", "A", "V"}
    rr_before = np.diff(sample, prepend=sample[0])[1:]
    sym1 = sym[1:]
    median_n = np.median(rr_before[sym1 == "N"])
    # S (annotated A) and V are premature; V is followed by a compensatory pause.
    assert np.all(rr_before[sym1 == "A"] < 0.8 * median_n)
    assert np.all(rr_before[sym1 == "V"] < 0.8 * median_n)
    v_idx = np.flatnonzero(sym[:-1] == "V")
    assert np.median(np.diff(sample)[v_idx]) > 1.2 * median_n
    x = rec.signal / rec.adc_gain

    def qrs_width(s: int) -> int:  # samples within +-120 ms above half the peak's absolute deviation
        seg = np.abs(x[s - int(0.12 * fs) : s + int(0.12 * fs)] - np.median(x[s - int(0.4 * fs) : s]))
        return int((seg > 0.5 * seg.max()).sum())

    def ensemble(k: str) -> np.ndarray:  # mean beat of a class, 300 ms before to 100 ms after R
        segs = [x[s - int(0.3 * fs) : s + int(0.1 * fs)] - np.median(x[s - int(0.4 * fs) : s + int(0.4 * fs)])
                for s in sample[inner & (sym == k)]]
        return np.mean(segs, axis=0)

    inner = (sample > fs) & (sample < len(x) - fs)
    width = {k: np.median([qrs_width(s) for s in sample[inner & (sym == k)]]) for k in ("N", "A", "V")}
    assert width["V"] > 2 * width["N"]  # V: wide QRS
    assert width["A"] < 1.5 * width["N"]  # S: normal QRS
    # Atrial activity 160..100 ms before R: the ectopic P of S beats, nothing before V beats.
    p_wave = {k: float(np.abs(ensemble(k)[int(0.14 * fs) : int(0.2 * fs)]).max()) for k in ("A", "V")}
    assert p_wave["V"] < 0.5 * p_wave["A"]


def test_afib_episode_is_annotated_like_mitbih() -> None:
    recs = [generate_record(i, seconds=300, seed=0) for i in range(8)]
    with_af = [r for r in recs if r.extra["afib"]]
    assert with_af, "the default dataset must contain AF episodes for the rhythm task"
    r = with_af[0]
    rhythm = [(int(r.ann.sample[i]), t) for i, t in zip(r.ann.aux_index, r.ann.aux_text, strict=True)
              if r.ann.code[i] == RHYTHM_CODE]
    assert [t for _, t in rhythm] == ["(N", "(AFIB", "(N"]
    sample, sym = beats_of(r)
    af = (sample > rhythm[1][0]) & (sample < rhythm[2][0])
    rr = np.diff(sample)
    # AF: irregular RR (coefficient of variation well above sinus rhythm's)
    cv_af = np.std(rr[af[1:]]) / np.mean(rr[af[1:]])
    cv_sinus = np.std(rr[~af[1:] & (sym[1:] == "N") & (sym[:-1] == "N")]) / np.mean(rr[~af[1:]])
    assert cv_af > 2 * cv_sinus


def test_synthetic_is_named_synthetic_everywhere(tmp_path: Path) -> None:
    shard = prepare_dataset(None, {"name": "samples"}, tmp_path, synthetic_params={"records": 3, "seconds": 30},
                            dataset="demo")
    m = load_manifest(shard)
    assert "synthetic" in shard.name and "synthetic" in m["dataset"] and m["synthetic"] is True
    assert all(r["name"].startswith("synthetic-") for r in m["records"])
    assert m["source"] == "synthetic generator"
    assert m["totals"]["class_counts"][0] > 0 and sum(m["totals"]["class_counts"][1:3]) > 0
