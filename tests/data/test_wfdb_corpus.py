"""`prepare` over the WFDB reference library's own test corpus (../shared/data/wfdb-sample-data): every
record, with each annotator it has (or a generated one, see tests/data/wfdb_corpus.py), both tokenizers,
every storage format (one lead per distinct format of a record). A record is either read as wfdb reads
it (beat count, beat positions, the lead's rate, its sample count and its invalid samples) or refused
with a one-line message whose cause the test checks itself. Each record read is also prepared once at
the default 360 Hz (its first lead read), against wfdb's beats and sample count by the resampler's
own rules. Called in-process: ~230 prepares.
"""

from __future__ import annotations

import functools
import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import wfdb

from tests.data.wfdb_corpus import CORPUS, Case, cases
from trainer.data import headers
from trainer.data import records as rec_io
from trainer.data.errors import DataError
from trainer.data.labels import BEAT_SYMBOLS, TOKEN_CLASS_OF_CODE, symbols_to_codes
from trainer.data.prepare import prepare_dataset
from trainer.data.summary import SKIP_HINT
from trainer.data.tokenizers import DEFAULTS, N_SPECIAL, SPECIAL_TOKENS, resampling_reach

BEATS = DEFAULTS["beats"]


def _leads(case: Case) -> list[int]:
    """Lead 0 and the first lead of every other storage format (with its samples per frame) of the record."""
    header = case.folder / f"{case.record}.hea"
    if rec_io.is_multi_segment(header):
        return [0]
    seen: dict[tuple[int, int], int] = {}
    for i, spec in enumerate(headers.signal_specs(header)):
        seen.setdefault((spec.fmt, spec.per_frame), i)
    return sorted(seen.values()) or [0]


@functools.cache
def _wfdb_beats(case: Case) -> tuple[np.ndarray, float, list[str]]:
    """The beats wfdb.rdann reads: their samples, the annotation rate and their symbols."""
    ann = wfdb.rdann(str(case.folder / case.record), case.annotator)
    keep = [isinstance(s, str) and s in BEAT_SYMBOLS for s in ann.symbol]  # wfdb: NaN for codes it has no symbol of
    return np.asarray(ann.sample)[keep], float(ann.fs), [s for s, k in zip(ann.symbol, keep, strict=True) if k]


def _refusal_causes(case: Case, tokenizer: str) -> list[str]:
    """The reasons the test itself finds for a record to be refused (none: it must be read); the
    refusal must name one of them."""
    header = case.folder / f"{case.record}.hea"
    if not (case.folder / f"{case.record}.{case.annotator}").exists():
        return ["annotation file not found"]  # no generated annotations: the record's length is unknown
    causes = []
    if headers.sample_count(header) == 0:
        causes.append("holds no samples")
    if not _wfdb_beats(case)[0].size:
        causes.append("no beat annotations")
    if tokenizer == "samples":
        if rec_io.is_multi_segment(header):
            causes.append("multi-segment record")
        elif any(not (case.folder / s.file).exists() for s in headers.signal_specs(header) if s.file != "~"):
            causes.append("signal file not found")
    return causes


def _expected_beat_tokens(sample: np.ndarray, fs: float, symbols: list[str]) -> np.ndarray:
    """The beats tokenizer's tokens from wfdb's samples and rate, by its documented rule."""
    nb = BEATS["rr_bins"]
    rr = np.diff(sample) * 1000.0 / fs
    lo, hi = math.log(BEATS["rr_min_ms"]), math.log(BEATS["rr_max_ms"])
    pos = (np.log(np.clip(rr, BEATS["rr_min_ms"], BEATS["rr_max_ms"])) - lo) / (hi - lo)
    rr_bin = np.concatenate(([0], 1 + np.minimum((pos * (nb - 1)).astype(np.int64), nb - 2)))
    classes = TOKEN_CLASS_OF_CODE[symbols_to_codes(symbols)].astype(np.int64)
    return N_SPECIAL + classes * nb + rr_bin


def _check_samples(case: Case, lead: int, shard: Path, problems: list[str]) -> None:
    m = json.loads((shard / "manifest.json").read_text())
    r = m["records"][0]
    base = str(case.folder / case.record)
    head = wfdb.rdheader(base)
    rate = float(head.fs) * head.samps_per_frame[lead]
    sample, ann_fs, _ = _wfdb_beats(case)
    physical = wfdb.rdrecord(base, channels=[lead], smooth_frames=False).e_p_signal[0]
    n = len(physical)
    positions = np.load(shard / "records" / f"{r['file']}.beats.npy")
    tokens = np.load(shard / "records" / f"{r['file']}.tokens.npy")
    expected = np.minimum(np.rint(sample * (rate / ann_fs)).astype(np.int64), n - 1)
    invalid = int(np.isnan(physical).sum())
    pads = int((tokens == SPECIAL_TOKENS["pad"]).sum())
    found = (r["n_beats"], r["native_fs"], r["fs"], r["n_tokens"], r["invalid_samples"], pads)
    if found != (len(sample), rate, rate, n, invalid, invalid) or not np.array_equal(positions, expected):
        problems.append(f"{case.label} lead {lead} samples: (beats, rate, tokenized rate, tokens, invalid, pads) "
                        f"= {found}, wfdb: {(len(sample), rate, rate, n, invalid, invalid)}; positions equal: "
                        f"{np.array_equal(positions, expected)}")


