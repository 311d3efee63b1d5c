"""Advice for a host-bound run (cockpit.figures.host_bound): a larger batch per GPU priced from what the run
measured, `train.compile` and a fused optimizer, each with a predicted gain or "not predicted" and why.

The batch model (docs/prediction.md, "Host-bound advice"): a host-bound step takes what the host takes to issue
it, h = T / steps, while the GPU works u x T / steps of it (u: the GPU busy share of the verdict). The host's
launches do not grow with the batch, the GPU's work does, so with f times the batch per GPU and steps / f (the
same samples):

    T' = steps / f x max(h, f x u x T / steps) = T x max(1 / f, u)        MFU' = MFU x T / T'

f is the least power of two that keeps the GPU busy (f x u >= 1), at most MAX_FACTOR, and only while the
peak memory fits the GPU: the strategy's memory per rank (cockpit.forecast.prediction.memory_per_rank) plus the
run's activations (its peak less its model states) times f.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from cockpit.forecast import prediction
from cockpit.forecast.advice.effects import study_key
from cockpit.forecast.advice.options import gain_unclear, t90_words
from cockpit.forecast.term_doubt import batch_sd

MAX_FACTOR = 16


@dataclass(frozen=True)
class HostAdvice:
    """One change for a host-bound run: the keys, and T and MFU before and after (NaN: not predicted, `reason`)."""

    keys: tuple[tuple[str, Any], ...]
    loss_s: float  # the run's host-bound seconds
    t_s: float
    mfu: float
    predicted_t_s: float = math.nan
    predicted_mfu: float = math.nan
    memory: str = ""  # the peak memory at the new setting against the GPU's
    reason: str = ""
    words: str = ""  # a change that is no key (the optimizer's implementation)
    unadvised: bool = False  # priced, but no faster or within the noise: `reason` says so (gain_unclear)
    factor: int = 1  # the batch per GPU over the run's
    t90: tuple[float, float] | None = None  # the predicted T's 90% interval

    @property
    def gain_s(self) -> float:
        return self.t_s - self.predicted_t_s

    def term_sd(self) -> dict[str, float]:
        """The batch model is the one modelled term: the predicted T at `factor` times the batch, as compute at a
        batch size not run (cockpit.forecast.term_doubt.batch_sd)."""
        if self.predicted_t_s != self.predicted_t_s or self.factor <= 1:
            return {}
        return {"batch": batch_sd(self.factor, self.predicted_t_s)}

    @property
    def setting(self) -> str:
        return " and ".join(study_key(k, v) for k, v in self.keys) if self.keys else self.words

    def text(self, head: bool = True) -> str:
        """`host-bound 3.85 s: set batch_size = 512 and [train] steps = 25 → predicted T 5.86 s → 1.43 s, MFU
        4.0% → 16.6% (peak 12.6 GiB of 140 GiB: fits)` or `...: try X: not predicted (why)`."""
        lead = f"host-bound {self.loss_s:.2f} s: " if head else ""
        if self.predicted_t_s != self.predicted_t_s:
            return f"{lead}try {self.setting}: {self.reason if self.unadvised else f'not predicted ({self.reason})'}"
        mfu = (f", MFU {self.mfu:.1%} → {self.predicted_mfu:.1%}" if self.mfu == self.mfu else "")
        return (f"{lead}set {self.setting} → predicted T {self.t_s:.2f} s → {self.predicted_t_s:.2f} s"
                f"{t90_words(self.t90)}{mfu}"
                + (f" ({self.memory})" if self.memory else ""))


def _peak_at(result: dict[str, Any], factor: int) -> float | None:
    """Peak bytes per rank with `factor` times the batch: the strategy's memory per rank plus the activations x f."""
    mem = result.get("memory") or {}
    per_rank = prediction.memory_per_rank(result, int(result.get("world_size") or 1),
                                          str((result.get("config") or {}).get("strategy") or "ddp"))
    if per_rank is None or not isinstance(mem.get("model_states_bytes"), int | float):
        return None
    activations = float(mem["peak_bytes"]) - float(mem["model_states_bytes"])
    return per_rank["peak_bytes"] + activations * (factor - 1)


def batch_advice(rec: dict[str, Any]) -> HostAdvice:
    """The larger batch per GPU, priced from the run (an analysis row with its host-bound verdict)."""
    result = rec["result"]
    cfg = result.get("config") or {}
    t, u, mfu, loss = rec["train_time_s"], rec["host_bound_share"], rec.get("mfu", math.nan), rec["host_bound_s"]
    batch = int(cfg.get("batch_size") or rec.get("batch_size") or 1)
    steps = (cfg.get("train") or {}).get("steps")
    gpu = (result.get("gpu_use") or {}).get("memory_bytes")
    factor = 2
    while factor < MAX_FACTOR and factor * u < 1.0:
        factor *= 2
    memory = ""
    while factor > 1:
        peak = _peak_at(result, factor)
        if peak is None or not isinstance(gpu, int | float):
            memory = "memory not judged: " + ("result.json has no memory figures" if peak is None
                                              else "the GPU's memory is not recorded")
            break
        if peak <= gpu:
            memory = f"peak {peak / 2**30:.1f} GiB of {gpu / 2**30:.0f} GiB per GPU: fits"
            break
        factor //= 2
    keys: tuple[tuple[str, Any], ...] = (("batch_size", batch * max(factor, 2)),)
    if isinstance(steps, int) and steps > 1:
        keys += (("train.steps", max(1, round(steps / max(factor, 2)))),)
    if factor < 2:
        return HostAdvice(keys, loss, t, mfu, reason="twice the batch per GPU does not fit the GPU's memory")
    predicted = t * max(1.0 / factor, u)
    unclear = gain_unclear(t, predicted, None)
    if unclear:
        return HostAdvice(keys, loss, t, mfu, reason=unclear, unadvised=True)
    return HostAdvice(keys, loss, t, mfu, predicted, mfu * t / predicted if mfu == mfu else math.nan, memory,
                      factor=factor)


def advise_host_bound(rec: dict[str, Any]) -> list[HostAdvice]:
    """The changes for a host-bound run, the priced one first; [] for a run not named host-bound."""
    if not (rec.get("host_bound_s", 0.0) or 0.0) > 0 or not isinstance(rec.get("result"), dict):
        return []
    result = rec["result"]
    t, mfu, loss = rec["train_time_s"], rec.get("mfu", math.nan), rec["host_bound_s"]
    optimizer = result.get("optimizer") or {}
    out = [batch_advice(rec)]
    if optimizer.get("compile"):
        out.append(HostAdvice((), loss, t, mfu, words="train.compile (on already)",
                              reason="the run was compiled already; CUDA graphs (torch.compile's "
                                     "reduce-overhead mode) are not a study key"))
    else:
        out.append(HostAdvice((("train.compile", True),), loss, t, mfu,
                              reason="the launches it saves and its compile time are measured, not modelled: a run "
                                     "with it measures both; CUDA graphs, torch.compile's reduce-overhead mode, are "
                                     "not a study key"))
    impl = optimizer.get("impl")
    out.append(HostAdvice((), loss, t, mfu, words="a fused optimizer",
                          reason="the optimizer is the fused AdamW already, result.json optimizer.impl" if impl == "fused"
                          else f"the trainer takes the fused AdamW where this torch has one; this run used {impl or 'an unrecorded kind'}"))
    return sorted(out, key=lambda a: (a.predicted_t_s != a.predicted_t_s, a.predicted_t_s))
