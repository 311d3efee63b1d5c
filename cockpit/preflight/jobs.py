"""Which preflight jobs a study needs, and the config.json each one reads (`hlm-train preflight`)."""

from __future__ import annotations

import hashlib
import importlib.metadata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runcontract.contract import SCHEMA_VERSION
from trainer.config_keys import check_preflight_config

if TYPE_CHECKING:
    from cockpit.study.spec import Configuration, Study

PREFLIGHT_MINUTES = 5  # each job's time limit (or the study's, when that is shorter)
PREFLIGHT_DIR = "preflight"  # <workdir>/<study>/preflight/<nodes>n/
PROBE_BYTES = 8 * 2**20  # the all-reduce size: a small model's gradient, as `hlm-train probe` uses


@dataclass(frozen=True)
class PreflightJob:
    """One preflight job: a node count with the largest GPUs per node the study asks for at that count
    (and the fewest CPU cores per task, the cheapest allocation of that shape)."""

    cfg: Configuration

    @property
    def nodes(self) -> int:
        return self.cfg.nodes

    @property
    def gpus_per_node(self) -> int:
        return self.cfg.gpus_per_node

    @property
    def name(self) -> str:
        return f"{self.nodes} node{'s' if self.nodes > 1 else ''} x {self.gpus_per_node}"

    @property
    def dir_name(self) -> str:
        return f"{self.nodes}n"


def preflight_jobs(study: Study) -> list[PreflightJob]:
    """One job per distinct node count of the runnable matrix."""
    out = []
    runnable = study.runnable()
    for nodes in sorted({c.nodes for c in runnable}):
        shaped = [c for c in runnable if c.nodes == nodes]
        gpus = max(c.gpus_per_node for c in shaped)
        cfg = min((c for c in shaped if c.gpus_per_node == gpus), key=lambda c: c.cpus_per_task)
        out.append(PreflightJob(cfg))
    return out


def preflight_dir(study_dir: str, job: PreflightJob) -> str:
    return f"{study_dir.rstrip('/')}/{PREFLIGHT_DIR}/{job.dir_name}"


def time_limit_minutes(study: Study) -> int:
    return max(1, min(PREFLIGHT_MINUTES, study.cluster.time_limit_minutes))


def study_digest(study: Study) -> str:
    """The study file's content digest: a preflight holds for exactly this file (a study built in memory,
    like the demo's, is digested from its parsed form)."""
    path = Path(study.path)
    data = path.read_bytes() if path.is_file() else repr(study).encode()
    return hashlib.sha256(data).hexdigest()[:16]


def laptop_versions() -> dict[str, str]:
    """What this machine has installed, for the job's versions to be compared with (torch is looked up,
    never imported)."""
    out = {}
    for dist, key in (("hlm-cockpit", "project"), ("torch", "torch")):
        try:
            out[key] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def cost_words(study: Study) -> str:
    """What the preflight run before the study's first submit costs at most, in one line: its jobs, each one's
    nodes x workers, its time limit, and the node-hours if every job ran to it (most end in a minute)."""
    wanted = preflight_jobs(study)
    minutes = time_limit_minutes(study)
    node_hours = sum(job.nodes for job in wanted) * minutes / 60
    count = f"{len(wanted)} job{'s' if len(wanted) != 1 else ''}"
    return (f"first a preflight: {count} ({', '.join(job.name for job in wanted)}), each at most {minutes} min, "
            f"at most {node_hours:.2f} node-hours")


def job_config(study: Study, job: PreflightJob, study_dir: str) -> dict[str, Any]:
    """The preflight's config.json: its shape, what to check of every dataset, where the study writes. Its keys are
    declared once, trainer.config_keys.PreflightKeys, and what is written is judged by them."""
    config = {
        "schema_version": SCHEMA_VERSION,
        "preflight": True,
        "study": study.name,
        "nodes": job.nodes,
        "gpus_per_node": job.gpus_per_node,
        "cpus_per_task": job.cfg.cpus_per_task,
        "device": study.train.get("device", "auto"),
        "datasets": {},
        "token_cache": "",  # none: a script's own data
        **study.workload.preflight_data(study),  # the HLM trainer's datasets and token cache
        **({"files": list(study.workload.files_needed())} if study.workload.files_needed() else {}),
        "workdir": f"{study_dir.rstrip('/')}/runs",
        "probe_bytes": PROBE_BYTES,
        "timeout_s": time_limit_minutes(study) * 60,
        **({"share_group": study.cluster.share_group} if study.cluster.share_group else {}),
    }
    check_preflight_config(config, "preflight config.json", ValueError)  # the schema hlm-train preflight reads
    return config
