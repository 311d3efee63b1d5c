"""Electrode-motion-like noise at a stated signal-to-noise ratio: the noisy versions of a database's own records.

A beat classifier that calls every motion artefact a V beat is no use on a ward, and the recordings a project
has are mostly clean. The MIT-BIH Noise Stress Test Database answers the question with recorded electrode-motion
noise added to clean records; where that recording is not at hand, this module makes noise of the same kind
(`tokenizer.noise_snr_db`, `hlm-train evaluate --noise-snr`): Gaussian noise band-passed to
NOISE_BAND_HZ, where it overlaps the QRS and the T wave as electrode motion does, its amplitude modulated by a
slow log-normal envelope (NOISE_ENVELOPE_HZ) so that it comes in bursts of a second or several, as motion does.
It is a stand-in, and says so wherever a figure rests on it.

The ratio is the Noise Stress Test's own definition (its `nst` program): the signal's power is that of a sine
of the QRS complexes' peak-to-peak amplitude, S = A^2 / 8 with A the median peak-to-peak amplitude within
QRS_HALF_S of each annotated beat, and the noise's is its variance; SNR = 10 log10(S / N) dB. The draw is fixed
by (seed, record name), so a noisy record is the same in every run that asks for it.
"""

from __future__ import annotations

import zlib

import numpy as np

NOISE_BAND_HZ = (0.5, 20.0)
NOISE_ENVELOPE_HZ = 0.3  # the envelope's corner: bursts of about a second to several
NOISE_ENVELOPE_SPREAD = 1.0  # standard deviation of the envelope's log
QRS_HALF_S = 0.05  # the peak-to-peak amplitude is taken within this of each beat annotation


def qrs_amplitude(x: np.ndarray, beats: np.ndarray, fs: float) -> float:
    """The median peak-to-peak amplitude of the QRS complexes (digital units) around the beat samples."""
    half = max(1, round(QRS_HALF_S * fs))
    spans = [x[max(0, b - half): b + half + 1] for b in np.asarray(beats, dtype=np.int64) if 0 <= b < len(x)]
    spans = [s for s in spans if len(s)]
    return float(np.median([s.max() - s.min() for s in spans])) if spans else float(np.ptp(x))


def signal_power(x: np.ndarray, beats: np.ndarray, fs: float) -> float:
    """The Noise Stress Test's signal power: a sine of the QRS complexes' median peak-to-peak amplitude, A^2 / 8."""
    return qrs_amplitude(x, beats, fs) ** 2 / 8.0


def motion_noise(n: int, fs: float, rng: np.random.Generator) -> np.ndarray:
    """n samples of unit-variance electrode-motion-like noise at fs Hz."""
    from scipy.signal import butter, sosfiltfilt

    high = min(NOISE_BAND_HZ[1], 0.45 * fs)
    band = sosfiltfilt(butter(2, [NOISE_BAND_HZ[0], high], btype="bandpass", fs=fs, output="sos"), rng.standard_normal(n))
    slow = sosfiltfilt(butter(1, NOISE_ENVELOPE_HZ, btype="lowpass", fs=fs, output="sos"), rng.standard_normal(n))
    slow = (slow - slow.mean()) / (slow.std() or 1.0)
    noise = band * np.exp(NOISE_ENVELOPE_SPREAD * slow)
    return (noise - noise.mean()) / (noise.std() or 1.0)


def add_noise(x: np.ndarray, beats: np.ndarray, fs: float, snr_db: float, seed: int, record: str) -> np.ndarray:
    """Digital samples `x` with motion noise added at `snr_db` (rounded back to digital units)."""
    rng = np.random.default_rng([seed, zlib.crc32(record.encode())])
    gain = np.sqrt(signal_power(x, beats, fs) / 10.0 ** (snr_db / 10.0))  # the noise's standard deviation
    return np.rint(x.astype(np.float64) + gain * motion_noise(len(x), fs, rng)).astype(np.int64)


def snr_db(x: np.ndarray, noise: np.ndarray, beats: np.ndarray, fs: float) -> float:
    """The ratio by the same definition, from a clean signal and the noise added to it (for checking)."""
    return float(10.0 * np.log10(signal_power(x, beats, fs) / np.var(noise)))
