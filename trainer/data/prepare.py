"""`hlm-train prepare`: tokenize a dataset once into memory-mappable shards (see shards.py).

Idempotent: a record whose inputs and parameters hash to the digest in its sidecar is skipped, and a
fully up-to-date shard folder is not touched at all. Atomic: arrays and sidecars appear under their
final names only when complete, and their names carry the record's input digest, so a prepare that
fails (a bad record) or is killed leaves the previous manifest and every file it lists intact; the new
manifest replaces it last. Nothing is dropped silently: a bad record is an error naming the file and
the numbers, or, with `skip_bad_records`, a skipped record listed with its reason. Parallel over
records (`--workers`), serialised per shard folder by a file lock.

Longer than the ~400 lines a module here keeps to, on purpose: the plan, the job pool and the manifest share
one idempotence rule (the input digests), which reads best in one file; the command line (from
`add_arguments` on) is the part that could move out if it grows.
"""

from __future__ import annotations

import multiprocessing
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from runcontract.files import write_json
from runcontract.modes import make_dirs
from trainer.data import mixed, shards, synthetic
from trainer.data import records as rec_io
from trainer.data.errors import DataError
from trainer.data.labels import BEAT_CLASSES, RHYTHM_CLASSES, TOKEN_CLASS_NAMES
from trainer.data.splits import check_leaves_training, check_options, plan_split
from trainer.data.summary import SKIP_HINT
from trainer.data.tokenizers import SPECIAL_TOKENS, canonical, tokenize, vocab_size

# Bump when the tokenizers' output changes for the same inputs: every shard is then rebuilt.
TOKENS_VERSION = 3  # 3: a one-sample lead kept at its value; beats near a gap counted at the lead's own rate


def _source(data_path: Path | None, synthetic_params: dict[str, Any]) -> dict[str, Any]:
    if data_path is None:
        return {"synthetic": synthetic_params, "generator_version": synthetic.GENERATOR_VERSION}
    return {"path": str(data_path)}


def _synthetic_params(given: dict[str, Any] | None) -> dict[str, Any]:
    params: dict[str, Any] = dict(synthetic.DEFAULTS)
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
    skip_bad_records: bool = False, split: dict[str, Any] | None = None, trains: bool = True,
) -> Path:
    """Tokenize every record (skipping up-to-date ones) and return the shard directory.

    data_path None uses the synthetic generator (`synthetic_params`: records, seconds, seed, fs).
    A bad record (missing or truncated file, header and signal disagreeing, beats outside the signal,
    ...) raises DataError naming the file and the numbers, after the good records are written; the
    previous manifest stays in place. With `skip_bad_records` the bad records are left out and listed
    with their reason in the manifest's `skipped_records`. `split` (test_records or patient_pattern)
    decides the train/test split recorded in the manifest; unless other databases train (``trains`` False),
    it must leave records to train on.
    """
    t_start = time.perf_counter()
    plan = _plan(data_path, tokenizer, cache_root, dataset, synthetic_params)
    split_options = check_options(split)
    shard: Path = plan["shard"]
    jobs, rejected = _jobs(plan)  # rejected records are reported with those that fail to decode, below
    if trains:
        check_leaves_training([j["record"] for j in jobs] + [r["name"] for r in rejected], split_options)
    current = _read_manifest(shard / shards.MANIFEST)
    if _up_to_date(current, jobs, rejected, skip_bad_records, split_options):
        return shard  # the manifest is written last and atomically, no lock needed to read it
    with shards.prepare_lock(shard):
        make_dirs(shard / shards.RECORDS_DIR)
        shards.clean_temp_files(shard)
        current = _read_manifest(shard / shards.MANIFEST)  # another prepare may have finished meanwhile
        if _up_to_date(current, jobs, rejected, skip_bad_records, split_options):
            return shard
        known_bad = {s["name"]: s for s in (current or {}).get("skipped_records") or [] if s.get("digest")}
        done: dict[str, dict[str, Any]] = {}
        failed = {r["name"]: r for r in rejected}
        todo = []
        for job in jobs:
            meta = shards.read_meta(shard, job["file"])
            bad = known_bad.get(job["record"])
            if meta is not None and meta.get("digest") == job["digest"]:
                done[job["record"]] = meta
            elif skip_bad_records and bad is not None and bad["digest"] == job["digest"]:
                failed[job["record"]] = bad  # known bad, inputs unchanged: not decoded again
            else:
                todo.append(job)
        reused = len(done)
        for out in _run_jobs(todo, workers, progress, plan["dataset"], len(done), len(jobs)):
            if "error" in out:
                failed[out["name"]] = {"name": out["name"], "reason": out["error"], "stage": "decode",
                                       "digest": out["digest"]}
            else:
                done[out["name"]] = out
        order = [j["record"] for j in jobs] + [r["name"] for r in rejected]
        skipped = [failed[name] for name in order if name in failed]
        if skipped and not skip_bad_records:
            raise _bad_records_error(skipped, len(order))  # records written so far are reused next time
        if not done:
            raise DataError(f"{plan['folder']}: every record is bad, nothing to train on:\n"
                            + "\n".join(f"  {s['reason']}" for s in skipped))
        good = [j for j in jobs if j["record"] in done]
        manifest = _manifest(plan, good, done, skipped, reused=reused, workers=workers,
                             wall_s=time.perf_counter() - t_start, split=split_options)
        write_json(shard / shards.MANIFEST, manifest)
        shards.remove_unlisted(shard, [m["file"] for m in manifest["records"]])
    return shard


