"""Windows as the difference from the patient's own typical beat (`model.waveform = "diff"`).

A classifier trained on 17 patients learns their morphologies: a normal beat of an unseen patient,
whose QRS is wider or whose T wave is inverted, then looks abnormal. Cardiologists and Holter software
compare a beat with the same patient's dominant beat instead. Here each beat's window is replaced by
its token-wise difference from a template: the median window of the TEMPLATE_BEATS consecutive beats
around it (about 3-4 minutes), taken over the TEMPLATE_SHARE of them with the longest preceding interval.
Ectopic beats come early, so the beats after the longest intervals are the patient's own sinus beats even
where ectopic beats are the majority (mitdb 232, whose main rhythm is atrial ectopic: the median of all its
beats is an S beat, against which its S beats look normal). A normal beat's difference is then near zero
whoever the patient is; an S beat's changed P wave and a V beat stand out. Only beat positions are used,
never labels, so the foundation phase stays self-supervised and the test patients' templates come from their
own unlabelled recording, as in any Holter analysis.

The difference keeps the shard vocabulary: d = window - template (in bins) is clipped to
[-bins/2, bins/2 - 1] and stored as N_SPECIAL + bins/2 + d. Positions outside the record stay padding.
"""

from __future__ import annotations

import numpy as np

from trainer.config_keys import WAVEFORMS

TEMPLATE_BEATS = 256  # beats per template block
TEMPLATE_SHARE = 0.25  # of a block's beats, those with the longest preceding interval make its template


def check_waveform(waveform: str | None) -> str:
    """The waveform name, or ValueError naming the choices."""
    name = waveform or "raw"
    if name not in WAVEFORMS:
        raise ValueError(f"waveform: unknown waveform {waveform!r} (expected one of: {', '.join(WAVEFORMS)})")
    return name


def record_templates(tokens: np.ndarray, centres: np.ndarray, window: int, pad_id: int) -> np.ndarray:
    """[blocks, window] median windows of each block of TEMPLATE_BEATS consecutive beats (uint16), over the
    block's template_beats (the beats after its longest intervals).

    Positions a beat's window has outside the record do not count; a position no beat of the block has
    inside the record is padding.
    """
    n_blocks = max(1, -(-len(centres) // TEMPLATE_BEATS))
    out = np.full((n_blocks, window), pad_id, dtype=np.uint16)
    offsets = np.arange(window) - window // 2
    preceding = np.diff(np.asarray(centres, dtype=np.float64), prepend=np.nan)
    for b in range(n_blocks):
        block = slice(b * TEMPLATE_BEATS, (b + 1) * TEMPLATE_BEATS)
        chosen = np.asarray(centres)[block][template_beats(preceding[block])]
        idx = chosen[:, None] + offsets[None, :]
        if not idx.size:
            continue
        inside = (idx >= 0) & (idx < len(tokens))
        values = np.asarray(tokens)[np.clip(idx, 0, len(tokens) - 1)].astype(np.float64)
        values[~inside] = np.nan
        covered = inside.any(axis=0)
        out[b, covered] = np.rint(np.nanmedian(values[:, covered], axis=0))
    return out


def template_beats(preceding: np.ndarray) -> np.ndarray:
    """Indices of the ceil(TEMPLATE_SHARE x beats) beats with the longest preceding interval (NaN: unknown,
    chosen last), in time order."""
    keep = max(1, int(np.ceil(TEMPLATE_SHARE * len(preceding))))
    order = np.argsort(-np.nan_to_num(preceding, nan=-np.inf), kind="stable")
    return np.sort(order[:keep])


def block_of(beat_index: np.ndarray) -> np.ndarray:
    """The template block of each beat (its index in the record's beat list)."""
    return np.asarray(beat_index) // TEMPLATE_BEATS


def difference(window: np.ndarray, template: np.ndarray, bins: int, first_id: int, pad_id: int) -> np.ndarray:
    """Token ids of window - template (both in token ids), in the shard's own id range."""
    half = bins // 2
    d = np.clip(window.astype(np.int64) - template.astype(np.int64), -half, half - 1) + first_id + half
    return np.where((window == pad_id) | (template == pad_id), pad_id, d)
