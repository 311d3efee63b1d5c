"""The words of a prediction (cockpit.forecast.prediction computes it): the memory per rank and its warning
where one GPU's memory is exceeded, and a group's recommendation line (speedup for how many times the
baseline's GPU-hours, the fastest). The plan, its table and the what-if print them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cockpit.figures import labels
from cockpit.forecast import straggler

if TYPE_CHECKING:
    from cockpit.forecast.prediction import Prediction


def memory_flag(memory: dict[str, float] | None, device: str, gpu_bytes: float) -> str:
    """A warning when a GPU study's predicted peak per rank (memory_per_rank) exceeds one GPU's memory
    (`gpu_bytes`, the site profile's gpu_memory_gb), else "" (always for a CPU study, `device` "cpu": its
    peak is the process's resident memory)."""
    if not memory or gpu_bytes <= 0 or device == "cpu" or memory["peak_bytes"] <= gpu_bytes:
        return ""
    return (f"predicted peak memory {memory['peak_bytes'] / 1e9:.1f} GB per GPU exceeds the GPU's "
            f"{gpu_bytes / 1e9:g} GB: shard more (strategy zero1, fsdp) or lower batch_size")


def memory_words(memory: dict[str, float]) -> str:
    """`model states 1.2 MiB (params 0.3, grads 0.3, optimizer 0.6), peak 350 MiB` per rank."""
    def mb(v: float) -> str:
        return f"{v / 2**20:.3g}"

    return (f"model states {mb(memory['model_states_bytes'])} MiB (params {mb(memory['params_bytes'])}, grads "
            f"{mb(memory['grads_bytes'])}, optimizer {mb(memory['optimizer_bytes'])}), peak {mb(memory['peak_bytes'])} MiB")


def recommendation(base_t: float, predictions: list[Prediction], device: str = "gpu", measured: bool = False) -> str:
    """One line per worker count: speedup for how many times the baseline's GPU-hours (worker-hours for a
    CPU study, cockpit.figures.labels), and the fastest; `measured`: every figure is a finished run's."""
    ok = sorted((p for p in predictions if p.workers > 1 and p.speedup == p.speedup), key=lambda p: p.workers)
    if not ok:
        return ""
    hours = f"{labels.worker_word(device, 1)}-hours"
    pieces = [f"{p.workers} workers ({p.nodes} node{'s' if p.nodes > 1 else ''}): {p.speedup:.2f}x for "
              f"{p.workers / p.speedup:.2f}x the {hours}" for p in ok]
    best = min(ok, key=lambda p: p.t_same_work_s)
    if best.t_same_work_s >= base_t:
        return "; ".join(pieces) + (" - no configuration ran faster than the baseline" if measured
                                    else " - no configuration is predicted faster than the baseline")
    return "; ".join(pieces) + f" - best time-to-result: {best.workers} workers"


def moved_term(first: Prediction | None, refit: Prediction | None) -> str:
    """The part of T that moved most between a configuration's first prediction and its refit one, with the
    seconds and the link each rests on where that changed: `comm +0.21 s (link: probe of run 1x2)`; "" where
    either is missing or nothing moved by 5 ms."""
    if first is None or refit is None:
        return ""
    parts = set(first.parts) | set(refit.parts)
    deltas = {k: refit.parts.get(k, 0.0) - first.parts.get(k, 0.0) for k in parts}
    if not deltas:
        return ""
    term, delta = max(deltas.items(), key=lambda kv: abs(kv[1]))
    if abs(delta) < 0.005:
        return ""
    link = f" (link: {first.link or 'none'} -> {refit.link or 'none'})" if first.link != refit.link else ""
    return f"{term} {delta:+.2f} s{comm_term(first, refit) if term == 'comm' else ''}{link}"


def comm_term(first: Prediction, refit: Prediction) -> str:
    """Which of the comm part's terms (each collective kind, the wait for the slower rank) moved most, in words:
    ` (wait for the slower rank +0.28 s)`; "" where neither prediction splits its comm."""
    kinds = set(first.comm_by_kind) | set(refit.comm_by_kind)
    deltas = {k: refit.comm_by_kind.get(k, 0.0) - first.comm_by_kind.get(k, 0.0) for k in kinds}
    if not deltas:
        return ""
    kind, delta = max(deltas.items(), key=lambda kv: abs(kv[1]))
    name = straggler.WORDS if kind == straggler.TERM else kind.replace("_", "-")
    return f" ({name} {delta:+.2f} s)"
