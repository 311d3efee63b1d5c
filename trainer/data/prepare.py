"""`hlm-train prepare`: tokenize a dataset once into memory-mappable shards (see shards.py).

Idempotent: a record whose inputs and parameters hash to the digest in its sidecar is skipped, and a
fully up-to-date shard folder is not touched at all. Atomic: arrays and sidecars appear under their
final names only when complete, the manifest is removed before any record is rewritten and written
last. Parallel over records (`--workers`), serialised per shard folder by a file lock.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from trainer.data import records as rec_io
from trainer.data import shards, synthetic
from trainer.data.errors import DataError
from trainer.data.labels import BEAT_CLASSES, RHYTHM_CLASSES, TOKEN_CLASS_NAMES
from trainer.data.tokenizers import SPECIAL_TOKENS, canonical, tokenize, vocab_size
from trainer.rundir import write_json

# Bump when the tokenizers' output changes for the same inputs: every shard is then rebuilt.
TOKENS_VERSION = 1
EXIT_BAD_INPUT = 3
EXIT_USAGE = 2


def _source(data_path: Path | None, synthetic_params: dict[str, Any]) -> dict[str, Any]:
    if data_path is None:
        return {"synthetic": synthetic_params, "generator_version": synthetic.GENERATOR_VERSION}
    return {"path": str(data_path)}


def _synthetic_params(given: dict[str, Any] | None) -> dict[str, Any]:
    params = dict(synthetic.DEFAULTS)
    for key, value in (given or {}).items():
        if key not in params:
            raise DataError(f"synthetic_params: unknown key {key!r} (known: {', '.join(params)})")
        floor, what = (-1, "a non-negative integer") if key == "seed" else (0, "a positive number")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= floor:
            raise DataError(f"synthetic_params.{key}: expected {what}, found {value!r}")
        params[key] = value
    params["records"] = int(params["records"])
    return params


def shard_path(
    data_path: str | Path | None, tokenizer: dict[str, Any], cache_root: str | Path,
    dataset: str | None = None, synthetic_params: dict[str, Any] | None = None,
) -> Path:
    """Where `prepare_dataset` puts (or has put) the shards of this dataset and tokenizer."""
    return _plan(data_path, tokenizer, cache_root, dataset, synthetic_params)["shard"]


def _plan(
    data_path: str | Path | None, tokenizer: dict[str, Any], cache_root: str | Path,
    dataset: str | None, synthetic_params: dict[str, Any] | None,
) -> dict[str, Any]:
    name, params = canonical(tokenizer)
    subset = tokenizer.get("records")
    if subset is not None:
        if not isinstance(subset, list) or not subset:
            raise DataError(f"tokenizer.records: expected a non-empty list of record names, found {subset!r}")
        subset = [str(r) for r in subset]
    folder = Path(data_path).expanduser().resolve() if data_path else None
    syn = _synthetic_params(synthetic_params) if folder is None else {}
    if folder is None:
        label = dataset or synthetic.NAME
        label = label if synthetic.NAME in label else f"{label}-{synthetic.NAME}"
    else:
        label = dataset or folder.name
    digest = shards.param_digest({
        "tokenizer": name, "params": params, "records": subset, "source": _source(folder, syn),
        "version": TOKENS_VERSION,
    })
    shard = Path(cache_root).expanduser() / f"{rec_io.safe_name(label)}-{name}-{digest}"
    return {"name": name, "params": params, "subset": subset, "folder": folder, "synthetic": syn,
            "dataset": label, "digest": digest, "shard": shard}


def prepare_dataset(
    data_path: str | Path | None, tokenizer: dict[str, Any], cache_root: str | Path, workers: int = 1,
    progress: bool = False, dataset: str | None = None, synthetic_params: dict[str, Any] | None = None,
) -> Path:
    """Tokenize every record (skipping up-to-date ones) and return the shard directory.

    data_path None uses the synthetic generator (`synthetic_params`: records, seconds, seed, fs).
    Raises DataError naming the file for missing records, corrupt headers, records without beats,
    unknown tokenizers and bad parameters.
    """
    t_start = time.perf_counter()
    plan = _plan(data_path, tokenizer, cache_root, dataset, synthetic_params)
    shard: Path = plan["shard"]
    jobs = _jobs(plan)
    if _manifest_matches(shard / shards.MANIFEST, jobs):
        return shard  # up to date: the manifest is written last and atomically, no lock needed to read it
    with shards.prepare_lock(shard):
        (shard / shards.RECORDS_DIR).mkdir(parents=True, exist_ok=True)
        shards.clean_temp_files(shard)
        done: dict[str, dict[str, Any]] = {}
        todo = []
        for job in jobs:
            meta = shards.read_meta(shard, job["file"])
            if meta is not None and meta.get("digest") == job["digest"]:
                done[job["record"]] = meta
            else:
                todo.append(job)
        manifest_file = shard / shards.MANIFEST
        if not todo and _manifest_matches(manifest_file, jobs):
            return shard
        manifest_file.unlink(missing_ok=True)  # from here on nothing looks whole until the end
        for meta in _run_jobs(todo, workers, progress, plan["dataset"], len(done), len(jobs)):
            done[meta["name"]] = meta
        manifest = _manifest(plan, jobs, done, skipped=len(jobs) - len(todo), workers=workers,
                             wall_s=time.perf_counter() - t_start)
        write_json(manifest_file, manifest)
    return shard


def _jobs(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """One job per record, with the digest of its inputs and parameters."""
    name, params, folder = plan["name"], plan["params"], plan["folder"]
    salt = shards.param_digest({"tokenizer": name, "params": params, "version": TOKENS_VERSION})
    jobs = []
    if folder is None:
        syn = plan["synthetic"]
        names = synthetic.record_names(syn["records"])
        if plan["subset"]:
            unknown = [r for r in plan["subset"] if r not in names]
            if unknown:
                raise DataError(f"tokenizer.records: {', '.join(unknown)} not among the synthetic records "
                                f"{names[0]}..{names[-1]}")
        for i, record in enumerate(names):
            if plan["subset"] and record not in plan["subset"]:
                continue
            digest = shards.param_digest({"salt": salt, "synthetic": syn, "index": i,
                                          "generator": synthetic.GENERATOR_VERSION})
            jobs.append({"record": record, "index": i, "synthetic": syn, "digest": digest})
    else:
        names = rec_io.list_records(folder)
        if plan["subset"]:
            unknown = [r for r in plan["subset"] if r not in names]
            if unknown:
                raise DataError(f"{folder}: record(s) {', '.join(unknown)} not in this folder's record list")
            names = [r for r in names if r in plan["subset"]]
        with_signal = name == "samples"
        for record in names:
            files = rec_io.input_files(folder, record, params["annotator"], with_signal)
            jobs.append({"record": record, "folder": str(folder), "digest": rec_io.digest_files(files, salt)})
    for job in jobs:
        job.update(file=rec_io.safe_name(job["record"]), tokenizer=name, params=params, shard=str(plan["shard"]))
    return jobs


def _manifest_matches(path: Path, jobs: list[dict[str, Any]]) -> bool:
    import json

    try:
        manifest = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return False
    listed = [(r.get("name"), r.get("digest")) for r in manifest.get("records", [])]
    return listed == [(j["record"], j["digest"]) for j in jobs] and manifest.get("schema_version") == shards.SHARD_SCHEMA


def _run_jobs(todo: list[dict[str, Any]], workers: int, progress: bool, label: str, already: int, total: int):
    """Run the record jobs inline (1 worker) or in a process pool; yield each record's sidecar."""
    show = progress and sys.stderr.isatty()
    count, beats = already, 0
    if workers <= 1 or len(todo) <= 1:
        results = map(_process_record, todo)
        pool = None
    else:
        pool = multiprocessing.get_context(_start_method()).Pool(min(workers, len(todo)))
        results = pool.imap_unordered(_process_record, todo)
    try:
        for meta in results:
            count += 1
            beats += meta["n_beats"]
            if show:
                print(f"\rprepare {label}: {count}/{total} records, {beats:,} beats", end="", file=sys.stderr, flush=True)
            yield meta
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
        if show:
            print(file=sys.stderr, flush=True)


