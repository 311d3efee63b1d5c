"""`hlm-train preflight --run-dir DIR`: what a study's jobs will meet, measured in one short job.

Run under the same launcher as training (torchrun, one process per GPU or CPU worker, srun across nodes),
in the job's real environment. Every rank reports where it runs and what it sees (devices, cores,
CUDA_VISIBLE_DEVICES); each node's first rank reads NVML with the trainer's own sampler; all ranks time an
all-reduce (runcontract.probe, the figures the prediction takes); rank 0 checks every dataset of the study
with the tokenizer's own validators, the work directory and the scheduler's view of the job, and writes
DIR/preflight.json. It records facts and the errors it met; the cockpit (cockpit/preflight) turns them into
verdicts against what the study expects, so the rules live in one place. docs/run-directory.md lists the
fields.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import torch

from runcontract import probe
from runcontract.contract import PREFLIGHT_FILE, SCHEMA_VERSION, ContractError
from runcontract.files import write_json
from runcontract.modes import make_dirs, share_with
from runcontract.nvml import sample_all
from runcontract.records import read_config
from trainer import environment
from trainer.config_keys import check_preflight_config
from trainer.parallelism import distributed


def rank_facts(d: distributed.Dist) -> dict[str, Any]:
    """What this rank sees: host, device, the GPUs torch counts and their names and memory, bf16, cores."""
    devices: list[dict[str, Any]] = []
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            devices.append({"index": i, "name": props.name, "memory_bytes": int(props.total_memory)})
    bf16: bool | None = None
    if d.device.type == "cuda":
        bf16 = bool(torch.cuda.is_bf16_supported())
    return {
        "rank": d.rank,
        "local_rank": d.local_rank,
        "host": socket.gethostname(),
        "node": environment.slurm_allocation().get("node_name") or socket.gethostname(),
        "device": str(d.device),
        "cuda_visible_devices": environment.cuda_visible_devices(),
        "cuda_device_count": torch.cuda.device_count() if torch.cuda.is_available() else 0,
        "devices": devices,
        "bf16_supported": bf16,
        "cores": environment.usable_cores(),
        "omp_threads": torch.get_num_threads(),
        "slurm": environment.slurm_allocation(),
    }


def nvml_facts(d: distributed.Dist) -> dict[str, Any] | None:
    """One NVML reading of every GPU of this node, taken by the node's first rank (None on the others)."""
    if not d.is_local_main:
        return None
    samples, reason = sample_all()
    return {"host": socket.gethostname(), "available": not reason, "reason": reason, "gpus": samples}


def comm_facts(d: distributed.Dist, nbytes: int, nodes: int) -> dict[str, Any] | None:
    """Timed all-reduces over every rank (and within a node when several span nodes); None for one rank."""
    try:
        return probe.all_reduce_probe(d, nbytes, nodes)
    except Exception as exc:  # a collective that fails is the finding, not a crash
        return {"error": f"{type(exc).__name__}: {exc}"}


