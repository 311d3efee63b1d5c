"""The largest model (layers x d_model) that fits one GPU, per strategy and worker count, at a study's batch
and window: how much larger an HLM sharding allows before a GPU's memory runs out.

Per rank, a model of Ψ parameters holds its model states as cockpit.forecast.rank_memory.model_states shards them
(fp32 parameters 4Ψ, gradients 4Ψ, AdamW's two moments 8Ψ: `BYTES_PER_PARAM`, the ZeRO paper's 16Ψ), what
the strategy gathers for a while, and the activations of its batch (`activation_bytes`). A model *fits* when
that sum is at most the GPU's memory (the site profile's gpu_memory_gb, as the plan's memory flag judges a
configuration). The candidates are `LADDER`'s shapes, heads of `HEAD_DIM`. docs/strategies.md works it
through.
"""

from __future__ import annotations

from dataclasses import dataclass

from cockpit.forecast.rank_memory import model_states
from cockpit.study.sites import SiteError, builtin_sites, load_site
from cockpit.workloads.hlm.model_size import parameters

BYTES_PER_PARAM = {"params": 4, "grads": 4, "optimizer": 8}  # fp32 weights and gradients, AdamW's 2 fp32 moments
HEAD_DIM = 64  # d_model / heads of the ladder's shapes
# (layers, d_model): the study's scale upwards, then GPT-3's shapes (Brown et al., 2020, table 2.1)
LADDER: tuple[tuple[int, int], ...] = (
    (2, 64), (4, 128), (4, 256), (6, 384), (8, 512), (12, 768), (24, 1024), (24, 1536), (24, 2048),
    (32, 2560), (32, 4096), (40, 5120), (48, 6144), (64, 8192), (96, 12288))
REFERENCE_SITE = "meluxina"  # a study whose site has no gpu_memory_gb is judged on MeluXina's A100-40GB
ACTIVATION_FACTORS = (34, 5)  # Korthikanti et al. 2022: a layer keeps s b h (34 + 5 a s / h) bytes at 16 bits


def activation_bytes(batch: int, window: int, layers: int, d_model: int, heads: int, vocab: int,
                     element_bytes: int) -> float:
    """Bytes of activations one rank keeps for backward: per layer s b h (34 + 5 a s / h) at 16 bits
    (Korthikanti et al., 2022, no recomputation), scaled to `element_bytes` (4 in fp32, 2 in bf16), plus the
    output's logits and their gradient in fp32 (2 x 4 b s V)."""
    s, b, h, a = window, batch, d_model, heads
    per_layer = s * b * h * (ACTIVATION_FACTORS[0] + ACTIVATION_FACTORS[1] * a * s / h) * element_bytes / 2
    return layers * per_layer + 2 * 4 * b * s * vocab


@dataclass(frozen=True)
class Fit:
    """The largest LADDER shape that fits (None: not even the smallest) and the next one, which does not."""

    strategy: str
    workers: int
    batch: int
    window: int
    element_bytes: int
    gpu_bytes: float
    shape: tuple[int, int] | None
    memory: dict[str, float] | None  # shape's bytes per rank (memory_of)
    next_shape: tuple[int, int] | None
    next_memory: dict[str, float] | None

    @property
    def bytes_per_param(self) -> float:
        """Model states per parameter per rank (16 unsharded; 4 + 4 + 8/N for zero1; 16/N for fsdp)."""
        b = BYTES_PER_PARAM
        m = model_states(b["params"], b["grads"], b["optimizer"], self.workers, self.strategy, 1)
        return m["model_states_bytes"]


def memory_of(layers: int, d_model: int, *, batch: int, window: int, vocab: int, classes: int, workers: int,
              strategy: str, element_bytes: int) -> dict[str, float]:
    """Bytes per rank of a model of that shape: model_states's figures, `activations_bytes`, and
    `peak_bytes` = model states + gathered + activations."""
    n = parameters(layers, d_model, vocab, window, classes)
    b = BYTES_PER_PARAM
    out = model_states(b["params"] * n, b["grads"] * n, b["optimizer"] * n, workers, strategy, layers)
    out["parameters"] = float(n)
    out["activations_bytes"] = activation_bytes(batch, window, layers, d_model, max(1, d_model // HEAD_DIM),
                                                vocab, element_bytes)
    out["peak_bytes"] = out["model_states_bytes"] + out["gathered_bytes"] + out["activations_bytes"]
    return out


def largest_fitting(gpu_bytes: float, strategy: str, workers: int, *, batch: int, window: int, vocab: int,
                    classes: int = 0, element_bytes: int = 4) -> Fit:
    """The largest LADDER shape whose peak per rank (memory_of) is at most `gpu_bytes`, and the next one."""
    fits, over = None, None
    for layers, d in LADDER:
        mem = memory_of(layers, d, batch=batch, window=window, vocab=vocab, classes=classes, workers=workers,
                        strategy=strategy, element_bytes=element_bytes)
        if mem["peak_bytes"] > gpu_bytes:
            over = ((layers, d), mem)
            break
        fits = ((layers, d), mem)
    return Fit(strategy, workers, batch, window, element_bytes, gpu_bytes, fits[0] if fits else None,
               fits[1] if fits else None, over[0] if over else None, over[1] if over else None)


def reference_gpu(site: str) -> tuple[float, str]:
    """One GPU's memory in bytes and where the figure comes from: the built-in site profile named `site`
    where it has gpu_memory_gb, else REFERENCE_SITE's (a local study has no GPU of its own to judge)."""
    for name in (site, REFERENCE_SITE):
        try:
            gb = load_site(name).gpu_memory_gb if name in builtin_sites() else 0.0
        except SiteError:
            gb = 0.0
        if gb > 0:
            note = "" if name == site else f" (the study's site {site!r} has none)"
            return gb * 1e9, f"{name} profile gpu_memory_gb = {gb:g}{note}"
    return 0.0, "no site profile with gpu_memory_gb"
