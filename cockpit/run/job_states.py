"""The store's job states kept true to the cluster: each poll's states (a requeued job shown as such), a
final state and result for each job that left the queue, and after a (re)start a reconcile that adopts
jobs, settles intents and collects results, so nothing is submitted twice and no result is lost."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from cockpit.run.outcome import disk_full_words, exit_reason, requeue_aware
from cockpit.store.snapshot import ACTIVE_STATES, ADOPTED_PROBLEM

if TYPE_CHECKING:
    from cockpit.launch.backend import JobInfo
    from cockpit.run.live_files import LiveFiles
    from cockpit.run.scope import RunScope


class JobStates:
    """Writes what the backend says about the study's jobs into the store."""

    def __init__(self, scope: RunScope) -> None:
        self.scope = scope

    def update_queued(self, seen: dict[str, JobInfo]) -> bool:
        """The state of every active job still queued, from one poll, in one commit; True if any changed."""
        store, changed = self.scope.store, False
        with store.tx():  # one commit for the whole queue
            for row in store.active_jobs(self.scope.key):
                if row.job_id and row.job_id in seen:
                    j = seen[row.job_id]
                    state, reason = requeue_aware(row.state, j.state.value, j.reason)
                    changed |= store.set_job_state(
                        row.id, state, reason=reason, elapsed_s=j.elapsed_s,
                        time_limit_s=j.time_limit_s, nodes=j.nodes, nodelist=j.nodelist,
                        held=j.extra.get("held") == "True" if j.extra else False,
                    )
        return changed

    def adopt_unknown(self, seen: dict[str, JobInfo]) -> list[str]:
        """The study's jobs on the cluster that the store never heard of: submitted by another cockpit on the
        same study (the login node's while this is the laptop's, each with its own store), or before this
        store existed. From now on followed, settled and counted here, never submitted again; said once in
        the study's problems, which `cockpit open` shows. Returns their config ids."""
        scope, store = self.scope, self.scope.store
        known = {j.job_id for j in store.jobs(scope.key) if j.job_id}
        adopted = []
        for job in seen.values():
            cid = scope.config_of(job)
            if job.job_id not in known and cid in scope.configs:
                store.add_adopted_job(scope.key, cid, job.job_id, job.state.value)
                adopted.append(f"{cid} (job {job.job_id})")
        if adopted:
            store.add_problem(scope.key, ADOPTED_PROBLEM, f"{len(adopted)} job(s) submitted by another cockpit (or before "
                              f"this store) followed here, never submitted again: {', '.join(adopted)}")
        return adopted

    async def settle_departed(self, queued: set[str], live: LiveFiles | None) -> list[str]:
        """Jobs active in the store but absent from the queue: final state in one batch, then results.
        ``live``: read the rest of their live files first (None when the runner does not follow)."""
        scope, store = self.scope, self.scope.store
        departed = [r for r in store.active_jobs(scope.key) if r.job_id and r.job_id not in queued]
        if not departed:
            return []
        finals = await scope.backend.final_states([r.job_id for r in departed if r.job_id])
        finished = []
        for row in departed:
            info = finals.get(row.job_id or "")
            cid = row.config_id
            if live is not None:
                await live.final_follow(cid, row.job_id or "")
            res = await scope.read_result(cid) if cid in scope.run_dirs else None
            if res is not None:
                store.put_result(scope.key, cid, res, row.job_id)
            if info is not None and info.state.is_final:
                state, reason = info.state.value, info.reason
                exit_code = info.exit_code
                if state == "completed" and (res is None or res.get("status") != "completed"):
                    state, reason = "failed", "job completed but left no valid result.json"
                if state != "completed" and cid in scope.run_dirs:
                    exit_rec = await scope.read_exit(cid)
                    if exit_rec is not None:
                        reason = "; ".join(filter(None, [reason, exit_reason(exit_rec)]))
                    reason, exit_code = disk_full_words(reason, exit_code, exit_rec)
                    reason = await self._with_log(cid, row.job_id or "", reason)
                store.set_job_state(row.id, state, reason=reason, elapsed_s=info.elapsed_s, nodes=info.nodes,
                                    nodelist=info.nodelist, exit_code=exit_code, ended=True)
            elif info is not None and info.state.is_active:
                continue  # the controller still has it (e.g. requeued between squeue and scontrol)
            else:
                exit_rec = await scope.read_exit(cid)
                if res is not None and res.get("status") == "completed":
                    state, reason = "completed", "from result.json"
                elif exit_rec is not None:
                    state, reason = "failed", await self._with_log(cid, row.job_id or "", exit_reason(exit_rec))
                else:
                    state, reason = "lost", "left the queue; no accounting record and no run-directory files"
                store.set_job_state(row.id, state, reason=reason, ended=True,
                                    exit_code=exit_rec.get("code") if exit_rec else None)
            finished.append(cid)
        return finished

    async def _with_log(self, cid: str, job_id: str, reason: str) -> str:
        """A failed job's reason and the last lines of its log ("; log: ..."), where it has any."""
        if cid not in self.scope.run_dirs:
            return reason
        tail = await self.scope.log_tail(cid, job_id)
        return "; ".join(filter(None, [reason, f"log: {tail}" if tail else ""]))

    async def reconcile(self, live: LiveFiles | None) -> None:
        """Match the store with the cluster after a (re)start: adopt jobs, settle intents, collect results."""
        scope, store = self.scope, self.scope.store
        jobs = await scope.backend.poll()
        ours = {j.job_id: j for j in jobs if scope.config_of(j) in scope.configs}
        known = {j.job_id for j in store.jobs(scope.key) if j.job_id}
        by_config: dict[str, list[JobInfo]] = {}
        for j in ours.values():
            by_config.setdefault(scope.config_of(j) or "", []).append(j)
        # intents whose sbatch answer was never recorded
        for row in store.jobs(scope.key, where="state = 'submitting'"):
            candidates = [j for j in by_config.get(row.config_id, []) if j.job_id not in known]
            if candidates:
                job = candidates[0]
                store.adopt(row.id, job.job_id, job.state.value)
                known.add(job.job_id)
                store.add_problem(scope.key, "reconcile",
                                  f"{row.config_id}: adopted job {job.job_id} submitted before a restart")
            else:
                # not queued: either sbatch never ran, or the job already ended; the run directory decides
                exit_rec = await scope.read_exit(row.config_id) if row.config_id in scope.run_dirs else None
                ended_at = exit_rec.get("time") if exit_rec is not None else None
                fresh = isinstance(ended_at, int | float) and ended_at >= row.intent_at
                if exit_rec is not None and fresh:
                    store.set_job_state(row.id, "failed", reason=f"ended while the cockpit was down: exit.json "
                                        f"code {exit_rec.get('code')}", exit_code=exit_rec.get("code"), ended=True)
                else:
                    store.set_job_state(row.id, "lost", reason="submission not found on the cluster", ended=True)
        # jobs on the cluster the store never heard of (another cockpit's, a lost store, an older cockpit)
        self.adopt_unknown(ours)
        # jobs the store thinks active but the cluster no longer queues: resolved by the normal tick path
        await self.settle_departed(set(ours), live)
        # results on disk the store lacks (a crash between the job's end and the collection)
        await self._collect_missing_results()

    async def _collect_missing_results(self) -> None:
        scope, store = self.scope, self.scope.store
        latest = store.latest_jobs(scope.key)
        todo = [
            cid for cid in scope.configs
            if not store.has_valid_result(scope.key, cid)
            and not (cid in latest and latest[cid].state in ACTIVE_STATES)
        ]
        listed = await scope.backend.list_run_dirs() if todo else None
        if listed is not None:  # one round trip instead of one failed read per configuration
            existing = set(listed)
            todo = [cid for cid in todo if cid in existing]
        gate = asyncio.Semaphore(32)  # bounded: an sftp-server limits open handles

        async def read(cid: str) -> dict[str, Any] | None:
            async with gate:
                return await scope.read_result(cid)

        found = await asyncio.gather(*(read(cid) for cid in todo))
        foreign = [cid for cid, res in zip(todo, found, strict=True) if res is not None and cid not in latest]
        if foreign:
            store.add_problem(scope.key, ADOPTED_PROBLEM, f"{len(foreign)} result(s) of runs another cockpit submitted (or "
                              f"before this store) counted here, never submitted again: {', '.join(foreign)}")
        for cid, res in zip(todo, found, strict=True):
            if res is not None:
                job = latest.get(cid)
                store.put_result(scope.key, cid, res, job.job_id if job else None)
                if job is not None and res.get("status") == "completed":
                    store.set_job_state(job.id, "completed", ended=True)
