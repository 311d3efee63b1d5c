"""Motion noise at a stated SNR (trainer.data.noise) on a real mitdb record: the ratio it states is the ratio
the Noise Stress Test's definition measures, the draw is fixed by seed and record, and the noise lies in its band."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from trainer.data import noise
from trainer.data.records import read_record


@pytest.fixture(scope="module")
def record(physionet: Path):  # noqa: ANN201  (a trainer.data.records.Record)
    return read_record(physionet / "mitdb", "100", "atr", 0)


@pytest.mark.parametrize("snr", [24.0, 12.0, 0.0])
def test_the_added_noise_has_the_stated_snr_by_the_stress_tests_definition(record, snr: float) -> None:
    x = np.asarray(record.signal, dtype=np.int64)
    beats = record.beat_positions(record.ann.sample, record.fs)
    noisy = noise.add_noise(x, beats, record.fs, snr, 0, record.name)
    assert noise.snr_db(x, noisy - x, beats, record.fs) == pytest.approx(snr, abs=0.05)
    assert noise.qrs_amplitude(x, beats, record.fs) > 100  # mitdb's QRS: about 1 mV at 200 units per mV


def test_one_seed_and_record_is_one_draw_and_the_noise_stays_in_its_band(record) -> None:
    x = np.asarray(record.signal, dtype=np.int64)
    beats = record.beat_positions(record.ann.sample, record.fs)
    a, b = (noise.add_noise(x, beats, record.fs, 6.0, seed, record.name) for seed in (0, 0))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, noise.add_noise(x, beats, record.fs, 6.0, 1, record.name))
    assert not np.array_equal(a, noise.add_noise(x, beats, record.fs, 6.0, 0, "101"))
    n = noise.motion_noise(len(x), record.fs, np.random.default_rng(0))
    power = np.abs(np.fft.rfft(n)) ** 2
    freq = np.fft.rfftfreq(len(n), 1 / record.fs)
    low, high = noise.NOISE_BAND_HZ
    assert power[(freq >= low) & (freq <= high)].sum() > 0.8 * power.sum()
    assert n.std() == pytest.approx(1.0)
