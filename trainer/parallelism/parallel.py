"""Data parallelism, one code path per `strategy` (torchtitan's "parallelisms"; docs/strategies.md).

- `ddp`: DistributedDataParallel, a full replica per worker; gradients all-reduced per bucket through the
  timed comm hook (timing.CommMeter).
- `zero1`: DDP for the gradients plus torch's ZeroRedundancyOptimizer: each worker keeps and updates the
  optimizer state of its share of the parameters, then broadcasts its updated share (ZeRO stage 1).
- `fsdp`: FSDP2 `fully_shard` per transformer block and at the root, `reshard_after_forward=True`:
  parameters, gradients and optimizer state sharded; parameters all-gathered before forward and again before
  backward, gradients reduce-scattered (ZeRO stage 3).
- `fsdp_noreshard`: the same with `reshard_after_forward=False`: the gathered parameters stay from forward to
  backward (one all-gather per step instead of two, full parameters held meanwhile; ZeRO-2-like).

With one process there is no process group and every strategy is the plain model with AdamW. Every collective a
strategy issues itself is timed per kind by the CommMeter (all_gather, reduce_scatter, broadcast), as DDP's
all-reduce buckets are. Memory held per rank is counted from the tensors (`held_bytes`), a sharded DTensor by
its local shard and ZeroRedundancyOptimizer by its local optimizer's state.
"""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_state_dict,
    set_state_dict,
)
from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard
from torch.distributed.fsdp._fully_shard._fsdp_collectives import DefaultAllGather, DefaultReduceScatter
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.distributed.tensor import DTensor
from torch.nn.parallel import DistributedDataParallel as DDP

from runcontract.axes import STRATEGY_SHARDS
from trainer.measure.timing import CommMeter, comm_hook
from trainer.model import HeartLanguageModel
from trainer.parallelism.distributed import Dist
from trainer.settings import ConfigError, Settings

FSDP_STRATEGIES = ("fsdp", "fsdp_noreshard")


@dataclass
class Parallel:
    """A rank's model and optimizer as its strategy wraps them."""

    strategy: str  # as configured
    applied: str  # what runs: the strategy, or "none" with one process
    model: nn.Module  # what the step calls
    root: nn.Module  # the model itself (under FSDP its root FSDPModule, even when `model` is compiled)
    optimizer: torch.optim.Optimizer
    opt_kind: str  # "fused" or "foreach"
    mixed_precision: str | None  # FSDP's parameter/reduction dtype on GPU ("bf16"), else None

    def accumulate(self, last_micro: bool) -> AbstractContextManager[Any]:
        """Around one micro-batch: gradients are synchronised only on the step's last one."""
        if isinstance(self.model, DDP) and not last_micro:
            return self.model.no_sync()
        if isinstance(self.root, FSDPModule):
            self.root.set_requires_gradient_sync(last_micro)
        return contextlib.nullcontext()

    @property
    def sharded(self) -> tuple[str, ...]:
        return STRATEGY_SHARDS.get(self.applied, ())


class _TimedAllGather(DefaultAllGather):
    """FSDP's all-gather, timed into the CommMeter (on CPU gloo runs it synchronously: all of it is exposed)."""

    def __init__(self, meter: CommMeter) -> None:
        super().__init__()
        self.meter = meter

    def __call__(self, output_tensor: torch.Tensor, input_tensor: torch.Tensor, group: dist.ProcessGroup,
                 async_op: bool = False) -> dist.Work | None:
        with self.meter.timed("all_gather", output_tensor.numel() * output_tensor.element_size()):
            return super().__call__(output_tensor, input_tensor, group, async_op)


class _TimedReduceScatter(DefaultReduceScatter):
    """FSDP's reduce-scatter of the gradients, timed into the CommMeter."""

    def __init__(self, meter: CommMeter) -> None:
        super().__init__()
        self.meter = meter

    def __call__(self, output_tensor: torch.Tensor, input_tensor: torch.Tensor, group: dist.ProcessGroup,
                 op: Any, async_op: bool = False) -> dist.Work:
        with self.meter.timed("reduce_scatter", input_tensor.numel() * input_tensor.element_size()):
            return super().__call__(output_tensor, input_tensor, group, op, async_op)