def _check_resampled(case: Case, lead: int, shard: Path, native: Path, problems: list[str]) -> None:
    """The record at 360 Hz: the resampler's factor up/down = 360 / rate as a fraction (denominator <= 1000),
    ceil(n * up / down) tokens (resample_poly's output length), beats at rint(sample * 360 / annotation
    rate) (at most the last token), every invalid sample's span padded (at least invalid * up / down pads,
    at most the filter's reach more per gap), and the beats near a gap counted as at the native rate."""
    r = json.loads((shard / "manifest.json").read_text())["records"][0]
    r0 = json.loads((native / "manifest.json").read_text())["records"][0]
    base = str(case.folder / case.record)
    head = wfdb.rdheader(base)
    rate = float(head.fs) * head.samps_per_frame[lead]
    sample, ann_fs, _ = _wfdb_beats(case)
    physical = wfdb.rdrecord(base, channels=[lead], smooth_frames=False).e_p_signal[0]
    step = Fraction(360 / rate).limit_denominator(1000)
    n = math.ceil(len(physical) * step.numerator / step.denominator)
    fs = rate * step.numerator / step.denominator
    positions = np.load(shard / "records" / f"{r['file']}.beats.npy")
    tokens = np.load(shard / "records" / f"{r['file']}.tokens.npy")
    expected = np.minimum(np.rint(sample * (fs / ann_fs)).astype(np.int64), n - 1)
    invalid = np.isnan(physical)
    gaps = int((np.diff(np.concatenate(([0], invalid.view(np.int8), [0]))) == 1).sum())
    pads = int((tokens == SPECIAL_TOKENS["pad"]).sum())
    least = invalid.sum() * step.numerator / step.denominator
    most = least + gaps * (2 * resampling_reach(rate, fs) + 2)
    if ((r["n_beats"], r["fs"], r["n_tokens"], len(tokens), r["invalid_samples"], r["beats_near_gap"])
            != (len(sample), fs, n, n, int(invalid.sum()), r0["beats_near_gap"])
            or not least - 1e-9 <= pads <= most or not np.array_equal(positions, expected)):
        problems.append(f"{case.label} lead {lead} samples at 360 Hz: (beats, rate, tokens, invalid, near a gap, "
                        f"pads) = {(r['n_beats'], r['fs'], r['n_tokens'], r['invalid_samples'], r['beats_near_gap'], pads)}, "
                        f"expected {(len(sample), fs, n, int(invalid.sum()), r0['beats_near_gap'])} and pads in "
                        f"[{least:g}, {most:g}]; positions equal: {np.array_equal(positions, expected)}")


def _check_beats(case: Case, shard: Path, problems: list[str]) -> None:
    r = json.loads((shard / "manifest.json").read_text())["records"][0]
    sample, ann_fs, symbols = _wfdb_beats(case)
    tokens = np.load(shard / "records" / f"{r['file']}.tokens.npy")
    if (r["n_beats"], r["annotation_fs"]) != (len(sample), ann_fs) or not np.array_equal(
            tokens, _expected_beat_tokens(sample, ann_fs, symbols)):
        problems.append(f"{case.label} beats: {r['n_beats']} beats at {r['annotation_fs']} Hz, wfdb: "
                        f"{len(sample)} at {ann_fs} Hz (tokens equal: "
                        f"{np.array_equal(tokens, _expected_beat_tokens(sample, ann_fs, symbols))})")


@pytest.mark.filterwarnings("error::RuntimeWarning")  # a NaN cast to a token is a wrong read, not a warning
def test_every_corpus_record_is_read_as_wfdb_reads_it_or_refused_in_one_line(tmp_path: Path) -> None:
    if not (CORPUS / "100.hea").exists():
        pytest.fail(f"the WFDB sample corpus is not at {CORPUS}")
    problems: list[str] = []
    formats: set[int] = set()
    resampled: set[tuple[Path, str]] = set()  # records already prepared at 360 Hz
    read = refused = 0
    for case in cases(tmp_path / "links"):
        for tokenizer in ("samples", "beats"):
            causes = _refusal_causes(case, tokenizer)
            for lead in _leads(case) if tokenizer == "samples" else [0]:
                params = {"name": tokenizer, "annotator": case.annotator, "records": [case.record], "fs": 0,
                          "lead": lead}
                try:
                    shard = prepare_dataset(case.folder, params, tmp_path / "cache")
                except DataError as exc:
                    message = str(exc).removesuffix(f"\n({SKIP_HINT})")
                    refused += 1
                    if not any(c in message for c in causes) or "\n" in message or case.record not in message:
                        problems.append(f"{case.label} {tokenizer} lead {lead}: refused ({message!r}), expected "
                                        + (f"a one-line refusal naming the record for {causes}" if causes else "it read"))
                    continue
                read += 1
                if causes:
                    problems.append(f"{case.label} {tokenizer} lead {lead}: read, expected a refusal ({causes})")
                elif tokenizer == "samples":
                    formats.add(headers.signal_specs(case.folder / f"{case.record}.hea")[lead].fmt)
                    _check_samples(case, lead, shard, problems)
                    if (case.folder, case.record) not in resampled:
                        resampled.add((case.folder, case.record))
                        at_360 = prepare_dataset(case.folder, {**params, "fs": 360}, tmp_path / "cache")
                        _check_resampled(case, lead, at_360, shard, problems)
                else:
                    _check_beats(case, shard, problems)
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)
    assert formats == set(headers.BYTES_PER_SAMPLE), f"formats read: {sorted(formats)}"
    assert read > 150 and refused > 20 and len(resampled) > 25, (read, refused, len(resampled))
