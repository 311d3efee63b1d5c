"""Where a report's results come from: a study file (its store, else its local run directories) or a store."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cockpit.figures.run_files import unreadable as unreadable_dirs
from cockpit.figures.run_files import unreadable_words, with_local_run_files, with_run_files
from cockpit.forecast.prediction import Prediction
from cockpit.study.changes import changes_words, study_changes
from cockpit.study.spec import SQLITE_HEADER, Study


class ReportError(ValueError):
    """The report's input cannot be used; the message names the file and what was expected."""


@dataclass
class ReportInput:
    study: str
    cluster: str
    results: list[dict[str, Any]]
    source: str  # what the results were read from, for the report's header
    device: str | None = None  # the study file's [train] device where it was read: what a report with no result calls workers
    failed_jobs: list[dict[str, Any]] = field(default_factory=list)  # jobs that ended without a result
    # configurations of the study without a result: {config_id, group_id, workers, cpus_per_task, status}
    pending: list[dict[str, Any]] = field(default_factory=list)
    # what could not be read, one line each naming the run and what to do (a result row that does not parse)
    problems: list[str] = field(default_factory=list)
    # where the runs' curves are: the store read (from_store), else the runs/ folder read (from_run_dirs)
    store: Path | None = None
    runs: Path | None = None
    # each configuration's prediction as first made, before it ran (cockpit/store/predictions.py), by config id
    first: dict[str, Prediction] = field(default_factory=dict)
    # what the report goes on without, one line each: run directories this account cannot read
    left_out: list[str] = field(default_factory=list)
    # configurations whose result ran other settings than the study file now asks (cockpit.study.changes), one
    # line each naming the keys: left out of the figures, counted as without a result
    changed: list[str] = field(default_factory=list)


STORE_SUFFIXES = (".sqlite", ".db", ".sqlite3")


def study_or_store(path: Path) -> str:
    """"study" for a study file, "store" for a cockpit store: what `cockpit open`, `report`, `export` and
    `compare` take as STUDY, judged in one set of words (ReportError naming the path otherwise)."""
    expected = "expected a study file (.toml) or a cockpit store (.sqlite)"
    if path.is_dir():
        raise ReportError(f"{path}: a directory; {expected}")
    if not path.exists():
        raise ReportError(f"{path}: no such file ({expected})")
    if path.suffix == ".toml":
        return "study"
    if path.suffix in STORE_SUFFIXES or _starts_with(path, SQLITE_HEADER):  # a store copied under another name too
        return "store"
    raise ReportError(f"{path}: {expected}, got {path.suffix or 'no suffix'}")


def _starts_with(path: Path, header: bytes) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(header)) == header
    except OSError:
        return False


def pick_study(path: Path, names: list[str], study_name: str | None) -> str:
    """The study of a store to read: `study_name` (`--study`), else the only one it holds; ReportError
    naming the store and what it holds otherwise."""
    if study_name is None:
        if len(names) != 1:
            raise ReportError(f"{path}: holds {len(names)} studies ({', '.join(names) or 'none'}); name one with --study")
        return names[0]
    if study_name not in names:
        raise ReportError(f"{path}: no study {study_name!r}; it holds {', '.join(names) or 'none'}")
    return study_name


def load_input(path: str | Path, study_name: str | None = None) -> ReportInput:
    """`study.toml` -> its store if one exists, else the result.json files of its local run directories;
    `*.sqlite` -> that store (the only study in it, or `study_name`)."""
    path = Path(path)
    return _from_study(path) if study_or_store(path) == "study" else from_store(path, study_name)


def _from_study(path: Path) -> ReportInput:
    from cockpit.run.session import local_study_dir, store_path_for
    from cockpit.study.spec import SpecError, load_study

    try:
        study = load_study(path)
    except SpecError as exc:
        raise ReportError(str(exc)) from exc
    local_dir = local_study_dir(study)
    store = store_path_for(study)
    if store.exists():
        return without_changed(from_store(store, study.name), study)
    if local_dir is None:
        raise ReportError(
            f"{path}: no cockpit store for study {study.name!r} at {store}; run `cockpit run {path}` first"
        )
    inp = from_run_dirs(local_dir / "runs", study.name, "local")
    have = {r.get("config_id") for r in inp.results}
    inp.pending = [{"config_id": c.config_id, "group_id": c.group_id, "workers": c.workers,
                    "cpus_per_task": c.cpus_per_task, "status": "no result"}
                   for c in study.matrix() if c.config_id not in have]
    return without_changed(inp, study)


