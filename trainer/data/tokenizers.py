"""The two tokenizers, `samples` and `beats`, as whole-record numpy transforms (no loop per beat).

samples: the chosen lead, resampled to a target rate given in Hz, quantised into `vocab` bins
  (uniform or mu-law) over a robust per-record amplitude range (percentiles of the record's own
  samples). The token stream is the whole quantised record; the windows of W tokens centred on each
  beat are cut at load time, so one prepare serves every window length.
beats: one token per annotated beat = beat class (N S V F Q other) x RR-interval bin (ms, from the
  header's rate); needs annotations only.

Token ids 0..3 are special (pad, mask, cls, sep); data tokens start at 4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import numpy as np

from trainer.data import noise
from trainer.data.errors import DataError
from trainer.data.labels import AAMI_OF_CODE, IS_BEAT, N_TOKEN_CLASSES, TOKEN_CLASS_OF_CODE
from trainer.data.records import Record, rhythm_per_annotation
from trainer.data.tokenizer_keys import (  # noqa: F401 - re-exported: the trainer's modules import them from here
    DEFAULTS,
    N_SPECIAL,
    SPECIAL_TOKENS,
    TOKENIZERS,
    canonical,
)

GAP_NEIGHBOURHOOD_S = 1.0  # a beat this close to an invalid sample is counted as near a gap
TABLE_LIMIT = 1 << 22  # widest value range the quantiser builds a lookup table over (format 32: 2^32)


@dataclass
class Tokenized:
    """The arrays of one record's shard plus the facts the manifest keeps about it."""

    tokens: np.ndarray  # uint16 token stream
    beats: np.ndarray  # int64 index into tokens of each beat
    labels: np.ndarray  # int8 AAMI class per beat (-1: beat without an AAMI class)
    rhythm: np.ndarray  # int8 rhythm class per beat (-1: unknown)
    info: dict[str, Any]


def tokenized_rate(params: dict[str, Any], record_fs: float) -> float:
    """The rate the samples tokenizer quantises at: params['fs'], or the record's own when it is 0."""
    return float(params["fs"]) if params.get("fs") else float(record_fs)


def check_rate(params: dict[str, Any], fs: float, source: str, record: str) -> None:
    """What the tokenizer needs of a record's (resampled) rate: a high-pass cut-off below its Nyquist
    frequency. Tokenizing and the preflight both ask here, so they refuse with the same words."""
    if float(params.get("highpass_hz") or 0.0) >= fs / 2:
        raise DataError(f"{source}: tokenizer.highpass_hz = {params['highpass_hz']} Hz is not below the "
                        f"Nyquist frequency of record {record!r} ({fs / 2:g} Hz at {fs:g} Hz)")


def vocab_size(name: str, params: dict[str, Any]) -> int:
    """Number of token ids, specials included."""
    if name == "samples":
        return N_SPECIAL + int(params["vocab"])
    return N_SPECIAL + N_TOKEN_CLASSES * int(params["rr_bins"])


def tokenize(name: str, params: dict[str, Any], rec: Record) -> Tokenized:
    """Tokenize one decoded record with the named tokenizer."""
    return tokenize_samples(params, rec) if name == "samples" else tokenize_beats(params, rec)


