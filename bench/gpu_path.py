"""The trainer's GPU path on one CUDA device, end to end, through the real launcher.

Every run is `torchrun --standalone --nproc-per-node 1 -m trainer train --run-dir DIR` (NCCL on the GPU), as a
batch script starts it: the preflight, a foundation run at each precision, a long window, torch.compile, a fine-tune from the foundation's weights with its evaluation, `hlm-train evaluate`
of that fine-tune, and a SIGTERM checkpoint resumed to the end. One line per run, from its result.json and
gpu.jsonl: T and the steps it covers, tokens/s, the phases of T in seconds, peak memory, the NVML samples.
At world size 1 the trainer makes no process group, so each parallel strategy also runs under a group of
one rank (`--group-of-one`, NCCL on the GPU): its wrappers and timed collectives run, each collective a copy of
one rank's data; these runs' comm seconds are that cost, not a link's.

Needs only the trainer's packages (torch, numpy, nvidia-ml-py; wfdb for a PhysioNet folder).

    python bench/gpu_path.py --data DIR --test-records 100 103   # a PhysioNet folder, about 5 min on an H100
    python bench/gpu_path.py                                     # the synthetic generator
    python bench/gpu_path.py --device cpu --steps 4 --layers 1 --d-model 32   # the script itself, on a laptop
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runcontract.axes import STRATEGIES  # noqa: E402
from runcontract.contract import GPU_FILE, METRICS_FILE, PREFLIGHT_FILE, RESULT_FILE  # noqa: E402
from runcontract.files import read_jsonl  # noqa: E402
from runcontract.records import read_exit, read_result, write_config  # noqa: E402
from trainer import rundir  # noqa: E402

MIB = 2**20
PHASES = ("data_wait", "compute", "comm", "optimizer", "other")


def base_config(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """config.json shared by the runs: the study example's model (examples/meluxina.toml) on one device."""
    data = str(Path(args.data).resolve()) if args.data else None
    return {
        "study": "gpu-path", "group_id": "gpu-path", "dataset": Path(data).name if data else "synthetic",
        "data_path": data, "synthetic": data is None,
        "synthetic_params": None if data else {"records": 8, "seconds": 600},
        "split": {"test_records": args.test_records} if data and args.test_records else None,
        "tokenizer": {"name": "samples"}, "token_cache": str(workdir / "tokens"), "prepare_workers": args.cpus,
        "mode": "foundation", "window": 256, "precision": "fp32", "batch_size": args.batch_size,
        "cpus_per_task": args.cpus, "gpus_per_node": 1, "nodes": 1, "strategy": "ddp",
        "model": {"layers": args.layers, "d_model": args.d_model, "heads": args.heads, "dropout": 0.0},
        "train": {"steps": args.steps, "lr": 3e-4, "seed": 0, "device": args.device, "metrics_interval_s": 1.0,
                  "nvml_interval_ms": 100, "eval": False,
                  **({"profile_active": args.profile, "profile_wait": 5} if args.profile else {})},
    }


def variant(base: dict[str, Any], name: str, train: dict[str, Any] | None = None, **keys: Any) -> dict[str, Any]:
    return {**base, **keys, "config_id": name, "train": {**base["train"], **(train or {})}}


def torchrun(run_dir: Path, group_of_one: bool = False) -> list[str]:
    """The batch script's launch of one rank; `group_of_one` runs this file's entry instead of the trainer's."""
    entry = [__file__, "--group-of-one"] if group_of_one else ["-m", "trainer", "train", "--run-dir"]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1",
            *entry, str(run_dir)]


def train_in_group_of_one(run_dir: str) -> int:
    """`hlm-train train` with a process group of one rank (NCCL on a GPU, else gloo).

    At world size 1 the trainer makes no process group, so the strategies' wrappers (DDP, ZeroRedundancyOptimizer,
    FSDP2 with its bf16 policy), their timed collectives and the NCCL barrier never run on one GPU; with a group
    of one they do, every collective a copy of one rank's data."""
    import datetime

    import torch.distributed as dist

    from trainer.commands import cli
    from trainer.parallelism import distributed

    def setup(requested_device: str, timeout_s: float = 1800.0) -> distributed.Dist:
        device = distributed.pick_device(requested_device, 0)
        backend = "nccl" if device.type == "cuda" else "gloo"
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s),
                                device_id=device if backend == "nccl" else None)
        return distributed.Dist(0, 1, 0, 1, device, backend)

    distributed.setup = setup
    return cli.main(["train", "--run-dir", run_dir])


def launch(cmd: list[str], log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with log.open("ab") as out:
        return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)


def finish(proc: subprocess.Popen[bytes], timeout_s: float) -> int:
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return 124


