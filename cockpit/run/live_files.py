"""The running jobs' live files (metrics.jsonl, gpu.jsonl, the workload's own logs such as the HLM trainer's
train.log, and the scheduler's logs) followed into the store, each from the byte offset the store committed, so
a restart neither loses nor repeats a line."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cockpit.launch.follow import Chunk, FileCursor, Follower, FollowSpec
from runcontract.contract import GPU_FILE, METRICS_FILE

if TYPE_CHECKING:
    from cockpit.run.scope import RunScope


class LiveFiles:
    """One follower over the backend's connection and a cursor per followed file."""

    def __init__(self, scope: RunScope) -> None:
        self.scope = scope
        self._cursors: dict[str, FileCursor] = {}
        self._follower: Follower | None = None

    def _files_of(self, job_id: str) -> list[str]:
        return [METRICS_FILE, GPU_FILE, *self.scope.study.workload.log_files, *self.scope.backend.log_files(job_id)]

    def _cursor(self, cid: str, name: str) -> FileCursor:
        key = f"{cid}/{name}"
        cur = self._cursors.get(key)
        if cur is None:
            offset, bad = self.scope.store.get_offset(self.scope.key, cid, name)
            cur = self._cursors[key] = FileCursor(committed=offset, bad_lines=bad)
        return cur

    async def follow(self) -> int:
        """Ingest what arrived since the last tick and follow the files of the jobs running now; returns
        the number of metrics records ingested."""
        scope = self.scope
        if self._follower is None:
            self._follower = scope.backend.follower()
        specs = []
        for row in scope.store.active_jobs(scope.key):
            if row.state not in ("running", "completing") or not row.job_id or row.config_id not in scope.run_dirs:
                continue
            for name in self._files_of(row.job_id):
                cur = self._cursor(row.config_id, name)
                specs.append(FollowSpec(f"{row.config_id}/{name}", f"{scope.run_dirs[row.config_id]}/{name}",
                                        cur.expected))
        chunks = await self._follower.drain()
        n = self._ingest(chunks)
        await self._follower.update(specs)
        return n

    async def final_follow(self, cid: str, job_id: str) -> None:
        """Read what the follower had not delivered yet once a job has ended, so no metrics are lost."""
        if self._follower is not None:
            self._ingest([c for c in await self._follower.drain()])
        for name in self._files_of(job_id):
            cur = self._cursor(cid, name)
            data = await self.scope.backend.read_file(f"{self.scope.run_dirs[cid]}/{name}", cur.expected)
            if data:
                self._ingest([Chunk(f"{cid}/{name}", cur.expected, data)])

    def _ingest(self, chunks: list[Chunk]) -> int:
        store, key = self.scope.store, self.scope.key
        n = 0
        for ch in chunks:
            cid, _, name = ch.key.partition("/")
            cur = self._cursor(cid, name)
            if name.endswith(".jsonl"):
                fed = cur.feed_jsonl(ch)
                if fed is None:
                    continue
                records, bad = fed
                store.ingest(key, cid, name, records, cur.committed, bad)
                if bad:
                    store.add_problem(key, "follow", f"{cid}/{name}: skipped {bad} corrupt line(s) "
                                      f"({cur.bad_lines} so far)")
                if name == METRICS_FILE:
                    n += len(records)
            else:
                lines = cur.feed_text(ch)
                if lines is None:
                    continue
                store.add_log_lines(key, cid, lines)
                store.set_offset(key, cid, name, cur.committed, 0)
        return n

    async def close(self) -> None:
        """Stop the follower, if one was started."""
        if self._follower is not None:
            await self._follower.close()
