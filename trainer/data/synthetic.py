"""A synthetic ECG generator: the embedded default dataset when no PhysioNet data is given.

Each beat is a sum of Gaussian waves (P, Q, R, S, T) placed around its R peak, in the spirit of
McSharry et al. (2003) but directly in time rather than as an ODE:
- N: normal P-QRS-T; S (annotated 'A', AAMI S): premature, ectopic (inverted, earlier) P, normal
  QRS; V: premature, no P, wide tall QRS and discordant T, followed by a compensatory pause;
- RR variability (respiratory sinus arrhythmia + jitter), baseline wander, Gaussian noise;
- some records carry an atrial fibrillation episode (irregular RR, no P, fibrillatory waves) with
  rhythm annotations "(AFIB" / "(N" exactly as MIT-BIH writes them.
Deterministic: record i of seed s depends only on (s, i). Every output is named "synthetic".
"""

from __future__ import annotations

import math

import numpy as np

from trainer.data.labels import RHYTHM_CODE, symbols_to_codes
from trainer.data.mitann import Annotations
from trainer.data.records import Record

NAME = "synthetic"
ADC_GAIN = 200.0  # digital units per mV, as in MIT-BIH
DEFAULTS = {"records": 8, "seconds": 300, "seed": 0, "fs": 360}
GENERATOR_VERSION = 1  # bump when the waveforms change: cached synthetic shards are then rebuilt

# (offset from R in s, amplitude in mV, width in s) of P, Q, R, S, T; T scales with sqrt(RR).
_WAVES = {
    "N": [(-0.17, 0.15, 0.022), (-0.035, -0.12, 0.010), (0.0, 1.1, 0.011), (0.035, -0.25, 0.011), (0.26, 0.30, 0.045)],
    "A": [(-0.13, -0.10, 0.018), (-0.035, -0.12, 0.010), (0.0, 1.1, 0.011), (0.035, -0.25, 0.011), (0.26, 0.30, 0.045)],
    "V": [(0.0, 0.0, 0.02), (-0.05, -0.20, 0.020), (0.0, 1.5, 0.032), (0.07, -0.55, 0.035), (0.33, -0.45, 0.070)],
}


def record_names(n: int) -> list[str]:
    """Names of the synthetic records: every one says what it is."""
    return [f"{NAME}-{i:03d}" for i in range(n)]