def gpu_figures(run_dir: Path) -> str:
    """NVML samples of gpu.jsonl: how many, mean utilisation and power, peak memory used."""
    records = read_jsonl(run_dir / GPU_FILE).records
    gpus = [r for r in records if r.get("nvml") != "unavailable"]
    if not gpus:
        reasons = {str(r.get("reason")) for r in records if r.get("reason")}
        return f"nvml: {len(records)} records, no GPU sample ({'; '.join(sorted(reasons)) or 'no reason given'})"

    def mean(key: str) -> float:
        values = [float(g[key]) for g in gpus if g.get(key) is not None]
        return sum(values) / len(values) if values else float("nan")

    used = [float(g["mem_used_bytes"]) for g in gpus if g.get("mem_used_bytes") is not None]
    return (f"nvml: {len(gpus)} samples, util {mean('util_pct'):.0f} %, power {mean('power_w'):.0f} W, "
            f"memory used up to {max(used, default=0) / MIB:.0f} MiB")


def describe(name: str, run_dir: Path, rc: int, wall: float) -> dict[str, Any]:
    """One line from the run's own files (result.json, gpu.jsonl), or why there is none."""
    result = read_result(run_dir) if (run_dir / RESULT_FILE).exists() else None
    if rc != 0 or result is None:
        tail = ""
        log = run_dir.parent / f"{name}.log"
        if log.exists():
            tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-3:])
        line = f"{name}: FAILED exit {rc} after {wall:.0f} s: {tail}"
        print(line, flush=True)
        return {"name": name, "ok": False, "line": line}
    t, b = result["timing"], result["breakdown_s"]
    phases = " ".join(f"{p} {b.get(p, 0.0):.2f}" for p in PHASES)
    line = (f"{name}: T {t['train_time_s']:.2f} s for {t['steps']} steps ({t['tokens']:,} tokens) = "
            f"{result['throughput']['tokens_per_s']:,.0f} tokens/s; first step {t['first_step_s']:.2f} s; "
            f"[{phases}] s; peak {result['peak_memory_bytes'] / MIB:.0f} MiB ({result['memory']['peak_source']}); "
            f"{result['device']}/{result['backend']}, {result['parallel']['applied']}, "
            f"mixed {result['parallel']['mixed_precision']}; comm by kind {json.dumps(result['comm']['by_kind'])}; "
            f"resumes {t['resumes']}; {gpu_figures(run_dir)}")
    if "eval" in result:
        line += f"; eval {json.dumps({k: v for k, v in result['eval'].items() if isinstance(v, int | float)})}"
    print(line, flush=True)
    return {"name": name, "ok": True, "line": line, "T": t["train_time_s"], "steps": t["steps"],
            "tokens_per_s": result["throughput"]["tokens_per_s"], "peak_mib": result["peak_memory_bytes"] / MIB}


def run(workdir: Path, config: dict[str, Any], timeout_s: float, group_of_one: bool = False) -> dict[str, Any]:
    name = config["config_id"]
    run_dir = workdir / name
    write_config(run_dir, config)
    start = time.monotonic()
    rc = finish(launch(torchrun(run_dir, group_of_one), workdir / f"{name}.log"), timeout_s)
    return describe(name, run_dir, rc, time.monotonic() - start)


def run_interrupted(workdir: Path, config: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """SIGTERM to torchrun once training has written a metrics record, then the same command again."""
    name = config["config_id"]
    run_dir = workdir / name
    write_config(run_dir, config)
    log = workdir / f"{name}.log"
    start = time.monotonic()
    proc = launch(torchrun(run_dir), log)
    while proc.poll() is None and time.monotonic() - start < timeout_s:
        if read_jsonl(run_dir / METRICS_FILE).records:
            break
        time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    rc = finish(proc, timeout_s)
    exit_record = read_exit(run_dir)
    print(f"{name}: SIGTERM -> exit {rc}; exit.json {json.dumps(exit_record)}", flush=True)
    rc = finish(launch(torchrun(run_dir), log), timeout_s)
    return describe(name, run_dir, rc, time.monotonic() - start)


def preflight(workdir: Path, args: argparse.Namespace, config: dict[str, Any]) -> None:
    run_dir = workdir / "preflight"
    datasets = {config["dataset"]: {"path": config["data_path"], "synthetic": config["data_path"] is None,
                                    "tokenizer": config["tokenizer"]}}
    write_config(run_dir, {"device": args.device, "datasets": datasets, "workdir": str(workdir),
                                  "token_cache": config["token_cache"]})
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "1",
           "-m", "trainer", "preflight", "--run-dir", str(run_dir)]
    rc = finish(launch(cmd, workdir / "preflight.log"), 120)
    path = run_dir / PREFLIGHT_FILE
    facts = json.loads(path.read_text()) if path.exists() else {}
    ranks = facts.get("ranks") or []
    nvml = facts.get("nvml") or []
    print(f"preflight: exit {rc}; ranks {json.dumps(ranks)[:600]}; nvml {json.dumps(nvml)[:600]}", flush=True)


