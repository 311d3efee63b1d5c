"""RR-interval context tokens: the rhythm around a beat, as a few extra tokens before its window.

An S beat differs from an N beat mostly by its timing (it comes early), a V beat also by the pause
after it. A window of samples centred on a beat rarely reaches the neighbouring R peaks, so the model
is given the intervals themselves: CONTEXT_FEATURES tokens, one per feature, each a log-spaced bin in
its own id range above the shard vocabulary (the vocabulary grows by CONTEXT_TOKENS). Ratios to the
local average make the features comparable across patients whose heart rates differ: that is what
lets a classifier trained on some patients recognise prematurity in others.

`rr_rhythm` adds one token for the rhythm around the beat: the median of |ΔRR|/RR over the RHYTHM_BEATS
intervals centred on it. An isolated ectopic beat moves a median of 64 little; atrial fibrillation, whose
N beats all look premature against their neighbours, moves it a lot (docs/training.md). So does a bigeminy
(short, long, short, ...) and every rhythm of frequent ectopic beats: the S beats themselves.

`rr_af` adds instead the irregularity no short repeating pattern explains: for each lag k of AF_LAGS, the
median of |RR_i - RR_(i-k)| / RR_(i-k) over the RHYTHM_BEATS intervals centred on the beat, and the least of
them. A bigeminy repeats at lag 2 and a trigeminy at lag 3, so their least is small; atrial fibrillation
repeats at no lag. It is the feature the S decision's rhythm gate reads (trainer.scoring.calibration).

`rr_af_lock` adds to `rr_af`'s tokens one more: the AF evidence, that irregularity x (1 - lock)^2, where the
lock (trainer.data.atrial_lock) says whether a P wave keeps time with the QRS around the beat. It is high only
where the rhythm is irregular and no P wave keeps time, and it is the feature the rhythm gate reads for this
context: frequent S beats among sinus beats are irregular but locked; fibrillation with a steady ventricular
response is less irregular but unlocked. It needs the waveform (the samples tokenizer).

`rr_af_lock_sinus` adds to `rr_af_lock`'s tokens one more: the interval before the beat against the patient's
sinus interval, the SINUS_QUANTILE quantile of the LONG_BEATS intervals around it (ectopic beats come early, so the
longest intervals are the sinus beats', as for the template beat, trainer/data/beat_template.py). Where S beats
are the main rhythm (record 232: runs of S beats between sinus beats after long pauses) the local and the long
averages are theirs, so a beat inside a run looks on time against both (pre / long 0.72, as for a faster sinus
stretch); against the sinus interval it comes at 0.4 of it.

Everything is computed per record in numpy from the beat positions (and for `rr_af_lock` the waveform), once,
when a dataset is opened.
"""

from __future__ import annotations

import math

import numpy as np

from trainer.config_keys import CONTEXTS

RR_BINS = 32  # bins per feature
LOCAL_BEATS = 16  # local average: the mean of this many RR intervals centred on the beat
LONG_BEATS = 600  # long average (about 5 minutes at 60-120 bpm): the patient's own normal rate
# feature name -> (low, high) of its log-spaced bins; values beyond clip to the end bins
CONTEXT_FEATURES: dict[str, tuple[float, float]] = {
    "pre_ms": (200.0, 2000.0),  # interval from the previous beat
    "post_ms": (200.0, 2000.0),  # interval to the next beat
    "local_ms": (300.0, 1600.0),  # local average interval
    "pre_local": (0.5, 2.0),  # pre / local: < 1 is premature
    "post_local": (0.5, 2.0),  # post / local: > 1 is a (compensatory) pause
    "pre_long": (0.5, 2.0),  # the same against the long average, which a run of ectopic beats
    "post_long": (0.5, 2.0),  # cannot pull towards itself as it does the local one
    "local_long": (0.5, 2.0),  # a faster stretch (a run of S beats) against the patient's own rate
}
CONTEXT_TOKENS = len(CONTEXT_FEATURES) * RR_BINS  # `rr`'s
RHYTHM_BEATS = 64  # intervals the irregularity's median is taken over
RHYTHM_FEATURES: dict[str, tuple[float, float]] = {
    "irregularity": (0.01, 1.0),  # median |ΔRR|/RR over RHYTHM_BEATS intervals: sinus ~0.02-0.05, AF ~0.1-0.3
}
AF_LAGS = (1, 2, 3)  # the repeating patterns `rr_af` forgives: none, bigeminy, trigeminy
AF_FEATURE = "af_irregularity"
AF_FEATURES: dict[str, tuple[float, float]] = {AF_FEATURE: (0.01, 1.0)}  # least over AF_LAGS of the median
EVIDENCE_FEATURE = "af_evidence"
LOCK_FEATURES: dict[str, tuple[float, float]] = {**AF_FEATURES, EVIDENCE_FEATURE: (0.01, 1.0)}  # irregularity x (1 - lock)^2
SINUS_FEATURE = "pre_sinus"
SINUS_FEATURES: dict[str, tuple[float, float]] = {SINUS_FEATURE: (0.25, 2.0)}  # pre / the sinus interval
SINUS_QUANTILE = 0.875  # the median of the longest quarter: the template beat's share (beat_template.py)
GATE_FEATURES = {"rr_af": AF_FEATURE, "rr_af_lock": EVIDENCE_FEATURE,  # what the rhythm gate reads, per context
                 "rr_af_lock_sinus": EVIDENCE_FEATURE}
