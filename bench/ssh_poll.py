"""SSH round trips and seconds per poll with 1, 10, 100 and 1000 jobs in the queue; memory with 1000 jobs.

Runs against the project's test infrastructure: the real single-node Slurm (tests/infra/slurm.sh) and a
private real sshd (tests/infra/sshd.sh) on a free loopback port. The queue is filled cheaply with held jobs
(`sbatch --hold --wrap true`, submitted in one remote loop per batch) and cancelled at the end.
Prints figures; asserts nothing. Needs root (sshd, the test user).

    python bench/ssh_poll.py [--counts 1,10,100,1000] [--polls 5]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from cockpit.launch.slurm.client import SlurmClient  # noqa: E402
from cockpit.launch.slurm.parse import SQUEUE_FORMAT, parse_squeue  # noqa: E402
from cockpit.launch.ssh import SshConnection, SshTarget  # noqa: E402
from cockpit.store import StudyStore  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_infra(state: Path) -> SshTarget:
    subprocess.run(["bash", str(REPO / "tests/infra/slurm.sh"), "up"], check=True, capture_output=True)
    out = subprocess.run(["bash", str(REPO / "tests/infra/sshd.sh"), "start", str(state), str(_free_port())],
                         check=True, capture_output=True, text=True).stdout
    env = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    return SshTarget(host="127.0.0.1", port=int(env["SSHD_PORT"]), user=env["SSHD_USER"],
                     identity_files=(env["SSHD_KEY"],), identities_only=True, known_hosts=env["SSHD_KNOWN_HOSTS"])


async def _median_s(fn, n: int) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


async def bench(counts: list[int], polls: int) -> None:
    state = Path(tempfile.mkdtemp(prefix="hlm-bench-sshd-"))
    state.chmod(0o755)
    target = _start_infra(state)
    prefix = f"bench-{uuid.uuid4().hex[:6]}-"
    conn = SshConnection(target)
    client = SlurmClient(conn)
    try:
        t0 = time.perf_counter()
        await conn.connection()
        print(f"connect (asyncssh, ed25519, strict host key): {1e3 * (time.perf_counter() - t0):.1f} ms")
        reused = await _median_s(lambda: conn.run("true"), 50)

        async def fresh() -> None:
            c = SshConnection(target)
            await c.run("true")
            await c.close()

        new = await _median_s(fresh, 10)
        print(f"command on the reused connection: {1e3 * reused:.1f} ms median of 50")
        print(f"new connection per command      : {1e3 * new:.1f} ms median of 10 ({new / reused:.0f}x)")

        queued = 0
        print(f"\n{'jobs':>6} {'submit s':>9} {'poll s (median)':>16} {'round trips/poll':>17} {'parsed':>7}")
        for n in counts:
            t0 = time.perf_counter()
            while queued < n:
                batch = min(n - queued, 250)
                cmd = (f"for i in $(seq {queued + 1} {queued + batch}); do sbatch --hold --parsable "
                       f"--job-name={prefix}$i --comment=hlm-bench --output=/dev/null --wrap true "
                       f">/dev/null || exit 1; done")
                res = await conn.run(cmd, timeout=600)
                if res.exit_status != 0:
                    raise SystemExit(f"filling the queue failed: {res.stderr.strip()}")
                queued += batch
            submit_s = time.perf_counter() - t0
            rt0, sq0 = conn.round_trips, client.calls.get("squeue", 0)
            parsed = None

            async def poll() -> None:
                nonlocal parsed
                parsed = await client.squeue(name_prefix=prefix)

            poll_s = await _median_s(poll, polls)
            per_poll = (conn.round_trips - rt0) / polls
            assert client.calls["squeue"] - sq0 == polls
            print(f"{n:>6} {submit_s:>9.2f} {poll_s:>16.4f} {per_poll:>17.0f} {len(parsed.jobs):>7}")

        # memory: one poll's text with the largest queue, parsed and written to a store like a runner tick
        res = await conn.run(f"squeue --me --noheader --array --format='{SQUEUE_FORMAT}'")
        text = res.stdout
        with tempfile.TemporaryDirectory() as tmp:
            store = StudyStore(Path(tmp) / "bench.sqlite")
            key = store.ensure_study("bench", "x")
            jobs = parse_squeue(text, name_prefix=prefix).jobs
            store.upsert_configs(key, [{"config_id": j.name, "group_id": "g", "is_baseline": True, "workers": 1,
                                        "nodes": 1, "values": {}, "run_dir": "/x", "total_steps": 100} for j in jobs])
            rows = {}
            with store.tx():
                for j in jobs:
                    rows[j.job_id] = store.record_intent(key, j.name)
                    store.record_submitted(rows[j.job_id], j.job_id)

            def tick() -> tuple[float, float, float, int]:
                t0 = time.perf_counter()
                parsed = parse_squeue(text, name_prefix=prefix).jobs
                t1 = time.perf_counter()
                with store.tx():  # as a runner tick does: one commit for the whole queue
                    for j in parsed:
                        store.set_job_state(rows[j.job_id], j.state.value, reason=j.reason, elapsed_s=j.elapsed_s)
                t2 = time.perf_counter()
                snap = store.snapshot("bench")
                return t1 - t0, t2 - t1, time.perf_counter() - t2, len(snap.configs)

            tick()  # warm the snapshot's curve cache
            samples = list(zip(*(tick() for _ in range(5)), strict=True))
            parse_s, update_s, snap_s, n_rows = (statistics.median(x) for x in samples)
            tracemalloc.start()
            tick()
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            print(f"\nwith {len(jobs)} jobs (median of 5): squeue text {len(text) / 1024:.0f} KiB; parse "
                  f"{1e3 * parse_s:.1f} ms; store update {1e3 * update_s:.1f} ms (one transaction); snapshot "
                  f"{1e3 * snap_s:.1f} ms ({n_rows:.0f} rows)")
            print(f"peak Python allocations of one such tick: {peak / 2**20:.1f} MiB; "
                  f"process max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
            store.close()
    finally:
        ids = [j.job_id for j in (await client.squeue(name_prefix=prefix)).jobs]
        for i in range(0, len(ids), 500):
            await conn.run("scancel " + " ".join(ids[i:i + 500]))
        await conn.close()
        subprocess.run(["bash", str(REPO / "tests/infra/sshd.sh"), "stop", str(state)], capture_output=True)
        shutil.rmtree(state, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--counts", default="1,10,100,1000")
    ap.add_argument("--polls", type=int, default=5)
    args = ap.parse_args()
    asyncio.run(bench([int(c) for c in args.counts.split(",")], args.polls))


if __name__ == "__main__":
    main()