def evaluate(workdir: Path, args: argparse.Namespace, model_dir: Path) -> None:
    if not args.data or not args.test_records:
        print("evaluate: skipped (needs --data and --test-records)", flush=True)
        return
    out = workdir / "evaluate"
    cmd = [sys.executable, "-m", "trainer", "evaluate", str(model_dir), "--data", str(Path(args.data).resolve()),
           "--records", *args.test_records, "--device", args.device, "--out", str(out)]
    start = time.monotonic()
    rc = finish(launch(cmd, workdir / "evaluate.log"), args.timeout)
    path = out / rundir.EVALUATION_FILE
    summary = json.loads(path.read_text()) if path.exists() else {}
    figures = {k: v for k, v in (summary.get("eval") or {}).items() if isinstance(v, int | float | str)}
    print(f"evaluate: exit {rc} in {time.monotonic() - start:.1f} s; {json.dumps(figures)[:600]}", flush=True)


def environment_lines() -> None:
    import torch

    print(f"torch {torch.__version__}, cuda {torch.version.cuda}, available {torch.cuda.is_available()}", flush=True)
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        print(f"device 0: {props.name}, {props.total_memory / 2**30:.1f} GiB, {props.multi_processor_count} SMs, "
              f"bf16 {torch.cuda.is_bf16_supported()}, nccl {torch.cuda.nccl.version()}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=None, help="PhysioNet-style folder (default: the synthetic generator)")
    p.add_argument("--test-records", nargs="+", default=None, help="the test split of --data")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--d-model", type=int, default=384)
    p.add_argument("--heads", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--cpus", type=int, default=min(8, os.cpu_count() or 1), help="cpus_per_task (loader workers + 1)")
    p.add_argument("--timeout", type=float, default=150.0, help="seconds for one run")
    p.add_argument("--deadline", type=float, default=480.0, help="seconds for the whole script: later runs are skipped")
    p.add_argument("--workdir", type=Path, default=None)
    p.add_argument("--tar", type=Path, default=None, help="write the run directories (no weights) to this .tgz")
    p.add_argument("--profile", type=int, default=0, metavar="STEPS",
                   help="record STEPS steps of every run with torch.profiler (traces/ of each run directory)")
    p.add_argument("--no-preflight", action="store_true", help="skip `hlm-train preflight`")
    p.add_argument("--only", nargs="+", default=None, help="only these runs (names as printed; 'evaluate' for hlm-train evaluate)")
    p.add_argument("--group-of-one", metavar="RUN_DIR", help=argparse.SUPPRESS)  # the entry torchrun starts
    args = p.parse_args()
    if args.group_of_one:
        sys.exit(train_in_group_of_one(args.group_of_one))
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="hlm-gpu-path-"))
    start = time.monotonic()
    environment_lines()
    base = base_config(args, workdir)
    if not args.no_preflight:
        preflight(workdir, args, base)
    long_window = {"window": 1024, "batch_size": max(1, args.batch_size // 4)}
    plan: list[tuple[str, dict[str, Any]]] = [
        ("run", variant(base, "fp32-w256")),
        ("run", variant(base, "bf16-w256", precision="bf16")),
        ("run", variant(base, "fp16-w256", precision="fp16")),
        *[("group", variant(base, f"bf16-w256-{s}-group1", precision="bf16", strategy=s)) for s in STRATEGIES],
        ("run", variant(base, "fp32-w1024", **long_window)),
        ("run", variant(base, "bf16-w1024", precision="bf16", **long_window)),
        ("interrupted", variant(base, "bf16-w256-sigterm", {"steps": args.steps * 4}, precision="bf16")),
        ("run", variant(base, "bf16-w256-finetune", {"eval": True, "init_checkpoint": str(workdir / "bf16-w256"
                                                                                          / "model.pt")},
                        precision="bf16", mode="finetune")),
        ("evaluate", {"config_id": "evaluate"}),
        ("run", variant(base, "bf16-w256-compile", {"compile": True}, precision="bf16")),
    ]
    rows = []
    for kind, config in plan:
        name = config.get("config_id", kind)
        if args.only and name not in args.only:
            continue
        if time.monotonic() - start > args.deadline:
            print(f"{name}: not run, past the {args.deadline:.0f} s deadline", flush=True)
            continue
        if kind == "evaluate":
            evaluate(workdir, args, workdir / "bf16-w256-finetune")
        elif kind == "group":
            rows.append(run(workdir, config, args.timeout, group_of_one=True))
        elif kind == "interrupted":
            rows.append(run_interrupted(workdir, config, args.timeout))
        else:
            rows.append(run(workdir, config, args.timeout))
    print(f"\n{'run':<32} {'T s':>8} {'steps':>6} {'tokens/s':>12} {'peak MiB':>9}")
    for r in rows:
        if r["ok"]:
            print(f"{r['name']:<32} {r['T']:>8.2f} {r['steps']:>6} {r['tokens_per_s']:>12,.0f} {r['peak_mib']:>9.0f}")
        else:
            print(f"{r['name']:<32} FAILED")
    if args.tar:
        with tarfile.open(args.tar, "w:gz") as tar:
            tar.add(workdir, arcname="gpu-path", filter=lambda m: None if m.name.endswith((".pt", ".npy"))
                    or "/tokens" in m.name else m)
        print(f"run directories (no weights, no tokens): {args.tar}")
    print(f"{len([r for r in rows if r['ok']])} of {len(rows)} runs completed in {time.monotonic() - start:.0f} s")


if __name__ == "__main__":
    main()