def generate_record(index: int, seconds: float = 300, seed: int = 0, fs: float = 360) -> Record:
    """One synthetic record with beat labels and rhythm annotations, deterministic in (seed, index)."""
    rng = np.random.default_rng([int(seed), int(index)])
    n = int(round(seconds * fs))
    hr = rng.uniform(58, 95)
    p_s, p_v = rng.uniform(0.02, 0.10), rng.uniform(0.02, 0.10)
    scale = rng.uniform(0.7, 1.3)
    afib = (rng.uniform() < 0.5) and seconds >= 60
    af_start = rng.uniform(0.2, 0.5) * seconds if afib else math.inf
    af_end = af_start + rng.uniform(0.2, 0.35) * seconds if afib else math.inf

    times, symbols = _beat_times(rng, seconds, 60.0 / hr, p_s, p_v, af_start, af_end)
    rr = np.diff(times, prepend=times[0] - 60.0 / hr)
    in_af = (times >= af_start) & (times < af_end)

    # Waves of all beats as flat arrays, then one weighted bincount places them all.
    centre, amp, width = [], [], []
    for sym in ("N", "A", "V"):
        sel = np.array([s == sym for s in symbols])
        for w, (off, height, spread) in enumerate(_WAVES[sym]):
            pick = sel & ~in_af if w == 0 else sel  # no P wave during AF
            stretch = np.sqrt(rr[pick]) if w == 4 else 1.0
            centre.append(times[pick] + off * stretch)
            amp.append(np.full(pick.sum(), height * scale) * rng.uniform(0.9, 1.1, pick.sum()))
            width.append(np.full(pick.sum(), spread) * stretch)
    c, a, wd = np.concatenate(centre), np.concatenate(amp), np.concatenate(width)
    half = int(math.ceil(4 * 0.08 * fs))
    offs = np.arange(-half, half + 1)
    idx = np.rint(c * fs).astype(np.int64)[:, None] + offs[None, :]
    val = a[:, None] * np.exp(-0.5 * ((idx / fs - c[:, None]) / wd[:, None]) ** 2)
    ok = (idx >= 0) & (idx < n)
    x: np.ndarray = np.bincount(idx[ok], weights=val[ok], minlength=n)[:n]  # float64: weighted

    t = np.arange(n) / fs
    x += rng.uniform(0.05, 0.2) * np.sin(2 * np.pi * rng.uniform(0.15, 0.35) * t + rng.uniform(0, 6.3))
    x += 0.03 * np.sin(2 * np.pi * 0.05 * t + rng.uniform(0, 6.3))
    if afib:
        f = (t >= af_start) & (t < af_end)
        x[f] += 0.05 * np.sin(2 * np.pi * (5.5 + 0.8 * np.sin(2 * np.pi * 0.1 * t[f])) * t[f])
    x += rng.normal(0.0, rng.uniform(0.01, 0.04), n)
    signal = np.rint(x * ADC_GAIN).astype(np.int64)

    beat_sample = np.rint(times * fs).astype(np.int64)
    keep = (beat_sample >= 0) & (beat_sample < n)
    ann = _annotations(beat_sample[keep], [s for s, k in zip(symbols, keep, strict=True) if k], fs, af_start, af_end)
    return Record(
        name=record_names(index + 1)[index], fs=float(fs), ann=ann, signal=signal, lead="synthetic",
        adc_gain=ADC_GAIN, baseline=0.0, source=f"{NAME} record {index} (seed {seed})",
        extra={"synthetic": True, "afib": bool(afib)},
    )


def _beat_times(rng: np.random.Generator, seconds: float, rr0: float, p_s: float, p_v: float,
                af_start: float, af_end: float) -> tuple[np.ndarray, list[str]]:
    """R-peak times and symbols: sinus rhythm with RSA and jitter, premature beats, AF irregularity."""
    times: list[float] = []
    symbols: list[str] = []
    t = rng.uniform(0.3, 0.8)
    pending_pause = 0.0
    resp = rng.uniform(0.2, 0.3)
    while t < seconds - 0.4:
        base = rr0 * (1 + 0.05 * math.sin(2 * math.pi * resp * t) + 0.02 * rng.normal())
        if af_start <= t < af_end:
            sym, rr = "N", rr0 * rng.uniform(0.55, 1.35)
        else:
            u = rng.uniform()
            sym = "A" if u < p_s else "V" if u < p_s + p_v else "N"
            if not symbols or symbols[-1] != "N":
                sym = "N"  # first beat sinus, no couplets: keeps the labels simple and the classes honest
            rr = base * (0.65 if sym == "A" else 0.6 if sym == "V" else 1.0) + pending_pause
        pending_pause = base * 0.4 if sym == "V" else 0.0
        t += rr if times else 0.0
        times.append(t)
        symbols.append(sym)
    return np.array(times), symbols


def _annotations(beat_sample: np.ndarray, symbols: list[str], fs: float, af_start: float, af_end: float) -> Annotations:
    changes = [(0, "(N")]
    if math.isfinite(af_start):
        changes += [(int(round(af_start * fs)), "(AFIB"), (int(round(af_end * fs)), "(N")]
    samples = np.concatenate([beat_sample, np.array([s for s, _ in changes], dtype=np.int64)])
    codes = np.concatenate([symbols_to_codes(symbols), np.full(len(changes), RHYTHM_CODE, dtype=np.uint8)])
    order = np.argsort(samples, kind="stable")
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    aux_index = position[len(beat_sample):].astype(np.int64)
    return Annotations(samples[order], codes[order], aux_index, [text for _, text in changes])
