"""Atrial lock: does a P wave keep time with the QRS around a beat?

In sinus rhythm, and around an isolated S or V beat, the P wave sits at the same distance before each QRS, so the
median of the P-wave windows (P_WINDOW_S before each R peak) over the LOCK_BEATS beats around a beat keeps its
shape and its energy: the lock, that energy over the mean energy of each window, is near 1 (0.8-0.95 in mitdb's
sinus rhythm). Atrial fibrillation has no P wave; its fibrillation waves are not locked to the QRS and average
out in the median (0.01-0.15). The lock is what the RR intervals alone cannot see: fibrillation with a steady
ventricular response, and frequent S beats whose intervals look as irregular as fibrillation's while their
neighbours' P waves still keep time (bench/af_evidence.py measures both on mitdb and svdb).

It is computed per record from the waveform, once, when a dataset is opened (context `rr_af_lock`,
trainer.data.rr_context); the samples tokenizer's tokens serve as the waveform (a quantiser is monotonic, and the
ratio does not depend on scale).
"""

from __future__ import annotations

import numpy as np

P_WINDOW_S = (0.30, 0.06)  # the P-wave window: from 300 ms to 60 ms before the R peak
BAND_HZ = (1.0, 30.0)  # what is kept of the signal before the windows are cut
LOCK_BEATS = 32  # the neighbours a beat's median window is taken over (the beat itself besides)


def atrial_lock(signal: np.ndarray, fs: float, beats: np.ndarray) -> np.ndarray:
    """Per beat, in [0, 1]: the energy of the median P window over the LOCK_BEATS beats around it, over their
    mean energy. NaN samples (a gap) are filled with the signal's median; a beat whose windows hold no energy
    at all gets 1 (nothing says the atria are not locked)."""
    x = np.asarray(signal, dtype=np.float64)
    beats = np.asarray(beats, dtype=np.int64)
    if len(beats) == 0 or len(x) == 0:
        return np.ones(len(beats))
    x = np.where(np.isfinite(x), x, np.nanmedian(x) if np.isfinite(x).any() else 0.0)
    high = min(BAND_HZ[1], 0.45 * fs)
    if len(x) > 30:  # sosfiltfilt needs more samples than its padding
        # imported here, as in tokenizers.py and noise.py: scipy.signal costs a worker about 1 s of CPU at
        # start-up (bench/worker_startup.py), and only the runs that compute the lock use it
        from scipy.signal import butter, sosfiltfilt

        x = sosfiltfilt(butter(2, (BAND_HZ[0], high), btype="band", fs=fs, output="sos"), x)
    start, stop = (max(1, int(round(s * fs))) for s in P_WINDOW_S)
    idx = np.clip(beats[:, None] + np.arange(-start, -stop)[None, :], 0, len(x) - 1)
    cut = x[idx]
    windows = (cut - cut.mean(axis=1, keepdims=True)).astype(np.float32)  # half the work of the median
    energy = (windows ** 2).mean(axis=1)
    # the first and last beats' windows repeat past the record's ends (no NaN, so a partition finds the median)
    half = min(LOCK_BEATS // 2, len(beats) - 1)
    padded = np.concatenate([windows[:1].repeat(half, axis=0), windows, windows[-1:].repeat(half, axis=0)])
    stacked = np.ascontiguousarray(np.lib.stride_tricks.sliding_window_view(padded, 2 * half + 1, axis=0))
    median = np.partition(stacked, half, axis=2)[..., half]  # an odd count: the middle one is the median
    padded_energy = np.concatenate([energy[:1].repeat(half), energy, energy[-1:].repeat(half)])
    mean = np.lib.stride_tricks.sliding_window_view(padded_energy, 2 * half + 1).mean(axis=1)
    lock = np.divide((median ** 2).mean(axis=1), mean, out=np.ones(len(beats)), where=mean > 0)
    return np.clip(lock, 0.0, 1.0)
