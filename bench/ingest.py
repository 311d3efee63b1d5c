"""Ingest rate of metrics.jsonl lines into the cockpit store (target: >= 100,000 lines/s).

Prints figures, asserts nothing. Two paths are timed on the same realistic records (the fields of
docs/run-directory.md): one big read (start-up catch-up of a long run) and the follower's path (chunks of
64 KiB through FileCursor, one transaction per chunk, offset committed with the rows).

    python bench/ingest.py [--lines 200000] [--no-orjson]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cockpit.launch.follow as follow  # noqa: E402
from cockpit.launch.follow import Chunk, FileCursor  # noqa: E402
from cockpit.store import StudyStore  # noqa: E402
from runcontract.files import parse_jsonl_bytes


def make_lines(n: int, ranks: int = 4) -> bytes:
    rng = random.Random(0)
    out = []
    for i in range(n):
        rank = i % ranks
        step = (i // ranks + 1) * 10
        out.append(json.dumps({
            "v": 1, "t": 1.7e9 + i * 0.25, "rank": rank, "step": step, "epoch": 0, "loss": 5.0 / (1 + step / 1e3),
            "lr": 3e-4, "interval_s": 1.0, "steps_in_interval": 10, "data_wait_s": rng.random() * 0.1,
            "compute_s": 0.7, "comm_s": rng.random() * 0.2, "optimizer_s": 0.05, "samples_per_s": 512.0,
            "tokens_per_s": 131072.0, "mem_bytes": 1 << 30, "train_time_s": step * 0.1,
        }, separators=(",", ":")))
    return ("\n".join(out) + "\n").encode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--no-orjson", action="store_true", help="measure the standard-library fallback")
    args = ap.parse_args()
    if args.no_orjson:
        follow._fast_loads = None
    print(f"parser: {'orjson' if follow._fast_loads else 'json (standard library)'}")
    data = make_lines(args.lines)
    print(f"{args.lines:,} metrics lines, {len(data) / 1e6:.1f} MB ({len(data) / args.lines:.0f} bytes/line)")

    with tempfile.TemporaryDirectory() as tmp:
        store = StudyStore(Path(tmp) / "bench.sqlite")
        key = store.ensure_study("bench", "x")

        rates = {}
        for label, chunk_size in (("one read (catch-up)", len(data)), ("64 KiB chunks (follower)", 64 << 10)):
            cid = label.split()[0]
            cursor = FileCursor()
            t0 = time.perf_counter()
            parse_s = 0.0
            for off in range(0, len(data), chunk_size):
                p0 = time.perf_counter()
                fed = cursor.feed_jsonl(Chunk(f"{cid}/metrics.jsonl", off, data[off : off + chunk_size]))
                parse_s += time.perf_counter() - p0
                assert fed is not None
                store.ingest(key, cid, "metrics.jsonl", fed[0], cursor.committed, fed[1])
            total_s = time.perf_counter() - t0
            n = store.metric_count(key, cid)
            rates[label] = n / total_s
            print(f"{label:26s}: {n:,} stored, offset {store.get_offset(key, cid, 'metrics.jsonl')[0]:,} | "
                  f"parse {n / parse_s:>9,.0f} lines/s | store {n / (total_s - parse_s):>9,.0f} lines/s | "
                  f"total {n / total_s:>9,.0f} lines/s")

        t0 = time.perf_counter()
        reference = parse_jsonl_bytes(data)
        ref_s = time.perf_counter() - t0
        print(f"for comparison, line-by-line parse_jsonl_bytes: {len(reference.records) / ref_s:,.0f} lines/s")
        target = 100_000
        slowest = min(rates.values())
        print(f"slowest path / target ({target:,} lines/s): {slowest / target:.2f}")
        store.close()


if __name__ == "__main__":
    main()
