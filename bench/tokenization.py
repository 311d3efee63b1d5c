"""Tokenization throughput on the real PhysioNet databases: decode and tokenize reported separately.

(Not named tokenize.py: a script folder on sys.path would then shadow the standard library's
`tokenize`, which torch and numpy import, and break every script in bench/.)

  python bench/tokenization.py [--data-root ../shared/data/physionet] [--workers 1 2]

Prints, for `samples` on the whole mitdb and `beats` on nsrdb + sddb (annotation-only, 3.6 M beats),
with 1 and 2 worker processes: wall time of a fresh prepare, decode and tokenize seconds (summed over
records, i.e. CPU time in the workers), beats/s, and the speed-up of 2 workers; then the annotation
decoder against wfdb.rdann, and the comparison with the published study (11 datasets in 11 hours).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from trainer.data.labels import IS_BEAT  # noqa: E402
from trainer.data.mitann import read_annotations  # noqa: E402
from trainer.data.prepare import prepare_dataset  # noqa: E402
from trainer.data.synthetic import generate_record  # noqa: E402

STUDY_SECONDS_PER_DATASET = 11 * 3600 / 11  # arXiv 2503.21033: token generation, 11 datasets in 11 hours


def fresh_prepare(folders: list[Path], tokenizer: str, workers: int) -> dict[str, float]:
    """Prepare the folders into an empty cache; sum the manifests' figures."""
    cache = Path(tempfile.mkdtemp(prefix="hlm-bench-"))
    try:
        t0 = time.perf_counter()
        manifests = [json.loads((prepare_dataset(f, {"name": tokenizer}, cache, workers=workers)
                                 / "manifest.json").read_text()) for f in folders]
        wall = time.perf_counter() - t0
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {
        "wall_s": wall,
        "beats": sum(m["totals"]["beats"] for m in manifests),
        "records": sum(m["totals"]["records"] for m in manifests),
        "decode_s": sum(m["timing"]["decode_s"] for m in manifests),
        "tokenize_s": sum(m["timing"]["tokenize_s"] for m in manifests),
        "write_s": sum(m["timing"]["write_s"] for m in manifests),
    }


def annotation_decoding(folders: list[Path], wfdb_files: int) -> None:
    files = [p for f in folders for p in sorted(f.glob("*.atr")) + sorted(f.glob("*.ari"))]
    t0 = time.perf_counter()
    n = sum(len(read_annotations(p)) for p in files)
    ours = time.perf_counter() - t0
    import wfdb

    sub = files[:wfdb_files]
    t0 = time.perf_counter()
    m = sum(len(wfdb.rdann(str(p.with_suffix("")), p.suffix[1:]).sample) for p in sub)
    ref = time.perf_counter() - t0
    print(f"annotation decoding: {len(files)} files, {n:,} annotations in {ours:.3f} s = {n / ours / 1e6:.1f} M/s "
          f"(wfdb.rdann on {len(sub)} of them: {m / ref / 1e3:.0f} k/s; ratio {n / ours / (m / ref):.0f}x)")


def in_memory(folders: list[Path], tokenizer: str, repeats: int = 5) -> None:
    """Decode every record once, then time tokenization alone (best of `repeats`, one core)."""
    from trainer.data.records import list_records, read_record
    from trainer.data.tokenizers import canonical, tokenize

    name, params = canonical({"name": tokenizer})
    lead = params["lead"] if name == "samples" else None
    t0 = time.perf_counter()
    recs = [read_record(f, r, params["annotator"], lead) for f in folders for r in list_records(f)]
    decode = time.perf_counter() - t0
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        beats = sum(len(tokenize(name, params, r).beats) for r in recs)
        best = min(best, time.perf_counter() - t0)
    print(f"{tokenizer:9} in memory, 1 core: decode {decode:.2f} s ({beats / decode:,.0f} beats/s), "
          f"tokenize {best:.3f} s = {beats / best:,.0f} beats/s (best of {repeats})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-root", type=Path, default=REPO.parent / "shared" / "data" / "physionet")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--wfdb-files", type=int, default=4, help="annotation files to time wfdb.rdann on (slow)")
    args = ap.parse_args(argv)
    root = args.data_root
    if not (root / "mitdb" / "RECORDS").exists():
        print(f"{root}: PhysioNet data not found (give --data-root)", file=sys.stderr)
        return 2

    jobs = [("samples", "mitdb", [root / "mitdb"]),
            ("beats", "nsrdb+sddb", [root / "nsrdb-annotations", root / "sddb-annotations"])]
    print(f"{'tokenizer':9} {'data':11} {'workers':>7} {'records':>7} {'beats':>10} {'wall s':>7} "
          f"{'decode s':>8} {'token s':>8} {'write s':>7} {'beats/s wall':>13} {'tok beats/s':>12}")
    for tok, label, folders in jobs:
        walls = {}
        for w in args.workers:
            r = fresh_prepare(folders, tok, w)
            walls[w] = r["wall_s"]
            print(f"{tok:9} {label:11} {w:>7} {r['records']:>7} {r['beats']:>10,} {r['wall_s']:>7.2f} "
                  f"{r['decode_s']:>8.2f} {r['tokenize_s']:>8.3f} {r['write_s']:>7.2f} "
                  f"{r['beats'] / r['wall_s']:>13,.0f} {r['beats'] / r['tokenize_s']:>12,.0f}")
            if tok == "samples" and w == 1:
                mitdb_wall = r["wall_s"]
        if len(walls) > 1:
            lo, hi = min(walls), max(walls)
            print(f"  {label}: {hi} workers vs {lo}: speed-up {walls[lo] / walls[hi]:.2f}x "
                  f"(prepare wall time includes hashing inputs and writing shards)")
    for tok, _, folders in jobs:
        in_memory(folders, tok)
    annotation_decoding([root / "nsrdb-annotations", root / "sddb-annotations"], args.wfdb_files)
    t0 = time.perf_counter()
    beats = sum(int(IS_BEAT[generate_record(i, 300, 0).ann.code].sum()) for i in range(8))
    print(f"synthetic generator: 8 x 300 s records, {beats:,} beats in {time.perf_counter() - t0:.2f} s")
    if 1 in args.workers:
        print(f"published study: 11 datasets in 11 h = {STUDY_SECONDS_PER_DATASET:.0f} s per dataset; "
              f"whole mitdb here on 1 core: {mitdb_wall:.2f} s ({STUDY_SECONDS_PER_DATASET / mitdb_wall:,.0f}x less)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