def dataset_facts(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A dataset as the trainer will meet it: the folder, its records, one record's header and the
    tokenizer's parameters checked against that record's rate (the validators prepare runs)."""
    from trainer.data.errors import DataError
    from trainer.data.records import lead_rate, list_records, read_fs, resolve_annotator
    from trainer.data.tokenizers import canonical, check_rate, tokenized_rate

    out: dict[str, Any] = {"path": spec.get("path"), "synthetic": bool(spec.get("synthetic"))}
    try:
        tok_name, params = canonical(dict(spec.get("tokenizer") or {}))
    except DataError as exc:
        return {**out, "error": str(exc)}
    if out["synthetic"]:
        return out
    folder = Path(str(spec.get("path")))
    try:
        names = list_records(folder)
        wanted = params.get("records") or (spec.get("tokenizer") or {}).get("records")
        if wanted:
            missing = [r for r in wanted if r not in names]
            if missing:
                raise DataError(f"{folder}: tokenizer.records names {', '.join(missing[:5])} which the folder does not list")
            names = [r for r in names if r in wanted]
        first = names[0]
        header = folder / f"{first}.hea"
        # the samples tokenizer reads one lead at its own rate (several samples per frame: a multiple of the header's)
        fs = (lead_rate(header, params.get("lead", 0)) if tok_name == "samples"
              else read_fs(header) if header.exists() else None)
        annotation = resolve_annotator(folder, first, str(params.get("annotator", "auto")))
        out.update(records=len(names), checked_record=first, annotation=str(annotation))
        if fs is not None:
            out["fs"] = fs
        if tok_name == "samples" and fs is not None:
            rate = tokenized_rate(params, fs)
            out["tokenized_fs"] = rate
            check_rate(params, rate, str(folder / f"{first}.hea"), first)
    except DataError as exc:
        out["error"] = str(exc)
    except OSError as exc:
        out["error"] = f"{folder}: {exc.strerror or exc}"
    return out


def file_facts(path: str) -> dict[str, Any]:
    """Whether a file a study's own script needs is readable where the job runs (~ and $VAR expanded here)."""
    full = os.path.expanduser(os.path.expandvars(path))
    return {"path": full, "readable": os.access(full, os.R_OK)}


def storage_facts(workdir: str, token_cache: str) -> dict[str, Any]:
    """Whether the study's run and cache directories can be created and written, and the free space."""
    out: dict[str, Any] = {"dir": workdir, "token_cache": token_cache}
    for key, path in (("workdir", workdir), ("token_cache", token_cache)):
        probe_file = Path(path) / f".hlm-preflight-{uuid.uuid4().hex[:8]}"
        try:
            make_dirs(path)
            probe_file.write_bytes(b"x")
            probe_file.unlink()
            out[f"{key}_writable"] = True
        except OSError as exc:
            out[f"{key}_writable"] = False
            out[f"{key}_error"] = f"{path}: {exc.strerror or exc}"
    try:
        out["free_bytes"] = shutil.disk_usage(workdir).free
    except OSError as exc:
        out["free_error"] = f"{workdir}: {exc.strerror or exc}"
    return out


def scheduler_facts() -> dict[str, Any]:
    """The job's submit and start time as Slurm has them (its queue wait); empty outside a Slurm job."""
    job_id = environment.slurm_allocation().get("job_id")
    if not job_id:
        return {}
    out: dict[str, Any] = {"job_id": job_id}
    try:
        text = subprocess.run(["scontrol", "-o", "show", "job", str(job_id)], capture_output=True, text=True,
                              timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return {**out, "error": f"scontrol: {exc}"}
    fields = dict(part.split("=", 1) for part in text.split() if "=" in part)
    submit, start = fields.get("SubmitTime"), fields.get("StartTime")
    out.update(submit_time=submit, start_time=start)
    try:
        fmt = "%Y-%m-%dT%H:%M:%S"
        out["queue_wait_s"] = time.mktime(time.strptime(str(start), fmt)) - time.mktime(time.strptime(str(submit), fmt))
    except (TypeError, ValueError):
        out["error"] = f"scontrol gave no usable SubmitTime/StartTime ({submit!r}, {start!r})"
    return out


def run(run_dir: Path) -> int:
    """Every rank: its facts and the all-reduce; rank 0 adds data, storage and scheduler, writes the file."""
    config = check_preflight_config(read_config(run_dir), str(run_dir / "config.json"), ContractError)
    share_with(config.get("share_group"))  # what the job writes: private, or the study's group
    started = time.time()
    d = distributed.setup(str(config.get("device", "auto")), timeout_s=float(config.get("timeout_s", 300)))
    try:
        mine = {"rank": rank_facts(d), "nvml": nvml_facts(d)}
        comm = comm_facts(d, int(config.get("probe_bytes", 8 * 2**20)), int(config.get("nodes", 1)))
        gathered = distributed.gather_objects(d, mine)
        if d.is_main:
            everyone = [g for g in gathered if isinstance(g, dict)]
            report = {
                "schema_version": SCHEMA_VERSION,
                "world": d.world,
                "backend": d.backend,
                "torch": torch.__version__,
                "ranks": [g["rank"] for g in everyone],
                "nvml": [g["nvml"] for g in everyone if g.get("nvml") is not None],
                "comm": comm,
                "data": {name: dataset_facts(name, spec) for name, spec in (config.get("datasets") or {}).items()},
                "files": {path: file_facts(path) for path in config.get("files") or []},
                "storage": storage_facts(str(config["workdir"] or run_dir), str(config["token_cache"] or run_dir)),
                "scheduler": scheduler_facts(),
                "seconds": time.time() - started,
            }
            write_json(run_dir / PREFLIGHT_FILE, report)
    finally:
        distributed.teardown(d)
    return 0