WAVEFORM_CONTEXTS = ("rr_af_lock", "rr_af_lock_sinus")  # the contexts that need each beat's atrial lock (the waveform)


def features_of(context: str | None) -> dict[str, tuple[float, float]]:
    """The features (name -> bin range) a context puts before each window, in token order."""
    name = check_context(context)
    if name == "none":
        return {}
    extra = {"rr_rhythm": RHYTHM_FEATURES, "rr_af": AF_FEATURES, "rr_af_lock": LOCK_FEATURES,
             "rr_af_lock_sinus": {**LOCK_FEATURES, **SINUS_FEATURES}}.get(name, {})
    return {**CONTEXT_FEATURES, **extra}


def gate_feature(context: str | None) -> str | None:
    """The feature the rhythm gate reads for this context; None where it has none (no gate is offered)."""
    return GATE_FEATURES.get(check_context(context))


def feature_site(context: str | None, feature: str, base: int) -> tuple[int, int] | None:
    """Where a feature's token sits before each window (its position) and its first token id (`base` is the
    shard vocabulary, as in context_tokens); None when the context has no such feature."""
    names = list(features_of(context))
    return (names.index(feature), base + names.index(feature) * RR_BINS) if feature in names else None


def bin_floor(context: str | None, feature: str, index: int) -> float:
    """The least value bin `index` of a feature holds: what a threshold at that bin means in the feature's units."""
    low, high = features_of(context)[feature]
    return low * (high / low) ** (index / RR_BINS)


def check_context(context: str | None) -> str:
    """The context name, or ValueError naming the choices."""
    name = context or "none"
    if name not in CONTEXTS:
        raise ValueError(f"context: unknown context {context!r} (expected one of: {', '.join(CONTEXTS)})")
    return name


def context_length(context: str | None) -> int:
    """Tokens put before each window."""
    return len(features_of(context))


def extra_vocab(context: str | None) -> int:
    """Token ids the context adds above the shard vocabulary."""
    return len(features_of(context)) * RR_BINS


def rr_features(rr_ms: np.ndarray, context: str = "rr", lock: np.ndarray | None = None) -> np.ndarray:
    """[beats, features of the context] from the intervals between consecutive beats (len = beats - 1), in ms,
    and for `rr_af_lock` each beat's atrial lock (trainer.data.atrial_lock; ValueError without it).

    The first beat has no previous interval and the last no next one: both take the local average,
    i.e. "not premature", rather than a made-up value. NaN intervals (unknown) do the same.
    """
    n = len(rr_ms) + 1
    name = check_context(context)
    if name in WAVEFORM_CONTEXTS and (lock is None or len(lock) != n):
        raise ValueError(f"context {name!r}: needs each beat's atrial lock ({n} beats; "
                         f"{'none given' if lock is None else f'{len(lock)} given'})")
    rr = np.asarray(rr_ms, dtype=np.float64)
    if len(rr) == 0 or not np.isfinite(rr).any():
        return np.full((n, context_length(context)), np.nan)
    valid = np.isfinite(rr) & (rr > 0)
    overall = float(np.mean(rr[valid]))
    local = _centred_mean(rr, valid, LOCAL_BEATS, overall)
    long = _centred_mean(rr, valid, LONG_BEATS, overall)
    pre = np.full(n, np.nan)
    post = np.full(n, np.nan)
    pre[1:] = np.where(valid, rr, np.nan)
    post[:-1] = np.where(valid, rr, np.nan)
    pre = np.where(np.isfinite(pre), pre, local)
    post = np.where(np.isfinite(post), post, local)
    columns = [pre, post, local, pre / local, post / local, pre / long, post / long, local / long]
    if name == "rr_rhythm":
        columns.append(irregularity(rr, valid))
    elif AF_FEATURE in features_of(name):
        columns.append(np.fmin.reduce([irregularity(rr, valid, lag) for lag in AF_LAGS]))
    if EVIDENCE_FEATURE in features_of(name) and lock is not None:
        columns.append(np.nan_to_num(columns[-1]) * (1.0 - np.clip(lock, 0.0, 1.0)) ** 2)
    if SINUS_FEATURE in features_of(name):
        columns.append(pre / _centred_quantile(rr, valid, LONG_BEATS, SINUS_QUANTILE, overall))
    return np.stack(columns, axis=1)