def beat_arrays(rec: Record, ann_source: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Beat times (in the annotations' time base), codes and rhythm; every beat checked to lie inside
    the record, so no tokenizer keeps a beat the signal does not hold."""
    is_beat = IS_BEAT[rec.ann.code]
    sample = rec.ann.sample[is_beat]
    if not len(sample):
        raise DataError(f"{ann_source}: no beat annotations in record {rec.name!r}")
    _check_inside(rec, sample, ann_source)
    change_at, change_cls = rhythm_per_annotation(rec.ann)
    if len(change_at):
        which = np.searchsorted(change_at, sample, side="right") - 1
        rhythm = np.where(which >= 0, change_cls[np.maximum(which, 0)], -1).astype(np.int8)
    else:
        rhythm = np.full(len(sample), -1, dtype=np.int8)
    return sample, rec.ann.code[is_beat], rhythm


def _check_inside(rec: Record, sample: np.ndarray, ann_source: str) -> None:
    """A beat outside the record would be lost (samples) or carry a wrong RR (beats): never silently.
    Times are compared in seconds, so an annotation file with its own time resolution is judged right."""
    held = rec.samples_held()
    if held is None:
        return  # neither the header nor a signal file says how long the record is
    if held == 0:
        raise DataError(f"{rec.source}: the record holds no samples (its sample count is 0, as in the layout "
                        f"header of a multi-segment record), so none of the {len(sample):,} beats of "
                        f"{Path(ann_source).name} lies inside it")
    outside = (sample < 0) | (sample * rec.fs >= held * rec.time_base)
    if not outside.any():
        return
    first = int(sample[np.flatnonzero(outside)[0]])
    header = Path(rec.source).name
    if abs(rec.time_base - rec.fs) < 1e-9:
        expected = f"expected samples 0..{held - 1:,} of {header}"
    else:
        last = math.ceil(held * rec.time_base / rec.fs) - 1
        expected = f"expected samples 0..{last:,} at the annotations' {rec.time_base:g} Hz: the {held / rec.fs:,.1f} s of {header}"
    raise DataError(
        f"{ann_source}: {int(outside.sum()):,} of {len(sample):,} beats lie outside the signal ({expected}, "
        f"found one at {first:,}); the annotation file belongs to a longer record, counts at another rate "
        "without saying so (no '## time resolution' note), or the header's sample count is wrong")


def tokenize_beats(params: dict[str, Any], rec: Record) -> Tokenized:
    """One token per beat: class x log-spaced RR bin; bin 0 marks the record's first beat."""
    sample, code, rhythm = beat_arrays(rec, str(rec.extra.get("ann_path", rec.source)))
    nb = int(params["rr_bins"])
    rr_ms = np.diff(sample).astype(np.float64) * (1000.0 / rec.time_base)
    lo, hi = math.log(params["rr_min_ms"]), math.log(params["rr_max_ms"])
    pos = (np.log(np.clip(rr_ms, params["rr_min_ms"], params["rr_max_ms"])) - lo) / (hi - lo)
    rr_bin = np.empty(len(sample), dtype=np.int64)
    rr_bin[0] = 0
    rr_bin[1:] = 1 + np.minimum((pos * (nb - 1)).astype(np.int64), nb - 2)
    tokens = (N_SPECIAL + TOKEN_CLASS_OF_CODE[code].astype(np.int64) * nb + rr_bin).astype(np.uint16)
    labels = AAMI_OF_CODE[code]
    info = {"n_tokens": len(tokens), "fs": rec.fs, "annotation_fs": rec.time_base}
    return Tokenized(tokens, np.arange(len(tokens), dtype=np.int64), labels, rhythm, info)


def tokenize_samples(params: dict[str, Any], rec: Record) -> Tokenized:
    """Quantise the lead (resampled to params['fs']) and locate each beat in the token stream.

    Invalid samples (WFDB's gap value, NaN in physical units) never become signal tokens: they are
    filled with the lead's median before resampling and filtering (so they spread into no neighbour),
    left out of the quantiser's range, and stored as the pad token, over the gap widened by the
    resampling filter's reach: a window that touches a gap sees padding there, as beyond a record's edge.
    Beats near a gap are counted on the lead's own samples: a property of the recording, the same at
    every output rate.
    """
    if rec.signal is None:
        raise DataError(f"{rec.source}: record {rec.name!r} has no signal (the samples tokenizer needs one)")
    ann_source = str(rec.extra.get("ann_path", rec.source))
    sample, code, rhythm = beat_arrays(rec, ann_source)
    x, gap = _fill_gaps(rec, rec.signal)
    if params.get("noise_snr_db") is not None:  # the noisy version of the record, at its own rate (data.noise)
        x = noise.add_noise(x, rec.beat_positions(sample, rec.fs), rec.fs, float(params["noise_snr_db"]),
                            int(params.get("noise_seed") or 0), rec.name)
    x, fs = resample(x, rec.fs, params["fs"])
    check_rate(params, fs, rec.source, rec.name)
    x = remove_baseline(x, fs, float(params["highpass_hz"]))
    positions = np.minimum(rec.beat_positions(sample, fs), len(x) - 1)
    gap_out = gap_at_rate(gap, rec.fs, fs, len(x)) if gap is not None else None
    q, tokens = quantize(x, x if gap_out is None else x[~gap_out], params)
    if gap_out is not None:
        tokens[gap_out] = SPECIAL_TOKENS["pad"]
    info = {
        "n_tokens": len(tokens), "fs": fs, "native_fs": rec.fs, "lead": rec.lead,
        "samples_per_frame": rec.extra.get("samples_per_frame", 1),
        "adc_gain": rec.adc_gain, "baseline": rec.baseline, "quantizer": q.describe(),
        "beats_outside_signal": 0, "invalid_samples": 0 if gap is None else int(gap.sum()),
        "beats_near_gap": 0 if gap is None else beats_near(
            gap, np.minimum(rec.beat_positions(sample, rec.fs), len(gap) - 1), round(GAP_NEIGHBOURHOOD_S * rec.fs)),
    }
    return Tokenized(tokens, positions, AAMI_OF_CODE[code], rhythm, info)


def _fill_gaps(rec: Record, x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The lead `x` of `rec` with its invalid samples set to its median, and where they were (None: no gap)."""
    if rec.invalid_value is None:
        return x, None
    gap = x == rec.invalid_value
    n = int(gap.sum())
    if not n:
        return x, None
    if n == len(x):
        raise DataError(f"{rec.source}: lead {rec.lead} of record {rec.name!r} holds only invalid samples "
                        f"({n:,}, the value {rec.invalid_value} of its storage format); choose another lead")
    x = x.copy()
    x[gap] = int(np.median(x[~gap]))
    return x, gap


def gap_at_rate(gap: np.ndarray, fs: float, rate: float, n: int) -> np.ndarray:
    """Where the gaps of a lead at `fs` lie at `rate` (n samples), each widened by the resampling
    filter's reach so that no output sample the gap's fill could have touched counts as signal."""
    if abs(rate - fs) < 1e-9:
        return gap
    edges = np.diff(np.concatenate(([0], gap.view(np.int8), [0])))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    reach = resampling_reach(fs, rate)
    lo = np.clip(np.floor(starts * (rate / fs)).astype(np.int64) - reach, 0, n)
    hi = np.clip(np.ceil(ends * (rate / fs)).astype(np.int64) + reach, 0, n)
    mark = np.zeros(n + 1, dtype=np.int64)
    np.add.at(mark, lo, 1)
    np.add.at(mark, hi, -1)
    return np.cumsum(mark[:n]) > 0


def resampling_reach(fs: float, rate: float) -> int:
    """Output samples (at `rate`) on either side of an input sample that the polyphase filter lets it
    touch: resample_poly's filter has 10 * max(up, down) taps each side at the upsampled rate."""
    ratio = _ratio(fs, rate)
    return math.ceil(10 * max(ratio.numerator, ratio.denominator) / ratio.denominator) + 1


def beats_near(gap: np.ndarray, positions: np.ndarray, reach: int) -> int:
    """Beats with an invalid sample within `reach` samples (their windows show padding there)."""
    before = np.concatenate(([0], np.cumsum(gap)))
    lo = np.clip(positions - reach, 0, len(gap))
    hi = np.clip(positions + reach + 1, 0, len(gap))
    return int(((before[hi] - before[lo]) > 0).sum())


def quantize(x: np.ndarray, valid: np.ndarray, params: dict[str, Any]) -> tuple[Quantizer, np.ndarray]:
    """Tokens of every sample of `x`, the quantiser fitted to the `valid` ones.

    A lookup table over the record's integer values (one gather) when their range is narrow, as every
    ECG format below 32 bits is; a 32-bit lead's values are binned directly, never a table or a histogram
    over the whole integer range.
    """
    lo, hi = int(x.min()), int(x.max())
    # Percentiles from every k-th sample (>= 2^17 of them): the same range to a fraction of an ADC
    # unit, for a quarter of the histogram's cost.
    picked = valid[:: max(1, len(valid) // (1 << 17))]
    if hi - lo < TABLE_LIMIT:
        offset = (x - lo).astype(np.intp, copy=False)  # one pass shared by the histogram and the table
        counts = np.bincount(picked - lo)
        seen = np.flatnonzero(counts)
        q = Quantizer.fit(seen + lo, counts[seen], params)
        return q, np.take(q.table(lo, hi - lo + 1), offset)
    values, counts = np.unique(picked, return_counts=True)
    q = Quantizer.fit(values, counts, params)
    return q, (q.bin_of(x) + N_SPECIAL).astype(np.uint16)


def resample(x: np.ndarray, fs: float, target: float | None) -> tuple[np.ndarray, float]:
    """Resample digital samples to `target` Hz (polyphase, anti-aliased); no-op if equal or unset.

    Around the lead's median and extended by a line at both ends, so the record's edges get no
    artefact (the filter would otherwise see a step to zero there): a constant lead stays constant.
    A one-sample lead (a numerics record of one minute) has no line through it: it stays its value.
    """
    if not target or abs(target - fs) < 1e-9:
        return x, fs
    ratio = _ratio(fs, target)
    from scipy.signal import resample_poly

    centre = float(np.median(x))
    pad: Literal["line", "constant"] = "line" if len(x) > 1 else "constant"
    y = resample_poly(x.astype(np.float64) - centre, ratio.numerator, ratio.denominator, padtype=pad)
    return np.rint(y + centre).astype(np.int64), float(fs * ratio)


def _ratio(fs: float, target: float) -> Fraction:
    """The up/down factors of resampling from fs to target (the resampled rate is fs times it)."""
    return Fraction(target / fs).limit_denominator(1000)


def remove_baseline(x: np.ndarray, fs: float, cutoff_hz: float) -> np.ndarray:
    """Digital samples without their baseline wander: a zero-phase 2nd-order Butterworth high-pass
    (no shift of the R peaks); no-op at 0 Hz.

    Breathing and electrode motion move the baseline by more than a P wave's height; without this the
    same beat gets different tokens depending on where the baseline happened to be.
    """
    if not cutoff_hz:
        return x
    from scipy.signal import butter, sosfiltfilt

    sos = butter(2, cutoff_hz, btype="highpass", fs=fs, output="sos")
    return np.rint(sosfiltfilt(sos, x.astype(np.float64))).astype(np.int64)


@dataclass
class Quantizer:
    """Maps integer (digital) amplitudes to bins through a lookup table: one gather per record.

    The robust range is median +- half, half = the larger distance from the median to the
    clip_percentile / 100 - clip_percentile percentiles, widened by `margin`; values beyond it clip.
    """

    kind: str
    bins: int
    centre: float
    half: float  # half width of the robust range, margin included
    mu: float

    @classmethod
    def fit(cls, values: np.ndarray, counts: np.ndarray, params: dict[str, Any]) -> Quantizer:
        """Robust range from the histogram of a record's digital values (sorted distinct values and how
        often each occurs: exact percentiles, one pass)."""
        cdf = np.cumsum(counts) / counts.sum()
        p = params["clip_percentile"] / 100.0
        lo = int(values[np.searchsorted(cdf, p, side="left")])
        hi = int(values[min(np.searchsorted(cdf, 1.0 - p, side="left"), len(values) - 1)])
        median = int(values[np.searchsorted(cdf, 0.5, side="left")])
        # Centred on the median (the baseline), so mu-law spends its resolution where the signal rests.
        half = max(max(hi - median, median - lo) * (1.0 + params["margin"]), 1.0)
        return cls(params["quantizer"], int(params["vocab"]), float(median), half, float(params["mu"]))

    def bin_of(self, v: np.ndarray) -> np.ndarray:
        """Bin index (0..bins-1) of amplitudes in digital units."""
        u = np.clip((np.asarray(v, dtype=np.float64) - self.centre) / self.half, -1.0, 1.0)
        if self.kind == "mulaw":
            u = np.sign(u) * np.log1p(self.mu * np.abs(u)) / math.log1p(self.mu)
        return np.minimum(((u + 1.0) * 0.5 * self.bins).astype(np.int64), self.bins - 1)

    def _inverse(self, y: np.ndarray) -> np.ndarray:
        if self.kind == "mulaw":
            y = np.sign(y) * np.expm1(np.abs(y) * math.log1p(self.mu)) / self.mu
        return self.centre + y * self.half

    def edges(self, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper amplitude (digital units) of each bin inside the robust range."""
        b = np.asarray(b, dtype=np.float64)
        return self._inverse(b / self.bins * 2.0 - 1.0), self._inverse((b + 1.0) / self.bins * 2.0 - 1.0)

    def table(self, xmin: int, size: int) -> np.ndarray:
        """Token (uint16, specials offset) of every digital value xmin .. xmin + size - 1."""
        return (self.bin_of(np.arange(xmin, xmin + size)) + N_SPECIAL).astype(np.uint16)

    def apply(self, x: np.ndarray) -> np.ndarray:
        """Tokens of any integer samples (the same bins as the tokenizer's table)."""
        return (self.bin_of(x) + N_SPECIAL).astype(np.uint16)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "bins": self.bins, "centre": self.centre, "half": self.half, "mu": self.mu}
