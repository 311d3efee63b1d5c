"""A site's bad days during a study on the test Slurm over SSH: the controller away, a maintenance window, a
full work directory.

    sudo flock /tmp/test-cluster.lock python bench/faults.py [--case controller|maintenance|quota|all]
        [--outage 120] [--mode stop|pause] [--configs 6] [--steps 40]

Needs root, the test Slurm (tests/infra/slurm.sh) and Debian's sshd (tests/infra/sshd.sh), as the Slurm tests
do. The study: --configs one-worker configurations of real training on MIT-BIH record 101, two jobs at once.

  controller   once a configuration has finished and two are queued or running (the rest not yet submitted),
               slurmctld is stopped for --outage seconds (tests/infra/slurm.sh ctld stop: it saves its state;
               the jobs go on on their nodes) while the cockpit ticks, then started again (--mode pause:
               SIGSTOP, then SIGCONT: a controller that hangs); the study runs on to its end.
  maintenance  a MAINT reservation on the study's node starts in 6 minutes for 20; the preflight's row names
               it and the time limit that fits; a study with a 10-minute time limit is submitted (its job waits:
               maintenance) and cancelled, the same study with the time limit named runs to its end.
  quota        the study's work directory is a 16 MB tmpfs (tests/infra/small_fs.sh); once a configuration has
               finished and two are queued or running, it is filled up for --full seconds, then freed; the
               study runs on to its end.

Printed per case: configurations lost (no completed job in Slurm's accounting), duplicated (two or more),
node-hours spent on runs that could not succeed (jobs ended failed, lost or timed out: elapsed x nodes), and
what the cockpit did meanwhile (store changes during the outage, unanswered polls and their back-off, when it
noticed the controller back; the preflight row, the pending reason shown).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.cluster import TestCluster, test_cluster  # noqa: E402
from cockpit.launch.backend import AdaptiveInterval  # noqa: E402
from cockpit.launch.slurm.backend import SlurmBackend  # noqa: E402
from cockpit.run.preflight import maintenance_check  # noqa: E402
from cockpit.run.runner import StudyRunner, TickReport  # noqa: E402
from cockpit.store import StudyStore  # noqa: E402
from cockpit.study.spec import Study, load_study  # noqa: E402
from tests.control.conftest import slurm_cluster_table, study_text  # noqa: E402
from tests.studies import mitdb_data, study_toml  # noqa: E402

SLURM_SH = ROOT / "tests" / "infra" / "slurm.sh"
SMALL_FS_SH = ROOT / "tests" / "infra" / "small_fs.sh"
FAST = AdaptiveInterval(fast_s=0.5, running_s=1.0, slow_s=2.0)


def ctld(action: str) -> None:
    subprocess.run(["bash", str(SLURM_SH), "ctld", action], check=True, timeout=60)


def small_fs(*args: str) -> None:
    subprocess.run(["bash", str(SMALL_FS_SH), *args], check=True, timeout=120)


def write_study(c: TestCluster, name: str, configs: int, steps: int, **cluster: object) -> Study:
    windows = ", ".join(str(32 + 8 * i) for i in range(configs))
    path = c.work / f"{name}.toml"
    path.write_text(study_text(name=name, sshd=c.sshd, workdir=c.work, slurm_env=c.env, sweep=f"window = [{windows}]",
                               steps=steps, max_concurrent_jobs=2, cores_per_node=2, **cluster))
    subprocess.run(["chown", "-R", f"{c.env['HLM_TEST_USER']}:", str(c.work)], check=True)
    return load_study(path)


def accounting(c: TestCluster, study: Study, since: float) -> dict[str, list[tuple[str, float, int]]]:
    """Each configuration's jobs in Slurm's accounting: (state, elapsed s, nodes)."""
    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since - 60))
    out: dict[str, list[tuple[str, float, int]]] = {}
    for cfg in study.runnable():
        res = subprocess.run(["sacct", "-X", "-n", "-P", "-S", start, "--name", f"{study.name}-{cfg.config_id}",
                              "-o", "State,ElapsedRaw,NNodes"], capture_output=True, text=True,
                             env={"SLURM_CONF": f"{c.env['HLM_SLURM_DIR']}/etc/slurm.conf", "PATH": "/usr/bin:/bin"})
        rows = [line.split("|") for line in res.stdout.splitlines() if line.count("|") == 2]
        out[cfg.config_id] = [(s.split()[0], float(e or 0), int(n or 1)) for s, e, n in rows]
    return out


def figures(jobs: dict[str, list[tuple[str, float, int]]]) -> str:
    lost = sum(1 for js in jobs.values() if not any(s == "COMPLETED" for s, _, _ in js))
    duplicated = sum(1 for js in jobs.values() if len(js) > 1)
    wasted = sum(e * n for js in jobs.values() for s, e, n in js if s in ("FAILED", "TIMEOUT", "NODE_FAIL")) / 3600
    return f"configurations lost {lost}, duplicated {duplicated}; node-hours on runs that could not succeed {wasted:.4f}"


async def controller_case(c: TestCluster, configs: int, steps: int, outage_s: float, mode: str) -> None:
    t0 = time.time()
    study = write_study(c, f"fault-ctld-{uuid.uuid4().hex[:4]}", configs, steps)
    store = StudyStore(c.work / "ctld.sqlite")
    runner = StudyRunner(study, SlurmBackend.from_study(study, follow_interval_s=0.5), store, interval=FAST)
    reports: list[TickReport] = []
    try:
        while not (store.results(runner.key) and len(store.active_jobs(runner.key)) == 2):
            reports.append(await runner.tick())
            await asyncio.sleep(runner.interval_s)
        rows = lambda: [(j.job_id, j.state, j.reason, j.ended_at) for j in store.jobs(runner.key)]  # noqa: E731
        before, changes = rows(), 0
        done_before = len(store.results(runner.key))
        ctld(mode)  # stop (SIGTERM, then started again) or pause (SIGSTOP, then SIGCONT)
        stopped = time.monotonic()
        waits: list[float] = []
        try:
            while time.monotonic() - stopped < outage_s:
                reports.append(await runner.tick())
                waits.append(runner.interval_s)
                changes += rows() != before
                await asyncio.sleep(min(runner.interval_s, max(0.0, outage_s - (time.monotonic() - stopped))))
        finally:
            ctld("start" if mode == "stop" else "resume")
        started = time.monotonic()
        while not reports[-1].scheduler_back:  # the first poll after the start
            reports.append(await runner.tick())
            if not reports[-1].scheduler_back:
                await asyncio.sleep(runner.interval_s)
        noticed = time.monotonic() - started
        await runner.run(timeout_s=1200, on_tick=reports.append)
    finally:
        await runner.close()
    wall = time.time() - t0
    jobs = accounting(c, study, t0)
    print(f"controller away ({'stopped' if mode == 'stop' else 'paused: SIGSTOP'}) {outage_s:.0f} s mid-study ({configs} configurations, {steps} steps, 2 at once; "
          f"{done_before} finished, 2 queued or running when it stopped); study over after {wall:.0f} s")
    print(f"  {figures(jobs)}")
    print(f"  store changes while away: {changes} ticks of {len(waits)}; polls unanswered {len(waits)}, the waits "
          f"between them {', '.join(f'{w:.1f}' for w in waits)} s; noticed back {noticed:.1f} s after the start")
    print(f"  said: {next((p for p in store.problems(runner.key) if 'answering again' in p), '')}")
    store.close()


async def maintenance_case(c: TestCluster, steps: int) -> None:
    t0 = time.time()
    env = {"SLURM_CONF": f"{c.env['HLM_SLURM_DIR']}/etc/slurm.conf", "PATH": "/usr/bin:/bin"}
    node = subprocess.run(["sinfo", "-h", "-p", c.env["HLM_SLURM_PARTITION"], "-o", "%N"], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()
    resv = f"hlm-maint-{uuid.uuid4().hex[:4]}"
    subprocess.run(["scontrol", "create", "reservation", f"reservationname={resv}", "starttime=now+6minutes",
                    "duration=20", f"nodes={node}", "flags=maint", "users=root"], env=env, check=True)
    try:
        study = write_study(c, f"fault-maint-{uuid.uuid4().hex[:4]}", 1, steps, time_limit="00:10:00")
        backend = SlurmBackend.from_study(study)
        check = await maintenance_check(study, backend)
        await backend.close()
        print(f"maintenance reservation {resv} on {node} from now+6 min for 20 min; time limit 00:10:00")
        print(f"  preflight row: {check.verdict}: {check.found}; expected {check.expected}")
        store = StudyStore(c.work / "maint.sqlite")
        runner = StudyRunner(study, SlurmBackend.from_study(study), store, interval=FAST)
        shown_at, reason = None, ""
        try:
            while time.time() - t0 < 180:
                await runner.tick()
                jobs = store.snapshot(study.name).jobs
                if jobs and jobs[-1].reason.startswith("waiting: maintenance"):
                    shown_at, reason = time.time() - t0, jobs[-1].reason
                    break
                await asyncio.sleep(1.0)
            failed = store.snapshot(study.name).counts.failed
            await runner.cancel(study.runnable()[0].config_id)
        finally:
            await runner.close()
            store.close()
        print(f"  the job of time limit 00:10:00: pending, shown as {reason!r} {shown_at or 0:.0f} s after the start; "
              f"failed configurations {failed}")
        fits = check.expected.removeprefix("time_limit <= ")
        fitted = write_study(c, f"{study.name}-fit", 1, steps, time_limit=fits)
        store = StudyStore(c.work / "fit.sqlite")
        runner = StudyRunner(fitted, SlurmBackend.from_study(fitted), store, interval=FAST)
        began = time.time()
        try:
            await runner.run(timeout_s=300)
        finally:
            await runner.close()
        print(f"  the same study with time limit {fits}: completed in {time.time() - began:.0f} s, before the "
              f"maintenance; {figures(accounting(c, fitted, began))}")
        store.close()
    finally:
        subprocess.run(["scontrol", "delete", f"reservationname={resv}"], env=env, check=False)


async def quota_case(c: TestCluster, configs: int, steps: int, full_s: float) -> None:
    """The study's work directory a 16 MB tmpfs the test user owns (tests/infra/small_fs.sh), its token shards
    beside it: filled up once a configuration has finished and two are queued or running, freed --full later."""
    t0 = time.time()
    fs, tokens = c.work / "small", c.work / "tokens"
    small_fs("mount", str(fs), "16m", c.env["HLM_TEST_USER"])
    try:
        tokens.mkdir()
        name = f"fault-quota-{uuid.uuid4().hex[:4]}"
        path = c.work / f"{name}.toml"
        path.write_text(study_toml(name, fs, cluster=slurm_cluster_table(c.sshd, c.env, max_concurrent_jobs=2),
                                   data=mitdb_data(tokens), train={"steps": steps, "window": 32},
                                   sweep={"window": [32 + 8 * i for i in range(configs)]}))
        subprocess.run(["chown", "-R", f"{c.env['HLM_TEST_USER']}:", str(path), str(tokens)], check=True)
        study = load_study(path)
        store = StudyStore(c.work / "quota.sqlite")
        runner = StudyRunner(study, SlurmBackend.from_study(study, follow_interval_s=0.5), store, interval=FAST)
        try:
            while not (store.results(runner.key) and len(store.active_jobs(runner.key)) == 2):
                await runner.tick()
                await asyncio.sleep(runner.interval_s)
            done_before = len(store.results(runner.key))
            small_fs("fill", str(fs))
            filled = time.monotonic()
            submitted_full, paused_after, line = 0, None, ""
            while time.monotonic() - filled < full_s:
                report = await runner.tick()
                submitted_full += len(report.submitted)
                if report.disk and report.disk["paused"] and paused_after is None:
                    paused_after, line = time.monotonic() - filled, report.waiting
                await asyncio.sleep(runner.interval_s)
            small_fs("free", str(fs))
            freed = time.monotonic()
            resumed: list[float] = []

            def on_tick(report: TickReport) -> None:
                if report.submitted and not resumed:
                    resumed.append(time.monotonic() - freed)

            await runner.run(timeout_s=1200, on_tick=on_tick)
        finally:
            await runner.close()
        jobs = accounting(c, study, t0)
        lost = sum(1 for js in jobs.values() if not any(s == "COMPLETED" for s, _, _ in js))
        duplicated = sum(1 for js in jobs.values() if sum(s == "COMPLETED" for s, _, _ in js) > 1)
        failed = [(e, n) for js in jobs.values() for s, e, n in js if s != "COMPLETED"]
        print(f"work directory full ({fs}, tmpfs of 16 MB) for {full_s:.0f} s mid-study ({configs} configurations, "
              f"{steps} steps, 2 at once; {done_before} finished, 2 queued or running when it filled); study over "
              f"after {time.time() - t0:.0f} s")
        print(f"  configurations lost {lost}, completed twice {duplicated}; jobs that ended for the full directory "
              f"(exit 5) {len(failed)}, each run again once; node-hours on runs that could not succeed "
              f"{sum(e * n for e, n in failed) / 3600:.5f} ({sum(e * n for e, n in failed):.0f} node-seconds)")
        print(f"  submitted while full: {submitted_full}; paused {paused_after or 0:.1f} s after it filled; "
              f"submitting again {resumed[0] if resumed else 0:.1f} s after it was freed")
        print(f"  said: {line}")
        store.close()
    finally:
        small_fs("umount", str(fs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", choices=("controller", "maintenance", "quota", "all"), default="all")
    ap.add_argument("--outage", type=float, default=120.0, help="seconds the controller stays away")
    ap.add_argument("--mode", choices=("stop", "pause"), default="stop",
                    help="how it goes away: stopped and started again, or paused (SIGSTOP) and resumed")
    ap.add_argument("--configs", type=int, default=6)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--full", type=float, default=60.0, help="seconds the work directory stays full")
    args = ap.parse_args()
    with test_cluster("bench/faults.py", "faults") as c:
        if args.case in ("controller", "all"):
            asyncio.run(controller_case(c, args.configs, args.steps, args.outage, args.mode))
        if args.case in ("maintenance", "all"):
            asyncio.run(maintenance_case(c, args.steps))
        if args.case in ("quota", "all"):
            asyncio.run(quota_case(c, args.configs, args.steps, args.full))


if __name__ == "__main__":
    main()
