"""`cockpit plan STUDY --what-if KEY=VALUE`: the study with some keys changed, predicted from what it has
recorded before a node-hour is spent on the change.

Each configuration of the changed study is predicted by cockpit.forecast.advice.forecast (the model of
docs/prediction.md from the recorded baselines; a measured run of the same scale changed part by part as
the model changes it), beside the same configuration as recorded (measured, or predicted from the study
as it stands). Values are TOML literals; the changed study is validated by cockpit.study.spec, so an unknown key
or an impossible value is refused in the spec's own words. `cockpit plan --what-if` and the TUI's plan dialog
both go through :func:`predict`; this module returns data (every configuration predicted, the keys changed),
and cockpit.forecast.whatif_table words it (the table's rows, the summary lines).
"""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cockpit.forecast import advice, interval, prediction
from cockpit.forecast.plan import measured_figures, study_site_links, study_spread

if TYPE_CHECKING:
    from cockpit.study.spec import Configuration, Study


class WhatIfError(ValueError):
    """A --what-if argument cannot be applied; the message names it."""


# a value a shell leaves of `train.device="cpu"` typed unquoted: one bare word, taken as the string it was
BARE_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.:/+-]*")
# a [sweep] axis bounded by a [cluster] key: a what-if that widens the axis must raise the key too
BOUNDED_AXES = {"gpus_per_node": "gpus_per_node", "cpus_per_task": "cores_per_node"}
# what a what-if may change: a run's keys, and the [cluster] keys a prediction or an estimate reads
RUN_SECTIONS = ("model", "train", "data", "sweep")
CLUSTER_KEYS = ("gpus_per_node", "cores_per_node", "site", "node_hour_budget", "expected_minutes", "time_limit")


