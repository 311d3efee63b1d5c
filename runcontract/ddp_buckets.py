"""How many gradient buckets torch's DistributedDataParallel makes, and how much of their all-reduce backward
hid: the formulas the trainer (result.json `comm.buckets` and `comm.overlap`; a run without DDP records the
count it would have had) and the cockpit's prediction (a what-if of `train.bucket_cap_mb`; the measured overlap,
also from an older result.json without `comm.overlap`) both use. Pure Python: the laptop side imports it.

torch's DDP, after its first step, rebuilds its buckets in the order gradients arrive: left at its default cap
(25 MiB) the first bucket holds at most 1 MiB, so that the last layers' gradients start their all-reduce
early; an explicit `bucket_cap_mb` sizes every bucket by the cap, the first one included
(torch.nn.parallel.distributed: `first_bucket_bytes_cap` is the default 1 MiB only when the cap is unset;
10 MiB of gradients at a 4 MB cap are 3 buckets, measured with `_get_ddp_logging_data()`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

MIB = 2**20
DDP_FIRST_BUCKET_MB = 1.0  # the first bucket's cap when bucket_cap_mb is left unset
DDP_DEFAULT_BUCKET_MB = 25.0


def expected_buckets(grad_bytes: float, bucket_cap_mb: float | None) -> int:
    """DDP's gradient buckets for `grad_bytes`: unset, a 1 MiB first bucket then 25 MiB ones; an explicit cap
    sizes the first bucket too. A parameter is never split across buckets, so the count holds while the cap is
    at least the largest parameter's gradient (below that, each parameter is a bucket of its own)."""
    if bucket_cap_mb is None:
        first, rest = DDP_FIRST_BUCKET_MB * MIB, DDP_DEFAULT_BUCKET_MB * MIB
        return 1 if grad_bytes <= first else 1 + math.ceil((grad_bytes - first) / rest)
    return max(1, math.ceil(grad_bytes / (bucket_cap_mb * MIB)))


def overlap(by_kind: Mapping[str, Any]) -> dict[str, float | None]:
    """result.json `comm.overlap` from `comm.by_kind`: DDP's all-reduce `busy_s` (in flight) and `exposed_s`
    (waited for after backward's last bucket), and `hidden_share` = 1 - exposed / busy in [0, 1], the part of
    the all-reduce backward hid; all null without a DDP all-reduce, the share null where none was timed busy."""
    kind = by_kind.get("all_reduce") or {}
    busy, exposed = kind.get("busy_s"), kind.get("exposed_s")
    share = None
    if isinstance(busy, int | float) and busy > 0 and isinstance(exposed, int | float):
        share = min(1.0, max(0.0, 1.0 - exposed / busy))
    return {"busy_s": busy, "exposed_s": exposed, "hidden_share": share}
