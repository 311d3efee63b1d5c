"""Memory per rank: parameters, gradients and optimizer state as each strategy shards them, and the peak of a
measured baseline's run with its model states replaced by those (docs/strategies.md). cockpit.forecast.prediction
puts it beside each predicted T; cockpit.forecast.gpu_fit finds the largest model that fits one GPU with it."""

from __future__ import annotations

from typing import Any

from runcontract.axes import STRATEGY_SHARDS

MEMORY_PARTS = ("params_bytes", "grads_bytes", "optimizer_bytes")


def model_states(params: float, grads: float, optimizer: float, workers: int, strategy: str,
                 layers: int) -> dict[str, float]:
    """Bytes per rank of parameters, gradients and optimizer state, each divided by N where the strategy shards
    it (the ZeRO paper's accounting), their sum `model_states_bytes`, and `gathered_bytes`: what the strategy
    holds whole for a while besides (fsdp: one block's parameters of `layers` + 1 groups; fsdp_noreshard: all
    of them, from forward to backward). The one formula of memory per rank: the prediction of a measured
    baseline's (memory_per_rank) and the largest model that fits one GPU (largest_fitting) both use it."""
    shards = STRATEGY_SHARDS.get(strategy, ()) if workers > 1 else ()
    held = {"params_bytes": params, "grads_bytes": grads, "optimizer_bytes": optimizer}
    out = {k: v / (workers if k.removesuffix("_bytes") in shards else 1) for k, v in held.items()}
    out["model_states_bytes"] = sum(out.values())
    gathered = 0.0
    if workers > 1 and strategy == "fsdp":
        gathered = params / (layers + 1)
    elif workers > 1 and strategy == "fsdp_noreshard":
        gathered = params * (workers - 1) / workers
    out["gathered_bytes"] = gathered
    return out


def memory_per_rank(base: dict[str, Any], workers: int, strategy: str = "ddp") -> dict[str, float] | None:
    """Bytes per rank of parameters, gradients and optimizer state (the baseline's, as `model_states`
    shards them) and the peak: the baseline's peak with its model states replaced by these, plus what the
    strategy gathers for a while. None when the baseline's result.json has no memory figures."""
    mem = base.get("memory") or {}
    if not all(isinstance(mem.get(k), int | float) for k in (*MEMORY_PARTS, "peak_bytes")):
        return None
    out = model_states(float(mem["params_bytes"]), float(mem["grads_bytes"]), float(mem["optimizer_bytes"]),
                       workers, strategy, int((base.get("model") or {}).get("layers") or 1))
    held = sum(float(mem[k]) for k in MEMORY_PARTS)
    out["peak_bytes"] = float(mem["peak_bytes"]) - held + out["model_states_bytes"] + out["gathered_bytes"]
    return out