def _centred_quantile(rr: np.ndarray, valid: np.ndarray, beats: int, q: float, fallback: float) -> np.ndarray:
    """The q quantile of the valid intervals among the `beats` centred on each beat (as _centred_mean's)."""
    n, half = len(rr) + 1, beats // 2
    padded = np.concatenate([np.full(half, np.nan), np.where(valid, rr, np.nan), np.full(half, np.nan)])
    windows = np.lib.stride_tricks.sliding_window_view(padded, 2 * half)[:n]  # beat i: intervals i-half .. i+half-1
    out = np.full(n, fallback)
    known = np.isfinite(windows).any(axis=1)
    out[known] = np.nanquantile(windows[known], q, axis=1)
    return out


def irregularity(rr: np.ndarray, valid: np.ndarray, lag: int = 1) -> np.ndarray:
    """Per beat, the median of |RR_i - RR_(i-lag)| / RR_(i-lag) over the RHYTHM_BEATS differences centred on it
    (NaN where none is known: the token then takes its range's middle)."""
    n = len(rr) + 1
    both = valid[lag:] & valid[:-lag]
    step = np.where(both, np.abs(rr[lag:] - rr[:-lag]) / np.where(valid[:-lag], rr[:-lag], 1.0), np.nan)
    step = np.concatenate([np.full(lag - 1, np.nan), step])  # difference i still ends at interval i + 1
    half = RHYTHM_BEATS // 2
    # difference i spans beats i .. i+2 (centred on beat i+1): beat b's window holds differences b-1-half ..
    # b+half-2, its RHYTHM_BEATS centred on b
    padded = np.concatenate([np.full(half + 1, np.nan), step, np.full(half, np.nan)])
    windows = np.lib.stride_tricks.sliding_window_view(padded, RHYTHM_BEATS)[:n]
    out = np.full(n, np.nan)
    known = np.isfinite(windows).any(axis=1)
    out[known] = np.nanmedian(windows[known], axis=1)
    return out


def _centred_mean(rr: np.ndarray, valid: np.ndarray, beats: int, fallback: float) -> np.ndarray:
    """Mean of the valid intervals among the `beats` centred on each beat (a cumulative sum, no loop)."""
    c_val = np.concatenate([[0.0], np.cumsum(np.where(valid, rr, 0.0))])
    c_cnt = np.concatenate([[0], np.cumsum(valid)])
    centre = np.arange(len(rr) + 1)  # interval i-1 is before beat i, interval i after it
    lo = np.clip(centre - beats // 2, 0, len(rr))
    hi = np.clip(centre + beats // 2, 0, len(rr))
    cnt = c_cnt[hi] - c_cnt[lo]
    return np.where(cnt > 0, (c_val[hi] - c_val[lo]) / np.maximum(cnt, 1), fallback)


def context_tokens(features: np.ndarray, base: int, context: str = "rr") -> np.ndarray:
    """Token ids [beats, features] (uint16) of the binned features; feature k uses ids base + k*RR_BINS..."""
    out = np.empty(features.shape, dtype=np.int64)
    for k, (low, high) in enumerate(features_of(context).values()):
        x = np.nan_to_num(features[:, k], nan=math.sqrt(low * high))
        pos = (np.log(np.clip(x, low, high)) - math.log(low)) / (math.log(high) - math.log(low))
        out[:, k] = base + k * RR_BINS + np.minimum((pos * RR_BINS).astype(np.int64), RR_BINS - 1)
    return out.astype(np.uint16)


def beats_token_rr_ms(tokens: np.ndarray, params: dict) -> np.ndarray:
    """RR interval (ms) before each beat of a `beats` token stream, from its RR bin (NaN: first beat).

    The beats tokenizer keeps only the bin (log-spaced between rr_min_ms and rr_max_ms); its geometric
    centre stands for the interval.
    """
    from trainer.data.tokenizers import N_SPECIAL

    nb = int(params["rr_bins"])
    rr_bin = (tokens.astype(np.int64) - N_SPECIAL) % nb
    lo, hi = math.log(params["rr_min_ms"]), math.log(params["rr_max_ms"])
    ms = np.exp(lo + (rr_bin - 1 + 0.5) / (nb - 1) * (hi - lo))
    return np.where(rr_bin > 0, ms, np.nan)