def prepare_data(data_path: str | Path | None, tokenizer: dict[str, Any], cache_root: str | Path,
                 workers: int = 1, progress: bool = False, dataset: str | None = None,
                 synthetic_params: dict[str, Any] | None = None, skip_bad_records: bool = False,
                 split: dict[str, Any] | None = None, train_data: list[str] | None = None) -> Path:
    """`prepare_dataset` of data_path, and with `train_data` of each further folder too, combined into one
    shard folder (trainer.data.mixed); returns the folder to open."""
    folders = mixed.check_mixable(tokenizer, train_data, data_path) if train_data else []
    first = prepare_dataset(data_path, tokenizer, cache_root, workers, progress, dataset, synthetic_params,
                            skip_bad_records, split, trains=not folders)
    if not folders:
        return first
    # the records key selects from the first database; the further ones train with every record
    further = {k: v for k, v in tokenizer.items() if k != "records"}
    parts = [prepare_dataset(folder, further, cache_root, workers, progress, None, None, skip_bad_records)
             for folder in folders]
    return mixed.combine(first, parts, split)


def _bad_records_error(bad: list[dict[str, Any]], total: int) -> DataError:
    """One error for every bad record found, each with its file and numbers, and the way to skip them."""
    if len(bad) == 1:
        return DataError(f"{bad[0]['reason']}\n({SKIP_HINT})")
    lines = "\n".join(f"  {b['reason']}" for b in bad)
    return DataError(f"{len(bad)} of {total} records are bad:\n{lines}\n({SKIP_HINT})")


