"""The one bucket formula (runcontract/ddp_buckets.py) against torch's own DDP: the buckets one step all-reduces
once torch has rebuilt them (counted by a comm hook, as trainer.measure.timing.CommMeter counts them), for the default
cap and for explicit caps, on a real process group of one (gloo)."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

from runcontract.ddp_buckets import MIB, expected_buckets


@pytest.fixture(scope="module")
def group_of_one(tmp_path_factory):
    store = tmp_path_factory.mktemp("pg") / "store"
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


@pytest.mark.parametrize(("layers", "cap"), [(10, None), (10, 4.0), (10, 1.0), (3, None), (30, None), (10, 2.0)])
def test_the_formula_counts_the_buckets_torch_builds(group_of_one, layers: int, cap: float | None):
    model = torch.nn.Sequential(*[torch.nn.Linear(512, 512, bias=False) for _ in range(layers)])  # 1 MiB each
    ddp = torch.nn.parallel.DistributedDataParallel(model, **({} if cap is None else {"bucket_cap_mb": cap}))
    calls = []

    def counted(state, bucket):
        calls.append(bucket.index())
        return allreduce_hook(state, bucket)

    ddp.register_comm_hook(None, counted)
    for _ in range(2):  # buckets are rebuilt in gradient order after the first step
        calls.clear()
        ddp(torch.randn(2, 512)).sum().backward()
    built = len(calls)
    assert built == expected_buckets(layers * MIB, cap), (layers, cap, built)


def test_an_explicit_cap_sizes_the_first_bucket_too():
    assert expected_buckets(10 * MIB, 4.0) == 3  # a default-sized 1 MiB first bucket would make it 4
    assert expected_buckets(10 * MIB, None) == 2  # 1 MiB, then 9 MiB in one 25 MiB bucket
