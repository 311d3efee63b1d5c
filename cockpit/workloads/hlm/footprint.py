"""The HLM trainer's data in a study's work directory: its token shards, one uint16 token per sample per dataset,
counted only when the token cache lies in the work directory (synthetic data from its records x seconds x
360 Hz; a folder from its size on disk, when measured). cockpit.forecast.disk adds them to the footprint
(`Workload.data_bytes`)."""

from __future__ import annotations

from collections.abc import Mapping

from cockpit.workloads.base import StudyParts

TOKEN_BYTES = 2  # shards hold uint16 tokens
SYNTHETIC_FS = 360  # the generator's rate (trainer/data/synthetic.py)


def shard_bytes(study: StudyParts, workdir: str, dataset_bytes: Mapping[str, int] | None = None) -> tuple[int, str]:
    """Token shards the study prepares inside the work directory, and a note where they are not counted."""
    if not study.token_cache.startswith(workdir.rstrip("/") + "/"):
        return 0, "token cache outside the work directory"
    total, unknown = 0, []
    for name in sorted({cfg.dataset for cfg in study.runnable()}):
        d = study.datasets[name]
        if d.synthetic:
            p = d.synthetic_params
            total += int(int(p.get("records", 8)) * float(p.get("seconds", 300)) * SYNTHETIC_FS * TOKEN_BYTES)
        elif dataset_bytes and name in dataset_bytes:
            total += dataset_bytes[name]  # 16-bit tokens of one lead: at most the records' signal files
        else:
            unknown.append(name)
    return total, f"{', '.join(unknown)}: size not measured" if unknown else ""
