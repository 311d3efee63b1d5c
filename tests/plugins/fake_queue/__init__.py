"""A second scheduler backend, made only for the tests, as a site's plug-in would be: one package and one register()
call, no edit to the cockpit. `[cluster] kind = "fakequeue"` queues every job in a first-in-first-out queue of its
own (this process's) and runs it on this machine's cores when it reaches the head, `[cluster] slots` at a time (a
[cluster] key of its own, declared with its kind); its batch scripts are plain shell scripts naming the launcher
line. Every queue move is kept in QUEUE_LOG for the tests."""

from __future__ import annotations

import asyncio
import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cockpit.launch.backend import JobState
from cockpit.launch.local import LocalExecutor
from cockpit.launch.registry import register
from cockpit.study.cluster_kinds import ClusterKind
from runcontract.keys import ConfigKey

if TYPE_CHECKING:
    from cockpit.study.spec import Configuration, Study

QUEUE_LOG: list[tuple[str, str]] = []  # (event, config id): "queued", then "started" in queue order
SLOTS = ConfigKey("cluster", "slots", (int,), 1, minimum=1, help="jobs the queue runs at once")


class FakeQueueBackend(LocalExecutor):
    """The local executor's runs behind a queue of one slot: a job waits until every earlier one has ended."""

    has_scheduler = False

    def __init__(self, study: Study, **kwargs: Any) -> None:
        super().__init__(study, **kwargs)
        self.slots = int(study.cluster.own["slots"])
        self.label = f"fakequeue ({self.max_cores} cores, {self.slots} job(s) at a time)"

    @classmethod
    def open(cls, study: Study, **kwargs: Any) -> FakeQueueBackend:
        return cls(study, **kwargs)

    @classmethod
    def render_scripts(cls, study: Study, out_dir: str | Path) -> list[Path]:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for cfg in study.runnable():
            args = study.workload.worker_args(cfg.all_values(), study.run_dir(cfg))
            path = out / f"{cfg.config_id}.sh"
            path.write_text("#!/bin/sh\n# fakequeue: one job at a time\n"
                            f"exec python3 -m torch.distributed.run --nproc-per-node {cfg.workers} "
                            f"{shlex.join(args)}\n")
            written.append(path)
        return written

    async def submit(self, cfg: Configuration) -> str:
        job_id = await super().submit(cfg)
        QUEUE_LOG.append(("queued", cfg.config_id))
        return job_id

    def _schedule(self) -> None:  # the local executor's, here: the queue's head alone, once nothing runs
        if sum(job.state in (JobState.RUNNING, JobState.COMPLETING) for job in self._jobs.values()) >= self.slots:
            return
        head = next((job for job in self._jobs.values() if job.state == JobState.PENDING), None)
        if head is None:
            return
        head.state, head.reason, head.started = JobState.RUNNING, "", time.time()
        head.task = asyncio.get_running_loop().create_task(self._run(head))
        if not head.preflight:
            QUEUE_LOG.append(("started", head.cfg.config_id))

register(ClusterKind("fakequeue", "a first-in-first-out queue on this machine (a test plug-in)", on_this_machine=True,
                     keys=(SLOTS,)), FakeQueueBackend)
