"""What the runner submits now: the plan's next configurations within ``max_concurrent_jobs`` and the
node-hour budget, a fine-tune held until its foundation run ends, and (``--baseline-first``) a group's
N-worker runs held until its baseline predicts their cost. The order of writes is what makes a restart safe:
intent committed -> submit -> job id committed."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from cockpit.launch.backend import BackendError, OutcomeUnknown, SubmitLater, UserLimits
from cockpit.store.snapshot import ACTIVE_STATES
from cockpit.study.changes import Change, changes_words

if TYPE_CHECKING:
    from cockpit.forecast.plan import Plan
    from cockpit.run.scope import RunScope
    from cockpit.store import JobRecord
    from cockpit.study.spec import Configuration


class BudgetExceeded(Exception):
    """The study's estimate exceeds the node-hours left; the message says by how much."""


def check_budget(plan: Plan, *, force: bool) -> None:
    """BudgetExceeded when the plan is over the node-hour budget, unless ``force``."""
    if plan.over_budget and not force:
        raise BudgetExceeded(plan.budget_message())


def pace(configured: int | None, limits: UserLimits | None, active: int) -> int:
    """How many of the study's jobs may be queued or running at once: [cluster].max_concurrent_jobs where
    the study sets it, else what the site's submit limit leaves beside the user's other jobs (``active``:
    the study's own, counted in ``limits.queued``), else the running limit, else 4."""
    if configured is not None:
        return configured
    if limits is None:
        return DEFAULT_PACE
    if limits.max_submit is not None:
        return max(1, limits.max_submit - max(0, limits.queued - active))
    return limits.max_running or DEFAULT_PACE


DEFAULT_PACE = 4  # jobs at once where neither the study nor the site says


def running_at_once(cap: int, limits: UserLimits | None) -> int:
    """How many of the study's ``cap`` jobs at once (pace()) run at once: the site's running limit holds the
    rest in the queue, so a study's length goes by this figure."""
    if limits is None or limits.max_running is None:
        return cap
    return max(1, min(cap, limits.max_running))


async def submit_more(
    scope: RunScope,
    plan: Plan,
    refused: list[tuple[str, str]],
    *,
    cap: int,
    later: list[SubmitLater],
    force: bool,
    baseline_first: bool,
    hooks: dict[str, Callable[..., Any]],
    reconcile: Callable[[], Awaitable[None]],
) -> list[str]:
    """Submit what the plan and the limits allow (``cap`` jobs at once: pace()); returns the submitted config
    ids and appends each refused one with its reason to ``refused``. A "not now" refusal (SubmitLater)
    leaves no attempt behind, is appended to ``later`` and ends this round: the runner waits and retries.
    ``reconcile`` settles a submit whose outcome is unknown."""
    store, key = scope.store, scope.key
    active = len(store.active_jobs(key))
    budget = plan.budget
    committed = plan.committed  # spent, plus what the queued and running jobs will spend
    submitted = []
    latest = store.latest_jobs(key)
    for line in plan.to_submit:
        cfg = scope.configs[line.config_id]
        if active >= cap:
            break
        if foundation_unfinished(scope, cfg, latest):
            continue  # a fine-tune starts from its foundation run's weights: wait for them
        if baseline_first and not cfg.is_baseline and any(unfinished(scope, b, latest)
                                                          for b in scope.study.baseline_runs_of(cfg)):
            continue  # --baseline-first: submitted once the baseline's runs predict its cost
        if budget is not None and not force:
            if committed + line.node_hours > budget + 1e-9:
                store.add_problem(key, "budget", f"{cfg.config_id}: not submitted, node-hour budget reached")
                break
        if line.changes:  # --rerun-changed: the run it has stands for other settings; kept as history first
            try:
                await keep_old_run(scope, cfg, line.changes)
            except BackendError as exc:
                store.add_problem(key, "submit", f"{cfg.config_id}: not run again: {exc}")
                refused.append((cfg.config_id, str(exc)))
                continue
        row = store.record_intent(key, cfg.config_id)
        _hook(hooks, "before_submit", cfg)
        try:
            job_id = await scope.backend.submit(cfg)
        except OutcomeUnknown as exc:
            # outcome unknown: leave the intent; reconcile() resolves it by job name
            store.add_problem(key, "submit", f"{cfg.config_id}: {exc}")
            await reconcile()
            active = len(store.active_jobs(key))
            committed += line.node_hours  # it may be queued: count it
            continue
        except SubmitLater as exc:  # a site limit is full for now: nothing was queued, try again later
            store.withdraw_intent(row)
            later.append(exc)
            break
        except (BackendError, ValueError) as exc:
            # sbatch refused, or the upload failed before sbatch ran: nothing was queued
            store.record_submit_failed(row, str(exc))
            store.add_problem(key, "submit", f"{cfg.config_id}: {exc}")
            refused.append((cfg.config_id, str(exc)))
            continue
        _hook(hooks, "after_submit", cfg, job_id)
        store.record_submitted(row, job_id)
        submitted.append(cfg.config_id)
        active += 1
        committed += line.node_hours
    return submitted


async def keep_old_run(scope: RunScope, cfg: Configuration, changes: tuple[Change, ...]) -> str:
    """A changed configuration's finished run, kept before it runs again: its directory moved to the study's
    history/ folder and its result to the store's result_history, with one line saying so."""
    run_dir = await scope.backend.run_dir(cfg)
    to = f"{run_dir.rsplit('/runs/', 1)[0]}/history/{cfg.config_id}-{time.strftime('%Y%m%d-%H%M%S')}"
    await scope.backend.keep_aside(run_dir, to)
    scope.store.retire_result(scope.key, cfg.config_id, to)
    scope.store.add_problem(scope.key, "rerun", f"{cfg.config_id}: run again for its changed settings "
                                                f"({changes_words(changes)}); its earlier run is kept in {to}")
    return to


def foundation_unfinished(scope: RunScope, cfg: Configuration, latest: dict[str, JobRecord]) -> bool:
    """True while the foundation run this fine-tune initialises from is in the study and still to come.

    A foundation run that ended without a result does not block: the fine-tune then starts from random
    weights and its result.json says so.
    """
    foundation = scope.study.foundation_of(cfg)
    return foundation is not None and unfinished(scope, foundation, latest)


def unfinished(scope: RunScope, cfg: Configuration, latest: dict[str, JobRecord]) -> bool:
    """True while `cfg` is in the study and still to come (not finished, not ended without a result)."""
    if cfg.config_id not in scope.configs or scope.store.has_valid_result(scope.key, cfg.config_id):
        return False
    job = latest.get(cfg.config_id)
    return job is None or job.state in ACTIVE_STATES or job.state == "lost"


def _hook(hooks: dict[str, Callable[..., Any]], name: str, *args: Any) -> None:
    """Run the named hook, if the runner was given one (tests stop the runner at these points)."""
    fn = hooks.get(name)
    if fn is not None:
        fn(*args)