def _jobs(plan: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One job per record, with the digest of its inputs and parameters; and the records rejected
    before decoding (missing or inconsistent files), each with its reason."""
    name, params, folder = plan["name"], plan["params"], plan["folder"]
    salt = shards.param_digest({"tokenizer": name, "params": params, "version": TOKENS_VERSION})
    jobs: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
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
            try:
                files = rec_io.input_files(folder, record, params["annotator"], with_signal)
            except DataError as exc:
                rejected.append({"name": record, "reason": str(exc), "stage": "inputs", "digest": None})
                continue
            jobs.append({"record": record, "folder": str(folder), "digest": rec_io.digest_files(files, salt)})
    for job in jobs:
        # Content-addressed: a changed record gets new files, so the previous manifest stays valid
        # until the new one replaces it.
        job.update(file=f"{rec_io.safe_name(job['record'])}.{job['digest'][:10]}", tokenizer=name,
                   params=params, shard=str(plan["shard"]))
    return jobs, rejected


def _read_manifest(path: Path) -> dict[str, Any] | None:
    import json

    try:
        manifest = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return manifest if isinstance(manifest, dict) and manifest.get("schema_version") == shards.SHARD_SCHEMA else None


def _up_to_date(manifest: dict[str, Any] | None, jobs: list[dict[str, Any]], rejected: list[dict[str, Any]],
                skip_bad_records: bool, split: dict[str, Any]) -> bool:
    """The manifest lists exactly these records with these digests, skips only what is still bad (and
    only when skipping is asked for), and records the split these options give."""
    if manifest is None:
        return False
    skipped = {s["name"]: s for s in manifest.get("skipped_records") or []}
    if skipped and not skip_bad_records:
        return False
    listed = [(r.get("name"), r.get("digest")) for r in manifest.get("records", [])]
    if listed != [(j["record"], j["digest"]) for j in jobs if j["record"] not in skipped]:
        return False
    still_bad = {j["record"]: j["digest"] for j in jobs if j["record"] in skipped}
    still_bad.update({r["name"]: None for r in rejected})
    if {n: s.get("digest") for n, s in skipped.items()} != still_bad:
        return False
    if any(skipped[r["name"]]["reason"] != r["reason"] for r in rejected):
        return False
    return (manifest.get("split") or {}).get("options", {}) == split


def _run_jobs(todo: list[dict[str, Any]], workers: int, progress: bool, label: str, already: int, total: int):
    """Run the record jobs inline (1 worker) or in a process pool; yield each record's sidecar (or error)."""
    show = progress and sys.stderr.isatty()
    count, beats = already, 0
    if workers <= 1 or len(todo) <= 1:
        results: Iterator[dict[str, Any]] = map(_process_record, todo)
        pool = None
    else:
        pool = multiprocessing.get_context(_start_method()).Pool(min(workers, len(todo)))
        results = pool.imap_unordered(_process_record, todo)
    try:
        for meta in results:
            count += 1
            beats += meta.get("n_beats", 0)
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
    """Decode, tokenize and write one record; its sidecar (also written, last), or {name, error}."""
    try:
        return _tokenize_record(job)
    except DataError as exc:  # reported with every other bad record, so one does not hide the rest
        return {"name": job["record"], "digest": job["digest"], "error": str(exc)}


def _tokenize_record(job: dict[str, Any]) -> dict[str, Any]:
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
        "beats_outside_signal": int(out.info.get("beats_outside_signal", 0)),
        "rhythm_counts": np.bincount(rhythm, minlength=len(RHYTHM_CLASSES)).tolist(),
        "decode_s": t1 - t0, "tokenize_s": t2 - t1, "write_s": t3 - t2,
        **{k: v for k, v in out.info.items() if k != "n_tokens"},
    }
    shards.write_meta(shard, job["file"], meta)
    return meta


def _manifest(plan: dict[str, Any], jobs: list[dict[str, Any]], done: dict[str, dict[str, Any]],
              skipped: list[dict[str, Any]], reused: int, workers: int, wall_s: float,
              split: dict[str, Any]) -> dict[str, Any]:
    name, params = plan["name"], plan["params"]
    metas = [done[j["record"]] for j in jobs]
    split_info = {**plan_split([m["name"] for m in metas], split).as_dict(), "options": split}
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
        "skipped_records": skipped,
        "split": split_info,
        "totals": {
            "records": len(metas),
            "skipped_records": len(skipped),
            "tokens": sum(m["n_tokens"] for m in metas),
            "beats": beats,
            "unclassified_beats": sum(m["unclassified_beats"] for m in metas),
            "beats_outside_signal": sum(m.get("beats_outside_signal", 0) for m in metas),
            "invalid_samples": sum(m.get("invalid_samples", 0) for m in metas),
            "beats_near_gap": sum(m.get("beats_near_gap", 0) for m in metas),
            "class_counts": np.sum([m["class_counts"] for m in metas], axis=0).astype(int).tolist(),
            "rhythm_counts": np.sum([m["rhythm_counts"] for m in metas], axis=0).astype(int).tolist(),
        },
        "timing": {
            "decode_s": decode, "tokenize_s": tok, "write_s": sum(m["write_s"] for m in metas),
            "wall_s": wall_s, "workers": workers, "records_up_to_date": reused,
            "tokenize_beats_per_s": beats / tok if tok > 0 else None,
        },
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
