"""What the plan and the what-if read of a study's store: `study_plan` (the plan given what the store has
recorded: done, active and failed configurations, node-hours used, the latest preflight's link figures) and
`recorded_inputs` (the results and preflight figures a what-if predicts from, read without writing).

The computations are cockpit.forecast's (make_plan, whatif.predict); this module only reads the store for them,
so the forecast package never imports the store.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cockpit.forecast import plan, prediction, whatif
from cockpit.store import StudyStore, predictions, preflights
from cockpit.store.snapshot import ACTIVE_STATES
from cockpit.study import changes
from runcontract.contract import EXIT_DISK_FULL

if TYPE_CHECKING:
    from cockpit.study.spec import Study


def study_plan(study: Study, store: StudyStore | None = None, *, key: int | None = None,
               resubmit_failed: bool = False, rerun_changed: bool = False, cluster: str | None = None,
               cores: int | None = None, results: Iterable[dict[str, Any]] = ()) -> plan.Plan:
    """The plan given what ``store`` knows of the study (without a store, or before the study was
    registered in it, every configuration that fits a node is to submit): what is done, active or failed
    there is not to submit, and its results predict the rest's cost. `cockpit plan`, the TUI's plan
    dialog and the runner's budget guard all call this, with the same store (session.store_path_for) and
    cores (the backend's: session.node_cores for `cockpit plan`). ``results``: more result.json dicts to
    predict from (`cockpit plan --baselines`)."""
    extra = list(results)
    if store is None:
        return plan.make_plan(study, cluster=cluster, cores=cores, results=extra)
    if key is None:
        if study.name not in store.study_names():
            return plan.make_plan(study, cluster=cluster, cores=cores, results=extra)
        key = store.study_key(study.name)
    latest = store.latest_jobs(key)
    recorded = store.results(key)
    changed = changes.study_changes(study, recorded)
    results = [*extra, *(r for cid, r in recorded.items() if cid not in changed)]
    statuses: dict[str, str] = {}
    for cfg in study.runnable():
        cid = cfg.config_id
        job = latest.get(cid)
        if cid in changed and store.has_valid_result(key, cid):
            if not rerun_changed:
                statuses[cid] = "changed"
        elif store.has_valid_result(key, cid):
            statuses[cid] = "done"
        elif job is not None and job.state in ACTIVE_STATES:
            statuses[cid] = "active"
        elif job is not None and job.state != "lost" and not resubmit_failed and job.exit_code != EXIT_DISK_FULL:
            statuses[cid] = "failed"  # ended without a valid result: submitted again only on request
        # a run that failed for a full work directory is to submit again, once space is freed
        # (cockpit/run/disk_pause.py holds the submits until then)
    kept = preflights.latest(store, study.name)
    measured = prediction.preflight_links(kept.links, kept.digest, kept.shared_host) if kept is not None else None
    kept_first = predictions.first(store, key)
    made = plan.make_plan(study, statuses, store.node_hours_used(key), cluster, results, cores, measured, kept_first,
                          changed, changes.unknown(study, recorded))
    if not store.read_only:  # a configuration predicted for the first time: its first prediction is kept
        predictions.keep_first(store, key, {line.config_id: line.predicted for line in made.lines
                                            if line.predicted is not None and line.measured is None
                                            and line.config_id not in kept_first})
    return made


def recorded_inputs(study: Study, store_path: Path | None, baselines: Sequence[dict[str, Any]] = (),
                    cores: int | None = None) -> whatif.Inputs:
    """The study's results in the store at `store_path` (opened read-only, so a store a running cockpit is
    writing is read as it is now) plus `baselines`, and the link figures its latest preflight measured;
    `cores`: a node's cores as the backend sees them, for the plan's "too big"."""
    given = len(baselines)
    if store_path is None or not store_path.exists():
        return whatif.Inputs(list(baselines), cores=cores, from_baselines=given)
    store = StudyStore(store_path, read_only=True)
    try:
        with store.reading():
            if study.name not in store.study_names():
                return whatif.Inputs(list(baselines), None, store_path, cores=cores, from_baselines=given)
            key = store.study_key(study.name)
            results = [*baselines, *store.results(key).values()]
            problems = [f"{store_path}: {p}" for p in store.result_problems(key)]
            kept = preflights.latest(store, study.name)
    finally:
        store.close()
    measured = prediction.preflight_links(kept.links, kept.digest, kept.shared_host) if kept is not None else None
    return whatif.Inputs(results, measured, store_path, problems, cores, given)