class _TimedZero(ZeroRedundancyOptimizer):
    """ZeroRedundancyOptimizer whose broadcast of the updated shards (after the local step) is timed."""

    meter: CommMeter

    def _sync_params(self) -> None:  # torch's stub for the class leaves its private methods out
        nbytes = sum(p.numel() * p.element_size() for group in self.param_groups for p in group["params"])
        with self.meter.timed("broadcast", nbytes):
            super()._sync_params()  # type: ignore[misc]


def parallelize(raw: HeartLanguageModel, s: Settings, d: Dist, meter: CommMeter) -> Parallel:
    """Wrap the model and build the optimizer the configured strategy's way (the model is on its device)."""
    strategy = s.axes.strategy
    applied = strategy if d.enabled else "none"
    mixed: str | None = None
    model: nn.Module = raw
    if applied in FSDP_STRATEGIES:
        if s.train.val_fraction > 0 or s.train.val_records:
            raise ConfigError(f"train.val_fraction / val_records: validation during training is not available with "
                              f"strategy {strategy} on several workers; use ddp or zero1, or no validation part")
        policy = MixedPrecisionPolicy()
        if d.device.type == "cuda" and s.axes.precision == "bf16":
            policy, mixed = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16), "bf16"
        reshard = applied == "fsdp"
        for block in raw.blocks:
            fully_shard(block, reshard_after_forward=reshard, mp_policy=policy)
        fully_shard(raw, reshard_after_forward=reshard, mp_policy=policy)
        for module in raw.modules():
            if isinstance(module, FSDPModule):
                module.set_custom_all_gather(_TimedAllGather(meter))
                module.set_custom_reduce_scatter(_TimedReduceScatter(meter))
    if s.train.compile:
        # torch.compile is annotated as returning a plain callable; given a Module it returns an OptimizedModule
        model = torch.compile(raw)  # type: ignore[assignment]
    if applied in ("ddp", "zero1"):
        ddp = DDP(model, device_ids=[d.device.index] if d.device.type == "cuda" else None,
                  gradient_as_bucket_view=True, bucket_cap_mb=s.train.bucket_cap_mb or None)
        ddp.register_comm_hook(meter, comm_hook)
        model = ddp
    optimizer, opt_kind = _optimizer(raw, s, meter if applied == "zero1" else None)
    return Parallel(strategy, applied, model, raw, optimizer, opt_kind, mixed)