def without_changed(inp: ReportInput, study: Study) -> ReportInput:
    """The input with each result whose run ran other settings than `study` now asks moved to the configurations
    without a result, and one line naming its keys (a report never shows such a run as the study's)."""
    changed = study_changes(study, {str(r.get("config_id")): r for r in inp.results})
    for cfg in study.matrix():
        if cfg.config_id not in changed:
            continue
        words = changes_words(changed[cfg.config_id])
        inp.pending.append({"config_id": cfg.config_id, "group_id": cfg.group_id, "workers": cfg.workers,
                            "cpus_per_task": cfg.cpus_per_task, "status": f"changed: {words}"})
        inp.changed.append(f"{cfg.label} ({cfg.config_id}): changed since it ran: {words}; left out "
                           "(`cockpit run --rerun-changed` runs it again)")
    inp.results = [r for r in inp.results if str(r.get("config_id")) not in changed]
    return inp


def from_run_dirs(runs: Path, study: str, cluster: str) -> ReportInput:
    """Read every runs/<config_id>/result.json of a local study."""
    from runcontract.contract import ContractError
    from runcontract.records import read_result

    if not runs.is_dir():
        raise ReportError(f"{runs}: no run directories yet (nothing has run for study {study!r})")
    results = []
    for run_dir in sorted(p for p in runs.iterdir() if p.is_dir()):
        try:
            res = read_result(run_dir)
        except ContractError as exc:
            raise ReportError(str(exc)) from exc
        if res is not None:
            results.append(with_run_files(res, run_dir))
    return ReportInput(study, cluster, results, str(runs), runs=runs)


def from_store(path: Path, study_name: str | None = None) -> ReportInput:
    from cockpit.store import StoreError, StudyStore, predictions

    try:
        store = StudyStore(path, read_only=True)
    except StoreError as exc:
        raise ReportError(str(exc)) from exc
    try:
        with store.reading():  # one look at the file, as it is now
            study_name = pick_study(path, store.study_names(), study_name)
            snap = store.snapshot(study_name)
            key = store.study_key(study_name)
            results = list(store.results(key).values())
            run_dirs = {c["config_id"]: c["run_dir"] for c in store.configs(key)}
            problems = store.result_problems(key)
            unreadable = store.unreadable_results(key)
            first = predictions.first(store, key)
            spec = store.study_settings(key)[3]
    except StoreError as exc:
        raise ReportError(str(exc)) from exc
    finally:
        store.close()
    private = unreadable_dirs(run_dirs)  # another account's run directories: their files left out, in one line
    results = with_local_run_files(results, run_dirs)
    with_result = {r.get("config_id") for r in results}
    failed = [
        {"config_id": j.config_id, "job_id": j.job_id, "state": j.state, "reason": j.reason, "exit_code": j.exit_code}
        for j in snap.jobs
        if j.config_id not in with_result and j.state not in ("completed", "pending", "running", "submitting")
    ]
    pending = [{"config_id": c.config_id, "group_id": c.group_id, "workers": c.workers,
                "cpus_per_task": c.values.get("cpus_per_task"),
                "status": "result row not valid JSON" if c.config_id in unreadable else c.state.replace("_", " ")}
               for c in snap.configs if c.config_id not in with_result]
    return ReportInput(study_name, snap.cluster, results, str(path), _study_device(path, spec), failed, pending,
                       problems, store=path, first=first, left_out=[unreadable_words(private)] if private else [])


def _study_device(store: Path, spec: str) -> str | None:
    """The [train] device of the study file a store names (absolute, or beside the store), None where it is
    gone or does not parse: the results' own device decides then (cockpit.figures.labels.device_of)."""
    from cockpit.study.spec import SpecError, load_study

    if not spec:
        return None
    path = Path(spec) if Path(spec).is_absolute() else store.parent / spec
    try:
        return str(load_study(path).train.get("device") or "") or None
    except (OSError, SpecError):
        return None

