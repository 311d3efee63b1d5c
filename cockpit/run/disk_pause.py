"""A full work directory: submitting pauses, says so in one line, and resumes once space is freed.

The pause begins when a job ends with the trainer's exit 5 (no space left or quota exceeded; the batch script
says the same where the trainer could not even start), or before a submit when the site's tool (df, lfs
quota, quota: cockpit.launch.storage) finds less free than one run needs (cockpit.forecast.disk). While
paused, every poll reads the space again with the same probe; once one run fits, submitting goes on and the
runs that failed for the full directory, and only those, are submitted again (the plan counts them as to
submit, cockpit.store.recorded). Jobs already queued are left to run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cockpit.figures.sizes import size_words
from cockpit.forecast.disk import footprint
from cockpit.launch.backend import BackendError
from runcontract.contract import EXIT_DISK_FULL

if TYPE_CHECKING:
    from cockpit.launch.storage import Storage
    from cockpit.run.scope import RunScope
    from cockpit.store import StudyStore

NO_PROBE_RETRY_S = 120.0  # without a probe (storage_tool = "none"), try a submit again after this long
PROBLEM = "disk"


def full_configs(store: StudyStore, key: int) -> list[str]:
    """Configurations whose latest job ended because the work directory was full, without a result since."""
    return sorted(cid for cid, job in store.latest_jobs(key).items()
                  if job.exit_code == EXIT_DISK_FULL and not store.has_valid_result(key, cid))


@dataclass
class DiskPause:
    """The runner's pause on a full work directory (one per runner)."""

    scope: RunScope
    paused: bool = False
    line: str = ""  # "work directory full (used / quota, free: tool on path); ..." while paused
    storage: Storage | None = None
    needed_bytes: int = 0
    _since: float = 0.0
    _error: str = ""  # the last probe failure said (said once, not every poll)

    def hit(self, finished: list[str]) -> bool:
        """Whether a job that ended this tick ended for a full work directory."""
        latest = self.scope.store.latest_jobs(self.scope.key)
        return any(cid in latest and latest[cid].exit_code == EXIT_DISK_FULL for cid in finished)

    def need(self) -> int:
        """The free bytes one run needs: the largest run's footprint (cockpit.forecast.disk)."""
        return footprint(self.scope.study, configs=list(self.scope.configs.values())).per_run_bytes

    async def check(self, *, ended_full: bool) -> bool:
        """Read the space now and pause or resume; True while paused. ``ended_full``: a job just ended with
        exit 5, so the directory was full a moment ago even if the probe cannot tell (no tool)."""
        store, key = self.scope.store, self.scope.key
        try:
            self.storage = await self.scope.backend.storage()
        except BackendError as exc:
            if str(exc) != self._error:
                store.add_problem(key, PROBLEM, f"work directory space not read: {exc}")
            self._error, self.storage = str(exc), None
        else:
            self._error = ""
        self.needed_bytes = self.need()
        if self.storage is not None:
            full = self.storage.free_bytes < self.needed_bytes
        else:  # no probe: the exit code says full; try again after a while
            full = ended_full or (self.paused and time.monotonic() - self._since < NO_PROBE_RETRY_S)
        if full:
            self._pause(ended_full)
        elif self.paused:
            self._resume()
        return self.paused

    def _pause(self, ended_full: bool) -> None:
        store, key = self.scope.store, self.scope.key
        waiting = full_configs(store, key)
        s = self.storage
        figures = f"{s.words()}" if s is not None else "the site profile reads no figures (storage_tool = none)"
        line = (f"work directory full ({figures}); submitting paused, {len(waiting)} run(s) to submit again "
                f"once {size_words(self.needed_bytes)} are free")
        if not self.paused:
            self._since = time.monotonic()
            why = "a job ended with exit 5" if ended_full else "before submitting"
            store.add_problem(key, PROBLEM, f"{line} ({why})")
        self.paused, self.line = True, line

    def _resume(self) -> None:
        store, key = self.scope.store, self.scope.key
        again = full_configs(store, key)
        s = self.storage
        store.add_problem(key, PROBLEM, f"work directory has room again ({s.words() if s else 'not measured'}): "
                          f"submitting goes on; {len(again)} run(s) that failed for it submitted again"
                          + (f": {', '.join(again)}" if again else ""))
        self.paused, self.line = False, ""

    def event(self) -> dict[str, Any]:
        """The pause as the JSON event's fields (docs/json-events.md, `disk_full`)."""
        s = self.storage
        used, limit = s.used_and_limit if s is not None else (None, None)
        return {"paused": self.paused, "line": self.line, "used_bytes": used, "limit_bytes": limit,
                "free_bytes": s.free_bytes if s is not None else None, "needed_bytes": self.needed_bytes,
                "path": s.path if s is not None else None, "tool": s.source() if s is not None else None,
                "resubmit": full_configs(self.scope.store, self.scope.key)}