def _optimizer(model: nn.Module, s: Settings, zero: CommMeter | None) -> tuple[torch.optim.Optimizer, str]:
    """AdamW with weight decay on matrices only, the fused kernel where this torch has one; with `zero` the
    ZeroRedundancyOptimizer around it (its broadcast timed by that meter)."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups: list[dict[str, Any]] = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": s.train.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    last: Exception | None = None
    for kind in ("fused", "foreach"):
        impl = {kind: True}
        try:
            if zero is None:
                return torch.optim.AdamW(groups, lr=s.train.lr, betas=(0.9, 0.95), **impl), kind
            optimizer = _TimedZero(groups, optimizer_class=torch.optim.AdamW, lr=s.train.lr, betas=(0.9, 0.95),
                                   **impl)
            optimizer.meter = zero
            return optimizer, kind
        except (RuntimeError, TypeError, ValueError) as exc:
            last = exc
    raise RuntimeError(f"AdamW could not be built: {last}")


def _local_bytes(tensor: torch.Tensor) -> int:
    local = tensor.to_local() if isinstance(tensor, DTensor) else tensor
    return int(local.numel() * local.element_size())


def held_bytes(raw: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, int]:
    """Bytes of parameters, gradients and optimizer state this rank holds, counted from the tensors: a
    sharded (DTensor) parameter, gradient or state by its local shard, ZeroRedundancyOptimizer by its local
    optimizer (the state of this rank's share). Call it with the gradients still present."""
    params = list(raw.parameters())
    local_opt = optimizer.optim if isinstance(optimizer, ZeroRedundancyOptimizer) else optimizer
    state = [v for per_param in local_opt.state.values() for v in per_param.values() if isinstance(v, torch.Tensor)]
    out = {"params_bytes": sum(_local_bytes(p) for p in params),
           "grads_bytes": sum(_local_bytes(p.grad) for p in params if p.grad is not None),
           "optimizer_bytes": sum(_local_bytes(v) for v in state)}
    out["model_states_bytes"] = sum(out.values())
    return out


def total_norm(norm: torch.Tensor) -> torch.Tensor:
    """clip_grad_norm_'s result as a plain tensor (over sharded gradients it is a DTensor)."""
    return norm.full_tensor() if isinstance(norm, DTensor) else norm


def shards_state(raw: nn.Module) -> bool:
    """Whether the model and optimizer state live in shards (FSDP): saved shard by shard, never gathered."""
    return isinstance(raw, FSDPModule)


def save_shards(raw: nn.Module, optimizer: torch.optim.Optimizer, directory: Path) -> None:
    """Every rank writes its own shards of the model and optimizer state with torch.distributed.checkpoint
    (one .distcp file per rank and a .metadata): nothing is gathered, so no rank needs the whole state in
    memory. Every rank must call it."""
    model_state, optim_state = get_state_dict(raw, optimizer)
    dcp.save({"model": model_state, "optimizer": optim_state}, checkpoint_id=directory)


def load_shards(raw: nn.Module, optimizer: torch.optim.Optimizer, directory: Path) -> None:
    """Read what `save_shards` wrote back into each rank's own shards (the same layout). Every rank calls it."""
    model_state, optim_state = get_state_dict(raw, optimizer)
    dcp.load({"model": model_state, "optimizer": optim_state}, checkpoint_id=directory)  # in place
    set_state_dict(raw, optimizer, model_state_dict=model_state, optim_state_dict=optim_state)


def checkpoint_state(raw: nn.Module, optimizer: torch.optim.Optimizer,
                     d: Dist) -> tuple[dict[str, Any], dict[str, Any]]:
    """Model and optimizer state for checkpoint.pt where it is not sharded (`shards_state`): whole on rank 0.
    ZeroRedundancyOptimizer's state is consolidated on rank 0 (torch saves it no other way); every rank must
    call it."""
    if isinstance(optimizer, ZeroRedundancyOptimizer):
        optimizer.consolidate_state_dict(to=0)
        return raw.state_dict(), optimizer.state_dict() if d.is_main else {}
    return raw.state_dict(), optimizer.state_dict()


def load_checkpoint_state(raw: nn.Module, optimizer: torch.optim.Optimizer, model_state: dict[str, Any],
                          optim_state: dict[str, Any]) -> None:
    """Load what `checkpoint_state` saved (every rank read checkpoint.pt): each keeps its own share."""
    raw.load_state_dict(model_state)
    optimizer.load_state_dict(optim_state)


def full_weights(raw: nn.Module) -> dict[str, Any]:
    """The whole model's weights on every rank (gathered from the shards under FSDP: every rank calls it)."""
    if isinstance(raw, FSDPModule):
        return get_model_state_dict(raw, options=StateDictOptions(full_state_dict=True))
    return raw.state_dict()


def plain_model(raw: HeartLanguageModel) -> HeartLanguageModel:
    """The model for evaluation, unsharded: `raw` itself, or under FSDP an unwrapped copy holding the full
    weights (each rank scores its own windows, which sharded forwards cannot: they are collectives)."""
    if not isinstance(raw, FSDPModule):
        return raw
    weights = full_weights(raw)
    device = next(iter(weights.values())).device
    with torch.random.fork_rng(devices=[]), torch.device("meta"):
        copy = HeartLanguageModel(raw.cfg)
    copy.load_state_dict(weights, assign=True)
    copy.class_weight = raw.class_weight
    return copy.to(device)

