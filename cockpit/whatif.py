"""`cockpit plan STUDY --what-if KEY=VALUE`: the study with some keys changed, predicted from what it has
recorded before a node-hour is spent on the change.

Each configuration of the changed study is predicted by cockpit.advice.forecast (the model of
docs/prediction.md from the recorded baselines; a measured run of the same scale changed part by part as
the model changes it), beside the same configuration as recorded (measured, or predicted from the study
as it stands). Values are TOML literals; the changed study is validated by cockpit.spec, so an unknown key
or an impossible value is refused in the spec's own words.
"""

from __future__ import annotations

import copy
import tomllib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cockpit import advice, prediction

if TYPE_CHECKING:
    from cockpit.spec import Configuration, Study


class WhatIfError(ValueError):
    """A --what-if argument cannot be applied; the message names it."""


def parse_assignment(text: str) -> tuple[str, Any]:
    """`train.bucket_cap_mb=100` -> ("train.bucket_cap_mb", 100); the value is a TOML literal."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise WhatIfError(f"--what-if {text}: expected KEY=VALUE, e.g. train.bucket_cap_mb=100")
    if len(key.split(".")) < 2 or any(not part for part in key.split(".")):
        raise WhatIfError(f"--what-if {text}: KEY is a section and a key, e.g. train.steps or sweep.gpus_per_node")
    try:
        value = tomllib.loads(f"value = {raw.strip()}")["value"]
    except tomllib.TOMLDecodeError:
        raise WhatIfError(f"--what-if {text}: {raw.strip()!r} is not a TOML value (a string needs quotes: "
                          f"{key}=\"{raw.strip()}\", a list brackets: {key}=[1, 2])") from None
    return key, value


def variant_of(study: Study, assignments: list[tuple[str, Any]]) -> Study:
    """The study file with each KEY set to its VALUE, validated as a study file is (cockpit.spec's errors)."""
    from cockpit.spec import SpecError, parse_study

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
        raise WhatIfError(f"--what-if {what}: {exc}") from None


@dataclass(frozen=True)
class Recorded:
    """A configuration as the study recorded it: measured, or predicted from the study as it stands."""

    t_s: float
    speedup: float
    efficiency: float
    node_hours: float
    how: str  # "measured" or "predicted"


@dataclass(frozen=True)
class WhatIfLine:
    label: str
    config_id: str
    workers: int
    nodes: int
    recorded: Recorded | None
    predicted: advice.Forecast | prediction.NoPrediction
    estimate_node_hours: float  # the per-run estimate when there is no prediction

    @property
    def node_hours(self) -> float:
        p = self.predicted
        return p.node_hours if isinstance(p, advice.Forecast) else self.estimate_node_hours


@dataclass(frozen=True)
class WhatIf:
    study: str
    assignments: list[tuple[str, Any]]
    changes: list[str]  # what differs from the study as recorded, in words
    lines: list[WhatIfLine]
    dropped: list[str]  # configurations of the study that the what-if no longer has
    links: prediction.Links
    link_words: list[str] = field(default_factory=list)

    @property
    def recorded_node_hours(self) -> float:
        return sum(line.recorded.node_hours for line in self.lines if line.recorded is not None)


def what_if(study: Study, variant: Study, results: list[dict[str, Any]], links: prediction.Links,
            assignments: list[tuple[str, Any]]) -> WhatIf:
    """Every configuration of `variant` predicted from `study`'s recorded `results`."""
    from cockpit.analysis import analyse
    from cockpit.spec import AXES, Configuration

    recorded = advice.Recorded(results)
    measured = {r["config_id"]: r for r in analyse(results) if r.get("status") == "completed"}
    original = {cfg.config_id: cfg for cfg in study.matrix()}
    # an axis set to another single value: each configuration stands against the one it replaces
    swapped = {a: study.sweep[a][0] for a in AXES
               if len(study.sweep[a]) == 1 and len(variant.sweep[a]) == 1 and study.sweep[a] != variant.sweep[a]}
    lines, kept = [], set()
    for cfg in variant.matrix():
        was = Configuration(**{**cfg.values(), **swapped})
        kept.add(was.config_id)
        target = variant.run_config(cfg)
        try:
            changes = advice.diff_keys(study.run_config(cfg), target)
        except KeyError:  # a dataset the study does not have
            changes = [("dataset", None, cfg.dataset)]
        predicted = advice.forecast(target, recorded, links, changes)
        lines.append(WhatIfLine(cfg.label, cfg.config_id, cfg.workers, cfg.nodes,
                                _as_recorded(study, original.get(was.config_id), measured.get(was.config_id),
                                             recorded, links),
                                predicted, variant.node_hours(cfg)))
    dropped = [cfg.label for cfg in study.matrix() if cfg.config_id not in kept]
    return WhatIf(variant.name, assignments, _changes(study, variant), lines, dropped, links, link_words(links))


def _as_recorded(study: Study, cfg: Configuration | None, row: dict[str, Any] | None, recorded: advice.Recorded,
                 links: prediction.Links) -> Recorded | None:
    if row is not None:
        fixed = row.get("fixed_s") or 0.0
        return Recorded(row["train_time_s"], row.get("speedup", float("nan")), row.get("efficiency", float("nan")),
                        (row["train_time_s"] + fixed) * row["nodes"] / 3600.0, "measured")
    if cfg is None:
        return None
    p = advice.forecast(study.run_config(cfg), recorded, links)
    if isinstance(p, prediction.NoPrediction):
        return None
    return Recorded(p.t_s, p.speedup, p.efficiency, p.node_hours, "predicted")


def _changes(study: Study, variant: Study) -> list[str]:
    """The keys the what-if changes, as `[train] bucket_cap_mb unset -> 1.0` and `[sweep] gpus_per_node
    [1, 2] -> [1, 2, 4]`."""
    out = [f"[sweep] {axis} {advice.toml_value(study.sweep[axis])} -> {advice.toml_value(variant.sweep[axis])}"
           for axis in study.sweep if study.sweep[axis] != variant.sweep.get(axis)]
    cfg = next(iter(variant.matrix()), None)
    if cfg is not None and cfg.dataset in study.datasets:
        from cockpit.spec import AXES

        for key, before, after in advice.diff_keys(study.run_config(cfg), variant.run_config(cfg)):
            if key not in AXES and key != "train.init_checkpoint":
                section, _, name = key.partition(".")
                where = f"[{section}] {name}" if name else key
                out.append(f"{where} {advice.toml_value(before)} -> {advice.toml_value(after)}")
    for name in ("gpus_per_node", "cores_per_node", "site", "node_hour_budget", "expected_minutes"):
        a, b = getattr(study.cluster, name), getattr(variant.cluster, name)
        if a != b:
            out.append(f"[cluster] {name} {advice.toml_value(a)} -> {advice.toml_value(b)}")
    return out


def links_for(study: Study, results: list[dict[str, Any]], preflight: prediction.Links | None) -> prediction.Links:
    """The link figures a prediction of `study` uses: the runs' own probes, else the preflight's, else the
    site profile's (as cockpit.plan's)."""
    from cockpit.plan import _site

    fallback = prediction.merge(preflight or prediction.Links(), prediction.site_links(_site(study)))
    return prediction.merge(prediction.measured_links(results), fallback)


def link_words(links: prediction.Links) -> list[str]:
    """`intra_node 0.32 GB/s: measured by 2 run(s) of this study` for each link kind there is a figure for."""
    out = []
    for kind in ("intra_node", "inter_node"):
        link = getattr(links, kind)
        if link is not None:
            latency = f", {link.latency_s * 1e6:g} us per all-reduce" if link.latency_s else ""
            out.append(f"{kind} {link.busbw / 1e9:.3g} GB/s{latency}: {link.source}")
        else:
            out.append(f"{kind}: none (set {kind}_busbw_gbs in the site profile or run cockpit preflight)")
    return out
