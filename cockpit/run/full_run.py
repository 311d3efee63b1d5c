"""The time to result of a study file: its plan and results read as `cockpit plan` reads them, the
scheduler's start estimates asked through the study's backend (Backend.start_estimate), and
cockpit.forecast.full_run's computation over them. `cockpit plan --full-run` and the notebook's
`full_run` both call `time_to_result` (docs/full-run.md)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from cockpit.forecast.full_run import FullRunPlan, Prices, ProductionRun, Queue, full_run
from cockpit.launch.backend import BackendError, ConnectionLost
from cockpit.launch.registry import backend_kind

if TYPE_CHECKING:
    from cockpit.forecast.plan import Plan
    from cockpit.launch.backend import Backend
    from cockpit.study.spec import Study

T = TypeVar("T")
QUEUE_WORDS = ("{source} when asked ({clock}): the scheduler's own estimate of the first job's start with the queue "
               "as it is (backfill included); a requeued job's wait again is not included")


def time_to_result(study: Study, run: ProductionRun, *, plan: Plan | None = None,
                   results: Sequence[dict[str, Any]] | None = None, baselines: Sequence[dict[str, Any]] = (),
                   deadline: float | None = None, prices: Prices | None = None, queue: bool = True,
                   now: float | None = None) -> FullRunPlan:
    """Every configuration of the study run for `run`: the study's plan and results (read from its store without
    writing, plus `baselines`, where not given), the queue's start estimates (`queue`: asked over the study's
    backend; a backend without a scheduler has none) and cockpit.forecast.full_run over them. Raises
    BackendError where the cluster cannot be reached."""
    if plan is None or results is None:
        plan, results = recorded(study, baselines)
    now = time.time() if now is None else now
    kind = backend_kind(study)
    queues: dict[str, Queue] = {}
    if not queue:
        words = "not asked (--no-queue): every job starts now"
    elif not kind.has_scheduler:
        words = kind.no_start_estimate
    else:
        wanted = {line.config_id for line in plan.lines
                  if line.status != "too big" and line.figures is not None and line.run == 1}
        queues = run_sync(start_estimates(study, [c for c in study.matrix() if c.config_id in wanted]))
        words = QUEUE_WORDS.format(source="sbatch --test-only", clock=time.strftime("%H:%M", time.localtime(now)))
    return full_run(plan, results, run, time_limit_s=study.cluster.time_limit_minutes * 60.0,
                    signal_s=float(study.cluster.signal_seconds), queues=queues, now=now, deadline=deadline,
                    prices=prices or Prices(), queue_words=words, steps=study.train.get("steps"))


WORDS_EXAMPLE = "full-run epochs=3 price-node-hour=1.2 deadline=2026-12-24T18:00"  # run by tests/tui/test_plan_full_run.py


def parse_words(text: str) -> tuple[ProductionRun, float | None, Prices, bool]:
    """The plan dialog's `full-run epochs=3 deadline=2026-12-24T18:00 price-node-hour=1.2 price-kwh=0.25 no-queue`:
    the flags of `cockpit plan --full-run` as words (the leading `full-run` optional); the production run, the
    deadline, the prices and whether to ask the queue. ValueError naming the word that is wrong."""
    from cockpit.forecast.full_run import parse_deadline, parse_production

    words = text.split()
    if words and words[0].lower() in ("full-run", "--full-run"):
        words = words[1:]
    if not words:
        raise ValueError(f"full-run: give the production run, UNIT=AMOUNT ({WORDS_EXAMPLE})")
    run = parse_production(words[0])
    deadline, prices, queue = None, Prices(), True
    for word in words[1:]:
        name, sep, value = word.partition("=")
        name = name.lower().lstrip("-")
        if name == "no-queue" and not sep:
            queue = False
        elif name == "deadline" and sep:
            deadline = parse_deadline(value)
        elif name in ("price-node-hour", "price-kwh") and sep:
            try:
                price = float(value)
            except ValueError:
                raise ValueError(f"full-run: {word!r}: {value!r} is not a number") from None
            prices = Prices(price, prices.kwh) if name == "price-node-hour" else Prices(prices.node_hour, price)
        else:
            raise ValueError(f"full-run: {word!r} is not one of deadline=WHEN, price-node-hour=X, price-kwh=X, "
                             f"no-queue ({WORDS_EXAMPLE})")
    if problem := prices.problem():
        raise ValueError(f"full-run: {problem}")
    return run, deadline, prices, queue


def full_run_of(study: Study, text: str) -> FullRunPlan:
    """The plan dialog's `full-run ...` words (parse_words) timed on the study; ValueError naming a wrong word,
    BackendError where the scheduler cannot be asked."""
    run, deadline, prices, queue = parse_words(text)
    return time_to_result(study, run, deadline=deadline, prices=prices, queue=queue)


def recorded(study: Study, baselines: Sequence[dict[str, Any]] = ()) -> tuple[Plan, list[dict[str, Any]]]:
    """The plan `cockpit plan` prints and the results it rests on, the study's store read without writing."""
    from cockpit.run.session import node_cores, store_path_for
    from cockpit.store import StudyStore
    from cockpit.store.recorded import recorded_inputs, study_plan

    cores = node_cores(study)
    path = store_path_for(study)
    inputs = recorded_inputs(study, path, baselines, cores)
    if not path.exists():
        return study_plan(study, cores=cores, results=baselines), inputs.results
    store = StudyStore(path, read_only=True)
    try:
        with store.reading():
            return study_plan(study, store, cores=cores, results=baselines), inputs.results
    finally:
        store.close()


async def start_estimates(study: Study, cfgs: Sequence[Any], backend: Backend | None = None) -> dict[str, Queue]:
    """Each configuration's start as the study's scheduler estimates it now, by config id (one connection; a
    refusal is that configuration's words, not an error). ConnectionLost where the cluster cannot be reached."""
    from cockpit.run.session import backend_for

    own = backend is None
    backend = backend or backend_for(study)
    out: dict[str, Queue] = {}
    try:
        for cfg in cfgs:
            try:
                estimate = await backend.start_estimate(cfg)
            except ConnectionLost:
                raise
            except BackendError as exc:
                out[cfg.config_id] = Queue(None, str(exc))
                continue
            if estimate is None:
                out[cfg.config_id] = Queue(time.time(), backend.no_start_estimate)
            else:
                where = f"{estimate.nodes}" + (f" in {estimate.partition}" if estimate.partition else "")
                out[cfg.config_id] = Queue(estimate.start_epoch, f"{estimate.source}: {where}")
    finally:
        if own:
            await backend.close()
    return out


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to its end from plain code, also where an event loop already runs (a notebook)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()
