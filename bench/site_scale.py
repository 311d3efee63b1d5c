"""A study of many jobs on the test Slurm under a per-user submit limit, the cockpit killed half way.

    sudo python bench/site_scale.py [--configs 288] [--steps 2]

Needs root, the test Slurm (tests/infra/slurm.sh) and Debian's sshd (tests/infra/sshd.sh), as the Slurm
tests do. The study: --configs one-worker configurations of real training on MIT-BIH record 101 (--steps
steps each, one window value per configuration), QOS `capped` (MaxSubmitJobsPerUser=3, MaxJobsPerUser=2),
max_concurrent_jobs unset (the pace comes from the limits). The cockpit runs in a child process with its own
store, reached over SSH like a real cluster; it is SIGKILLed once half the results are in and started again
on the same store, which runs the study to the end. Printed:

  jobs lost and duplicated   Slurm's own completion log (jobcomp) against the matrix: a configuration with no
                             completed job is lost, one with two jobs duplicated
  polls                      squeue round trips, and the seconds one poll costs (median, max), per cockpit
  followed                   bytes and files followed into the store (its follow offsets), per second of study
  snapshot                   building the TUI's snapshot of the final store, every row present
  TUI refresh                `cockpit open` of the final store, headless: one refresh of the table with every
                             row (apply, and apply until the app is idle again), median of 10
  store                      the SQLite file (and its WAL) at the end
  RSS                        each cockpit process's resident memory at its start and at its end, and its growth
                             split in two: over the ticks that stored new results, and over the ticks that
                             stored none (growth with time alone)
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.cluster import test_cluster  # noqa: E402
from tests.control.conftest import study_text  # noqa: E402
from tests.studies import PHYSIONET  # noqa: E402

CHILD = """
import asyncio, json, os, resource, statistics, sys, time
sys.path.insert(0, {root!r})
from cockpit.launch.backend import AdaptiveInterval
from cockpit.launch.slurm.backend import SlurmBackend
from cockpit.run.runner import StudyRunner
from cockpit.study.spec import load_study
from cockpit.store import StudyStore


def rss_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024


async def main():
    study = load_study({study!r})
    backend = SlurmBackend.from_study(study, follow_interval_s=1.0)
    store = StudyStore({store!r})
    runner = StudyRunner(study, backend, store, interval=AdaptiveInterval(fast_s=1.0, running_s=2.0, slow_s=4.0))
    stats = {{"rss_start_mib": rss_mib(), "polls_s": [], "ticks": 0, "waits": 0, "rss": []}}
    poll = backend.poll

    async def timed():
        t = time.perf_counter()
        jobs = await poll()
        stats["polls_s"].append(time.perf_counter() - t)
        return jobs

    backend.poll = timed

    def on_tick(report):
        stats["ticks"] += 1
        stats["waits"] += bool(report.waiting)
        stats["results"] = len(store.results(runner.key))
        stats["squeue"] = backend.slurm.calls.get("squeue", 0)
        stats["rss_end_mib"] = rss_mib()
        stats["rss"].append([time.time(), stats["results"], stats["rss_end_mib"]])
        tmp = {out!r} + ".tmp"
        with open(tmp, "w") as f:
            json.dump(stats, f)
        os.replace(tmp, {out!r})

    try:
        await runner.run(on_tick=on_tick)
    finally:
        await runner.close()


asyncio.run(main())
"""


def cockpit(study: Path, store: Path, out: Path) -> subprocess.Popen[bytes]:
    code = CHILD.format(root=str(ROOT), study=str(study), store=str(store), out=str(out))
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def read_stats(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def rss_split(samples: list[list[float]]) -> tuple[float, int, float, float]:
    """(MiB grown over ticks that stored new results, those results, MiB grown over ticks that stored none,
    the seconds those ticks spanned) from the per-tick (time, results, RSS) samples."""
    with_results = without = idle_s = 0.0
    added = 0
    for (t0, r0, m0), (t1, r1, m1) in itertools.pairwise(samples):
        if r1 > r0:
            with_results += m1 - m0
            added += int(r1 - r0)
        else:
            without += m1 - m0
            idle_s += t1 - t0
    return with_results, added, without, idle_s


async def tui_refresh_ms(store: Path, name: str) -> tuple[float, float]:
    """`cockpit open STORE` headless: (apply, apply until idle) of one refresh with every row, median ms of 10."""
    from cockpit.commands.open import browse

    app, reader = browse(store, name, poll=None)
    applied, idle = [], []
    try:
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.pause()
            snap = reader.snapshot(name)
            for _ in range(10):
                t0 = time.perf_counter()
                app._apply(snap)
                applied.append(time.perf_counter() - t0)
                await pilot.pause()
                idle.append(time.perf_counter() - t0)
            await pilot.press("q")
    finally:
        reader.close()
    return 1000 * statistics.median(applied), 1000 * statistics.median(idle)


def completed_jobs(state_dir: Path, name: str) -> dict[str, int]:
    """Config id -> how many of its jobs Slurm's completion log holds as COMPLETED."""
    text = (state_dir / "log" / "jobcomp.txt").read_text()
    out: dict[str, int] = {}
    for cid in re.findall(rf"JobId=\d+ \S+ \S+ Name={re.escape(name)}-(\w+) .*?JobState=COMPLETED", text):
        out[cid] = out.get(cid, 0) + 1
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=288)
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()
    with test_cluster("bench/site_scale.py", "scale") as c:
        measure(args, c.env, c.sshd, c.work)