def _start_method() -> str:
    """fork is cheapest, but forking a process with threads (a trainer with torch, NCCL, an NVML
    sampler) can deadlock the child; such a process starts its workers from a fork server instead."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1 and "torch" not in sys.modules:
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


def _process_record(job: dict[str, Any]) -> dict[str, Any]:
    """Decode, tokenize and write one record; returns its sidecar (also written, last)."""
    t0 = time.perf_counter()
    params = job["params"]
    if "synthetic" in job:
        s = job["synthetic"]
        rec = synthetic.generate_record(job["index"], s["seconds"], s["seed"], s["fs"])
    else:
        lead = params["lead"] if job["tokenizer"] == "samples" else None
        rec = rec_io.read_record(Path(job["folder"]), job["record"], params["annotator"], lead)
    t1 = time.perf_counter()
    out = tokenize(job["tokenizer"], params, rec)
    t2 = time.perf_counter()
    shard = Path(job["shard"])
    for kind in shards.ARRAYS:
        shards.save_array(shards.array_path(shard, job["file"], kind), getattr(out, kind))
    t3 = time.perf_counter()
    labels = out.labels[out.labels >= 0]
    rhythm = out.rhythm[out.rhythm >= 0]
    meta = {
        "name": job["record"], "file": job["file"], "digest": job["digest"],
        "n_tokens": int(len(out.tokens)), "n_beats": int(len(out.beats)),
        "class_counts": np.bincount(labels, minlength=len(BEAT_CLASSES)).tolist(),
        "unclassified_beats": int((out.labels < 0).sum()),
        "rhythm_counts": np.bincount(rhythm, minlength=len(RHYTHM_CLASSES)).tolist(),
        "decode_s": t1 - t0, "tokenize_s": t2 - t1, "write_s": t3 - t2,
        **{k: v for k, v in out.info.items() if k != "n_tokens"},
    }
    shards.write_meta(shard, job["file"], meta)
    return meta


def _manifest(plan: dict[str, Any], jobs: list[dict[str, Any]], done: dict[str, dict[str, Any]],
              skipped: int, workers: int, wall_s: float) -> dict[str, Any]:
    name, params = plan["name"], plan["params"]
    metas = [done[j["record"]] for j in jobs]
    decode = sum(m["decode_s"] for m in metas)
    tok = sum(m["tokenize_s"] for m in metas)
    beats = sum(m["n_beats"] for m in metas)
    synthetic_data = plan["folder"] is None
    return {
        "schema_version": shards.SHARD_SCHEMA,
        "kind": "hlm-token-shards",
        "dataset": plan["dataset"],
        "synthetic": synthetic_data,
        "source": str(plan["folder"]) if plan["folder"] else f"{synthetic.NAME} generator",
        "synthetic_params": plan["synthetic"] if synthetic_data else None,
        "tokenizer": name,
        "params": params,
        "param_digest": plan["digest"],
        "vocab_size": vocab_size(name, params),
        "special_tokens": dict(SPECIAL_TOKENS),
        "data_token_offset": len(SPECIAL_TOKENS),
        "token_classes": list(TOKEN_CLASS_NAMES) if name == "beats" else None,
        "beat_classes": list(BEAT_CLASSES),
        "n_classes": len(BEAT_CLASSES),
        "rhythm_classes": list(RHYTHM_CLASSES),
        "n_rhythm_classes": len(RHYTHM_CLASSES),
        "fs": params["fs"] if name == "samples" and params["fs"] else None,
        "records": metas,
        "totals": {
            "records": len(metas),
            "tokens": sum(m["n_tokens"] for m in metas),
            "beats": beats,
            "class_counts": np.sum([m["class_counts"] for m in metas], axis=0).astype(int).tolist(),
            "rhythm_counts": np.sum([m["rhythm_counts"] for m in metas], axis=0).astype(int).tolist(),
        },
        "timing": {
            "decode_s": decode, "tokenize_s": tok, "write_s": sum(m["write_s"] for m in metas),
            "wall_s": wall_s, "workers": workers, "records_skipped": skipped,
            "tokenize_beats_per_s": beats / tok if tok > 0 else None,
        },
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }


# --- command line ---------------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of `hlm-train prepare`."""
    parser.add_argument("--run-dir", type=Path, metavar="DIR", help="read dataset, data_path, tokenizer, token_cache from DIR/config.json")
    parser.add_argument("--data", type=Path, metavar="PATH", help="PhysioNet-style folder (RECORDS file or *.hea); omit for synthetic")
    parser.add_argument("--synthetic", action="store_true", help="use the built-in synthetic ECG generator")
    parser.add_argument("--dataset", metavar="NAME", help="dataset name in the shard folder (default: the data folder's name)")
    parser.add_argument("--tokenizer", default="samples", metavar="NAME", help="samples (default) or beats")
    parser.add_argument("--out", type=Path, metavar="CACHE", help="token cache root (shards go to OUT/<dataset>-<tokenizer>-<digest>)")
    parser.add_argument("--workers", type=int, default=1, metavar="N", help="processes, one record each at a time (default 1)")
    parser.add_argument("--vocab", type=int, metavar="BINS", help="samples: amplitude bins (default 256)")
    parser.add_argument("--quantizer", choices=("uniform", "mulaw"), help="samples: uniform or mulaw (default mulaw)")
    parser.add_argument("--lead", help="samples: lead index or name (default 0)")
    parser.add_argument("--fs", type=float, metavar="HZ", help="samples: resample to this rate in Hz (default 360; 0 keeps native)")
    parser.add_argument("--rr-bins", type=int, metavar="N", help="beats: RR-interval bins (default 16)")
    parser.add_argument("--annotator", metavar="EXT", help="annotation file extension: atr, ari, ... or auto (default)")
    parser.add_argument("--records", nargs="+", metavar="RECORD", help="only these records")
    parser.add_argument("--synthetic-records", type=int, metavar="N", help="synthetic: number of records (default 8)")
    parser.add_argument("--synthetic-seconds", type=float, metavar="S", help="synthetic: seconds per record (default 300)")
    parser.add_argument("--seed", type=int, help="synthetic: seed (default 0)")
    parser.add_argument("--no-progress", action="store_true", help="no progress line on a terminal")


