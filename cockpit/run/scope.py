"""What every part of the study runner works on: one study's runnable configurations, the backend that
runs them, the store that keeps them under the study's key, and each configuration's run directory."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cockpit.run.outcome import config_of_name, parse_exit, parse_result
from runcontract.contract import EXIT_FILE, RESULT_FILE
from runcontract.judge import last_lines

if TYPE_CHECKING:
    from cockpit.launch.backend import Backend, JobInfo
    from cockpit.store import StudyStore
    from cockpit.study.spec import Configuration, Study


@dataclass
class RunScope:
    """Shared by the runner's parts, so each reads the same key and run directories (one place for both)."""

    study: Study
    backend: Backend
    store: StudyStore
    configs: dict[str, Configuration]  # the runnable configurations by id
    key: int = 0  # the study's key in the store, known once the runner has started
    run_dirs: dict[str, str] = field(default_factory=dict)  # config id -> its run directory on the backend

    @property
    def name_prefix(self) -> str:
        """What the study's job names start with (`<study>-<config id>`)."""
        return f"{self.study.name}-"

    def config_of(self, job: JobInfo) -> str | None:
        """The configuration a queued job runs: its comment's config id, else its name."""
        cid = job.extra.get("config_id") if job.extra else None
        return cid or config_of_name(job.name, self.name_prefix)

    async def read_result(self, cid: str) -> dict[str, Any] | None:
        """The configuration's result.json, if it has a usable one."""
        path = f"{self.run_dirs[cid]}/{RESULT_FILE}"
        data = await self.backend.read_file(path, 0)
        return parse_result(data, path) if data else None

    async def log_tail(self, cid: str, job_id: str) -> str:
        """The last lines of the job's error log, else its output log (runcontract.judge.last_lines): what a
        failed configuration's reason quotes, so the user reads why without opening the run directory."""
        texts = [(await self.backend.read_file(f"{self.run_dirs[cid]}/{name}", 0)).decode("utf-8", "replace")
                 for name in self.backend.log_names(job_id)]
        return last_lines(texts)

    async def read_exit(self, cid: str) -> dict[str, Any] | None:
        """The configuration's exit.json, if it has a readable one."""
        return parse_exit(await self.backend.read_file(f"{self.run_dirs[cid]}/{EXIT_FILE}", 0))