def measure(args: argparse.Namespace, env: dict[str, str], sshd: Any, work: Path) -> None:
    """The study of --configs jobs, the first cockpit killed half way, the second to the end; the figures."""
    if not (PHYSIONET / "mitdb" / "101.hea").exists():  # else every job fails on its data, and all are "lost"
        sys.exit(f"MIT-BIH record 101 not found under {PHYSIONET}: the study trains on it (shared/ beside the checkout)")
    name = f"scale{os.getpid()}"
    windows = ", ".join(str(32 + i) for i in range(args.configs))
    study = work / f"{name}.toml"
    study.write_text(study_text(name=name, sshd=sshd, workdir=work, slurm_env=env, sweep=f"window = [{windows}]",
                                steps=args.steps, qos="capped", max_concurrent_jobs=None, cores_per_node=2,
                                gpus_per_node=1))
    store = work / "cockpit.sqlite"
    outs = [work / "first.json", work / "second.json"]
    started = time.monotonic()
    first = cockpit(study, store, outs[0])
    while read_stats(outs[0]).get("results", 0) < args.configs // 2 and first.poll() is None:
        time.sleep(1.0)
    first.send_signal(signal.SIGKILL)
    first.wait()
    killed_at = time.monotonic() - started
    second = cockpit(study, store, outs[1])
    _, err = second.communicate()
    if second.returncode != 0:
        sys.exit(f"the second cockpit failed: {err.decode()[-2000:]}")
    wall = time.monotonic() - started
    done = completed_jobs(Path(env["HLM_SLURM_DIR"]), name)
    from cockpit.store import StudyStore
    from cockpit.study.spec import load_study

    ids = [c.config_id for c in load_study(study).runnable()]
    lost = sum(1 for cid in ids if done.get(cid, 0) == 0)
    duplicated = sum(1 for cid in ids if done.get(cid, 0) > 1)
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    followed_bytes, followed_files = db.execute("SELECT COALESCE(SUM(offset), 0), COUNT(*) FROM follow_offsets").fetchone()
    db.close()
    reader = StudyStore(store, read_only=True)
    t0 = time.perf_counter()
    snap = reader.snapshot(name)
    snapshot_s = time.perf_counter() - t0
    reader.close()
    apply_ms, idle_ms = asyncio.run(tui_refresh_ms(store, name))
    size = sum(p.stat().st_size for p in (store, store.with_name(store.name + "-wal")) if p.exists())
    print(f"{len(ids)} configurations, {args.steps} steps each, QOS capped (3 queued or running per user); "
          f"cockpit SIGKILLed at {killed_at:.0f} s, study over at {wall:.0f} s")
    print(f"jobs lost {lost}, duplicated {duplicated} (Slurm's completion log); {len(snap.configs)} rows, "
          f"{snap.counts.done} done in the store")
    for label, path in zip(("first cockpit", "second cockpit"), outs, strict=True):
        s = read_stats(path)
        polls = s.get("polls_s") or [0.0]
        print(f"{label}: {s.get('ticks', 0)} ticks, {s.get('squeue', 0)} squeue round trips, one poll "
              f"{1000 * statistics.median(polls):.0f} ms median / {1000 * max(polls):.0f} ms max, "
              f"{s.get('waits', 0)} ticks waiting at the limit; RSS {s.get('rss_start_mib', 0):.0f} -> "
              f"{s.get('rss_end_mib', 0):.0f} MiB")
        grown, added, idle, idle_s = rss_split(s.get("rss", []))
        print(f"  RSS grew {grown:+.1f} MiB over the ticks that stored {added} new results, {idle:+.1f} MiB over "
              f"the ticks that stored none ({idle_s:.0f} s)")
    print(f"followed {followed_bytes:,} bytes in {followed_files} files: {followed_bytes / wall:,.0f} bytes/s, "
          f"{followed_files / wall:.1f} files/s of study")
    print(f"snapshot of the final store, all {len(snap.configs)} rows: {1000 * snapshot_s:.0f} ms; "
          f"store {size / 2**20:.1f} MiB")
    print(f"TUI refresh of the final store, all {len(snap.configs)} rows: {apply_ms:.0f} ms to apply, {idle_ms:.0f} ms "
          f"until idle (cockpit open, headless; median of 10)")


if __name__ == "__main__":
    main()
