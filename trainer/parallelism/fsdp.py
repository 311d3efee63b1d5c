"""FSDP2 (`fsdp`, `fsdp_noreshard`): `fully_shard` per transformer block and at the root. Parameters,
gradients and optimizer state are sharded; parameters are all-gathered before forward (and, with `fsdp`'s
`reshard_after_forward=True`, again before backward), gradients reduce-scattered. Both collectives are timed
into the CommMeter; a checkpoint is written shard by shard with torch.distributed.checkpoint."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_state_dict,
    set_state_dict,
)
from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard
from torch.distributed.fsdp._fully_shard._fsdp_collectives import DefaultAllGather, DefaultReduceScatter
from torch.distributed.tensor import DTensor

from trainer.model import HeartLanguageModel
from trainer.parallelism.layout import Layout
from trainer.settings import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

    from torch import nn

    from trainer.measure.timing import CommMeter
    from trainer.parallelism.distributed import Dist
    from trainer.settings import Settings


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


class FSDPLayout(Layout):
    """Parameters, gradients and optimizer state in shards (DTensors); `reshard`: FSDP's
    `reshard_after_forward` (False: one all-gather per step, the full parameters held from forward to
    backward, ZeRO-2-like)."""

    shards_state = True

    def __init__(self, reshard: bool) -> None:
        self.reshard = reshard

    def wrap(self, raw: HeartLanguageModel, s: Settings, d: Dist, meter: CommMeter) -> str | None:
        if s.train.val_fraction > 0 or s.train.val_records:
            raise ConfigError(f"train.val_fraction / val_records: validation during training is not available with "
                              f"strategy {s.axes.strategy} on several workers; use ddp or zero1, or no validation part")
        policy, mixed = MixedPrecisionPolicy(), None
        if d.device.type == "cuda" and s.axes.precision == "bf16":
            policy, mixed = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16), "bf16"
        for block in raw.blocks:
            fully_shard(block, reshard_after_forward=self.reshard, mp_policy=policy)
        fully_shard(raw, reshard_after_forward=self.reshard, mp_policy=policy)
        for module in raw.modules():
            if isinstance(module, FSDPModule):
                module.set_custom_all_gather(_TimedAllGather(meter))
                module.set_custom_reduce_scatter(_TimedReduceScatter(meter))
        return mixed

    def gradient_sync(self, root: nn.Module, on: bool) -> None:
        cast(FSDPModule, root).set_requires_gradient_sync(on)

    def local_bytes(self, tensor: torch.Tensor) -> int:
        """A sharded DTensor by its local shard."""
        return super().local_bytes(tensor.to_local() if isinstance(tensor, DTensor) else tensor)

    def total_norm(self, norm: torch.Tensor) -> torch.Tensor:
        """Over sharded gradients clip_grad_norm_ returns a DTensor."""
        return norm.full_tensor() if isinstance(norm, DTensor) else norm

    def save_shards(self, raw: nn.Module, optimizer: torch.optim.Optimizer, directory: Path) -> None:
        """Every rank writes its own shards of the model and optimizer state with torch.distributed.checkpoint
        (one .distcp file per rank and a .metadata): nothing is gathered, so no rank needs the whole state in
        memory. Every rank must call it."""
        model_state, optim_state = get_state_dict(raw, optimizer)
        dcp.save({"model": model_state, "optimizer": optim_state}, checkpoint_id=directory)

    def load_shards(self, raw: nn.Module, optimizer: torch.optim.Optimizer, directory: Path) -> None:
        """Read what `save_shards` wrote back into each rank's own shards (the same layout). Every rank calls
        it."""
        model_state, optim_state = get_state_dict(raw, optimizer)
        dcp.load({"model": model_state, "optimizer": optim_state}, checkpoint_id=directory)  # in place
        set_state_dict(raw, optimizer, model_state_dict=model_state, optim_state_dict=optim_state)

    def full_weights(self, raw: nn.Module) -> dict[str, Any]:
        """Gathered from the shards: every rank calls it."""
        return get_model_state_dict(raw, options=StateDictOptions(full_state_dict=True))

    def plain_model(self, raw: HeartLanguageModel) -> HeartLanguageModel:
        """An unwrapped copy holding the full weights: each rank scores its own windows, which sharded forwards
        cannot (they are collectives)."""
        weights = self.full_weights(raw)
        device = next(iter(weights.values())).device
        with torch.random.fork_rng(devices=[]), torch.device("meta"):
            copy = HeartLanguageModel(raw.cfg)
        copy.load_state_dict(weights, assign=True)
        copy.class_weight = raw.class_weight
        return copy.to(device)


def layout(strategy: str) -> Layout:
    return FSDPLayout(reshard=strategy == "fsdp")