def run(args: argparse.Namespace) -> int:
    """Run `hlm-train prepare`; 0 on success, 2 for a bad command line or config, 3 for bad data."""
    try:
        kwargs = _from_run_dir(args.run_dir) if args.run_dir else _from_flags(args)
    except _UsageError as exc:
        print(f"hlm-train prepare: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        t0 = time.perf_counter()
        shard = prepare_dataset(**kwargs, progress=not args.no_progress)
        import json

        m = json.loads((shard / shards.MANIFEST).read_text())
    except DataError as exc:
        print(f"hlm-train prepare: bad input data: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    t = m["timing"]
    kind = "SYNTHETIC data" if m["synthetic"] else m["source"]
    print(f"{shard}\n  {m['dataset']} ({kind}), tokenizer {m['tokenizer']}: {m['totals']['records']} records, "
          f"{m['totals']['beats']:,} beats, {m['totals']['tokens']:,} tokens, vocab {m['vocab_size']}\n"
          f"  decode {t['decode_s']:.2f} s, tokenize {t['tokenize_s']:.2f} s, write {t['write_s']:.2f} s "
          f"(as built); this call {time.perf_counter() - t0:.2f} s")
    return 0


class _UsageError(Exception):
    pass


def _from_flags(args: argparse.Namespace) -> dict[str, Any]:
    if args.synthetic and args.data:
        raise _UsageError("--synthetic and --data exclude each other")
    if args.out is None:
        raise _UsageError("--out CACHE_ROOT is required (or --run-dir DIR)")
    if args.workers < 1:
        raise _UsageError(f"--workers must be at least 1, found {args.workers}")
    tok: dict[str, Any] = {"name": args.tokenizer}
    lead = args.lead
    if lead is not None and lead.isdigit():
        lead = int(lead)
    for key, value in (("vocab", args.vocab), ("quantizer", args.quantizer), ("lead", lead), ("fs", args.fs),
                       ("rr_bins", args.rr_bins), ("annotator", args.annotator), ("records", args.records)):
        if value is not None:
            tok[key] = value
    syn = {k: v for k, v in (("records", args.synthetic_records), ("seconds", args.synthetic_seconds),
                             ("seed", args.seed)) if v is not None}
    return {"data_path": args.data, "tokenizer": tok, "cache_root": args.out, "workers": args.workers,
            "dataset": args.dataset, "synthetic_params": syn or None}


def _from_run_dir(run_dir: Path) -> dict[str, Any]:
    from trainer.rundir import RunDirError, read_config

    try:
        config = read_config(run_dir)
    except RunDirError as exc:
        raise _UsageError(str(exc)) from None
    where = run_dir / "config.json"
    for key in ("tokenizer", "token_cache"):
        if key not in config:
            raise _UsageError(f"{where}: missing key {key!r}")
    if not isinstance(config["tokenizer"], dict):
        raise _UsageError(f"{where}: 'tokenizer' must be an object with a 'name', found {config['tokenizer']!r}")
    data_path = None if config.get("synthetic") else config.get("data_path")
    return {"data_path": data_path, "tokenizer": config["tokenizer"], "cache_root": config["token_cache"],
            "workers": int(config.get("prepare_workers") or os.environ.get("SLURM_CPUS_PER_TASK") or 1),
            "dataset": config.get("dataset"), "synthetic_params": config.get("synthetic_params") or None}