def parse_assignment(text: str) -> tuple[str, Any]:
    """`train.bucket_cap_mb=100` -> ("train.bucket_cap_mb", 100); the value is a TOML literal, or one bare
    word taken as a string (`train.device=cpu`: what a shell leaves of `train.device="cpu"`)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise WhatIfError(f"--what-if {text}: expected KEY=VALUE, e.g. train.bucket_cap_mb=100")
    if "." not in key and key in _axes():
        raise WhatIfError(f"--what-if {text}: {key} is a [sweep] axis, a list: sweep.{key}=[{raw.strip()}]")
    if len(key.split(".")) < 2 or any(not part for part in key.split(".")):
        raise WhatIfError(f"--what-if {text}: KEY is a section and a key, e.g. train.steps or sweep.gpus_per_node")
    try:
        value = tomllib.loads(f"value = {raw.strip()}")["value"]
    except tomllib.TOMLDecodeError:
        if BARE_WORD.fullmatch(raw.strip()):
            return key, raw.strip()
        raise WhatIfError(f"--what-if {text}: {raw.strip()!r} is not a TOML value (a list needs brackets, a text "
                          f"with spaces quotes; in a shell quote the whole argument: '{key}=[1, 2]' or "
                          f"'{key}=\"some text\"')") from None
    return key, value


def check_keys(arguments: Sequence[str], assignments: list[tuple[str, Any]]) -> None:
    """Refuse a key given twice (which value was meant?) and a key that changes no run, which a what-if cannot
    predict (it would say no key differs)."""
    seen: dict[str, str] = {}
    for text, (key, _) in zip(arguments, assignments, strict=True):
        if key in seen:
            raise WhatIfError(f"--what-if {seen[key]} {text}: {key} is given twice; give it once")
        seen[key] = text
        section, _, name = key.partition(".")
        if section == "study":
            raise WhatIfError(f"--what-if {text}: [study] keys name the study and change no run; a what-if changes "
                              f"{_changeable()}")
        if section not in (*RUN_SECTIONS, "cluster") or (section == "cluster" and name not in CLUSTER_KEYS):
            raise WhatIfError(f"--what-if {text}: {key} changes no run that a what-if predicts; a what-if changes "
                              f"{_changeable()}")


def _changeable() -> str:
    return (f"{', '.join(f'[{s}]' for s in RUN_SECTIONS)} keys and [cluster] "
            f"{', '.join(CLUSTER_KEYS)}")


def _axes() -> tuple[str, ...]:
    from cockpit.study.spec import AXES

    return AXES


def split_arguments(text: str) -> list[str]:
    """`train.bucket_cap_mb=0.5 sweep.gpus_per_node=[1, 2]` -> the two KEY=VALUE arguments: split at spaces
    outside brackets and quotes (what a shell does with `--what-if` arguments quoted as needed)."""
    out, current, depth, quote = [], "", 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch.isspace() and depth <= 0:
            if current:
                out.append(current)
            current = ""
            continue
        current += ch
    return [*out, current] if current else out


def variant_of(study: Study, assignments: list[tuple[str, Any]]) -> Study:
    """The study file with each KEY set to its VALUE, validated as a study file is (cockpit.study.spec's errors)."""
    from cockpit.study.spec import SpecError, parse_study

    try:
        raw = tomllib.loads(study.path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise WhatIfError(f"{study.path}: {exc}") from exc
    raw = copy.deepcopy(raw)
    for key, value in assignments:
        *tables, name = key.split(".")
        table = raw
        for i, part in enumerate(tables):
            nxt = table.setdefault(part, {})
            if not isinstance(nxt, dict):
                raise WhatIfError(f"--what-if {key}: [{'.'.join(tables[:i + 1])}] is a value, not a table")
            table = nxt
        table[name] = value
    try:
        return parse_study(raw, study.path)
    except SpecError as exc:
        what = " ".join(f"{k}={advice.toml_value(v)}" for k, v in assignments)
        raise WhatIfError(f"--what-if {what}: {exc}{_bound_hint(str(exc), raw, assignments)}") from None


def _bound_hint(error: str, raw: dict[str, Any], assignments: list[tuple[str, Any]]) -> str:
    """`; add cluster.gpus_per_node=4 to the what-if` where a widened [sweep] axis is refused for a [cluster]
    bound the what-if did not raise; else nothing."""
    for axis, bound in BOUNDED_AXES.items():
        values = (raw.get("sweep") or {}).get(axis)
        if f"[sweep].{axis} contains" in error and isinstance(values, list) and values \
                and all(isinstance(v, int) for v in values) and f"cluster.{bound}" not in dict(assignments):
            return f"; add cluster.{bound}={max(values)} to the what-if"
    return ""


@dataclass(frozen=True)
class Recorded:
    """A configuration as the study recorded it: measured, or predicted from the study as it stands."""

    t_s: float
    speedup: float
    efficiency: float
    node_hours: float
    how: str  # "measured" or "predicted"


@dataclass(frozen=True)
class KeyChange:
    """One key the what-if changes: where it is (`[train] bucket_cap_mb`, `[sweep] gpus_per_node`), its value
    in the study as recorded and in the what-if (None: unset)."""

    where: str
    before: Any
    after: Any


@dataclass(frozen=True)
class WhatIfLine:
    label: str
    words: dict[str, str]  # the label's words by what each stands for (Configuration.label_words)
    config_id: str
    workers: int
    nodes: int
    recorded: Recorded | None
    predicted: advice.Forecast | prediction.NoPrediction
    estimate_node_hours: float  # the per-run estimate when there is no prediction
    fits: bool = True  # False: more cores than a node has (the plan's "too big"); never submitted

    @property
    def node_hours(self) -> float:
        if not self.fits:
            return 0.0
        p = self.predicted
        return p.node_hours if isinstance(p, advice.Forecast) else self.estimate_node_hours


@dataclass(frozen=True)
class WhatIf:
    study: str
    assignments: list[tuple[str, Any]]
    changes: list[KeyChange]  # what differs from the study as recorded
    lines: list[WhatIfLine]
    dropped: list[str]  # configurations of the study that the what-if no longer has
    links: prediction.Links
    node_cores: int | None = None  # the cores a configuration must fit in, as the plan says
    spread: interval.Spread | None = None  # the study's error model, as its plan gives it (cockpit.forecast.interval)

    def interval(self, line: WhatIfLine) -> interval.Interval | None:
        """T's 90% interval of a predicted line; none for one that stands as measured (nothing changed it)."""
        p = line.predicted
        if self.spread is None or not isinstance(p, advice.Forecast) or p.basis.startswith("measured ("):
            return None
        return interval.interval(p.t_s, interval.for_terms(self.spread, p.t_s, p.term_sd))

    @property
    def recorded_node_hours(self) -> float:
        return sum(line.recorded.node_hours for line in self.lines if line.recorded is not None)


def what_if(study: Study, variant: Study, results: list[dict[str, Any]], links: prediction.Links,
            assignments: list[tuple[str, Any]], cores: int | None = None) -> WhatIf:
    """Every configuration of `variant` predicted from `study`'s recorded `results`; one that does not fit a
    node (Study.fits_node with the backend's `cores`, as the plan asks it) is marked so, not predicted."""
    from cockpit.forecast.analysis import analyse
    from cockpit.study.spec import AXES, Configuration

    recorded = advice.Recorded(results)
    measured = {r["config_id"]: r for r in analyse(results) if r.get("status") == "completed"}
    original = {cfg.config_id: cfg for cfg in study.matrix()}
    # an axis set to another single value: each configuration stands against the one it replaces
    swapped = {a: study.sweep[a][0] for a in AXES
               if len(study.sweep[a]) == 1 and len(variant.sweep[a]) == 1 and study.sweep[a] != variant.sweep[a]}
    lines, kept = [], set()
    for cfg in (c for c in variant.matrix() if c.run == 1):  # a repeated baseline's runs: one configuration
        was = Configuration(**{**cfg.values(), **swapped})
        kept.add(was.config_id)
        target = variant.run_config(cfg)
        try:
            changes = advice.diff_keys(study.run_config(cfg), target)
        except KeyError:  # a dataset the study does not have
            changes = [("dataset", None, cfg.dataset)]
        predicted = advice.forecast(target, recorded, links, changes)
        lines.append(WhatIfLine(cfg.label, cfg.label_words(), cfg.config_id, cfg.workers, cfg.nodes,
                                _as_recorded(study, original.get(was.config_id), measured.get(was.config_id),
                                             recorded, links),
                                predicted, variant.node_hours(cfg), variant.fits_node(cfg, cores)))
    dropped = [cfg.label for cfg in study.matrix() if cfg.run == 1 and cfg.config_id not in kept]
    node_cores = variant.cluster.cores_per_node if cores is None else min(cores, variant.cluster.cores_per_node)
    return WhatIf(variant.name, assignments, _changes(study, variant), lines, dropped, links, node_cores,
                  study_spread(study, results))


def _as_recorded(study: Study, cfg: Configuration | None, row: dict[str, Any] | None, recorded: advice.Recorded,
                 links: prediction.Links) -> Recorded | None:
    if row is not None:
        m = measured_figures(row)
        return Recorded(m.t_s, m.speedup, m.efficiency, m.node_hours, "measured")
    if cfg is None:
        return None
    p = advice.forecast(study.run_config(cfg), recorded, links)
    if isinstance(p, prediction.NoPrediction):
        return None
    return Recorded(p.t_s, p.speedup, p.efficiency, p.node_hours, "predicted")


def _changes(study: Study, variant: Study) -> list[KeyChange]:
    """The keys the what-if changes: the [sweep] axes, the keys of a configuration's run config (the axes
    aside) and the [cluster] keys that differ."""
    out = [KeyChange(f"[sweep] {axis}", study.sweep[axis], variant.sweep[axis])
           for axis in study.sweep if study.sweep[axis] != variant.sweep.get(axis)]
    cfg = next(iter(variant.matrix()), None)
    if cfg is not None and cfg.dataset in study.datasets:
        from cockpit.study.spec import AXES

        for key, before, after in advice.diff_keys(study.run_config(cfg), variant.run_config(cfg)):
            if key not in AXES and key != "train.init_checkpoint":
                section, _, name = key.partition(".")
                where = f"[{section}] {name}" if name else key
                out.append(KeyChange(where, before, after))
    for name in CLUSTER_KEYS:
        a, b = getattr(study.cluster, name), getattr(variant.cluster, name)
        if a != b:
            out.append(KeyChange(f"[cluster] {name}", a, b))
    return out


def links_for(study: Study, results: list[dict[str, Any]], preflight: prediction.Links | None) -> prediction.Links:
    """The link figures a prediction of `study` uses: the runs' own probes, else the preflight's, else the
    site profile's (as cockpit.forecast.plan's)."""
    fallback = prediction.merge(preflight or prediction.Links(), study_site_links(study))
    return prediction.merge(prediction.measured_links(results), fallback)


# --- what a what-if reads and how it is shown (`cockpit plan --what-if`, the TUI's plan dialog) ----------------

@dataclass(frozen=True)
class Inputs:
    """What a study has recorded, read as `cockpit plan` reads it (never written)."""

    results: list[dict[str, Any]]
    preflight: prediction.Links | None = None  # the link figures its latest preflight measured
    store_path: Path | None = None  # None: no store yet
    problems: list[str] = field(default_factory=list)  # one line per result row that does not parse
    cores: int | None = None  # a node's cores as the study's backend sees them (session.node_cores), as the plan
    from_baselines: int = 0  # how many of `results` came from `--baselines`, not from the store


@dataclass(frozen=True)
class Outcome:
    """A what-if asked of a study: the changed study and every configuration of it predicted."""

    study: Study
    variant: Study
    what_if: WhatIf
    inputs: Inputs


def predict(study: Study, arguments: Sequence[str], inputs: Inputs) -> Outcome:
    """`KEY=VALUE` arguments applied to `study` and predicted from what it recorded; WhatIfError names the
    argument that cannot be applied, or the site profile that cannot be read."""
    from cockpit.study.sites import SiteError

    if not arguments:
        raise WhatIfError("--what-if: give KEY=VALUE, e.g. train.bucket_cap_mb=0.5 or sweep.gpus_per_node=[1, 2, 4]")
    assignments = [parse_assignment(a) for a in arguments]
    check_keys(arguments, assignments)
    variant = variant_of(study, assignments)
    try:
        links = links_for(variant, inputs.results, inputs.preflight)
    except (SiteError, ValueError) as exc:
        raise WhatIfError(str(exc)) from exc
    return Outcome(study, variant, what_if(study, variant, inputs.results, links, assignments, inputs.cores), inputs)
