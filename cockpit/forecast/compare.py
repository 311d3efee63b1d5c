"""Two studies side by side, configuration by configuration (`cockpit compare STUDY OTHER`).

Configurations are matched by their axes; an axis each study holds at one value, different in each (the
batch size of an advised change), is left out of the match and listed as a key that differs. Per match:
the keys that differ (from the runs' config.json in result.json), T/work, S, E, O and every overhead term
of A and of B with the change, and B as predicted from A's recorded runs (cockpit.forecast.advice.forecast, the
advice's own function) against B as measured. Unmatched configurations are listed, not dropped. This module returns the
Comparison; cockpit.forecast.compare_table words it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cockpit.forecast import advice, interval, prediction


@dataclass
class Pair:
    """A configuration of A and its match in B, with B as predicted from A."""

    a: dict[str, Any]  # cockpit.forecast.analysis rows
    b: dict[str, Any]
    differs: list[tuple[str, Any, Any]]  # config keys that differ (advice.diff_keys)
    predicted: advice.Forecast | prediction.NoPrediction | None = None
    t90: interval.Interval | None = None  # the predicted T's 90% interval (A's error model and the forecast's terms)


@dataclass
class Comparison:
    a_name: str
    b_name: str
    changed_axes: dict[str, tuple[Any, Any]]  # axes left out of the match: (A's value, B's value)
    pairs: list[Pair] = field(default_factory=list)
    only_a: list[dict[str, Any]] = field(default_factory=list)
    only_b: list[dict[str, Any]] = field(default_factory=list)
    links: prediction.Links = field(default_factory=prediction.Links)


def compare(a_name: str, a_results: list[dict[str, Any]], b_name: str, b_results: list[dict[str, Any]],
            links: prediction.Links | None = None) -> Comparison:
    """Match the configurations of two studies' results and predict each of B's from A's runs."""
    from cockpit.forecast.analysis import analyse, analysed
    from cockpit.study.spec import AXES

    (rows_a, spread), rows_b = analysed(a_results), analyse(b_results)
    values_a = {ax: {r.get(ax) for r in rows_a} for ax in AXES}
    values_b = {ax: {r.get(ax) for r in rows_b} for ax in AXES}
    changed = {ax: (next(iter(values_a[ax])), next(iter(values_b[ax]))) for ax in AXES
               if len(values_a[ax]) == 1 and len(values_b[ax]) == 1 and values_a[ax] != values_b[ax]}
    matched = [ax for ax in AXES if ax not in changed]

    def key(r: dict[str, Any]) -> tuple:
        return tuple(r.get(ax) for ax in matched)

    links = prediction.merge(prediction.measured_links(a_results), links or prediction.Links())
    recorded = advice.Recorded(a_results)
    by_b = {key(r): r for r in rows_b}
    out = Comparison(a_name, b_name, changed, links=links)
    for a in rows_a:
        b = by_b.pop(key(a), None)
        if b is None:
            out.only_a.append(a)
            continue
        cfg_a, cfg_b = _config(a), _config(b)
        differs = advice.diff_keys(cfg_a, cfg_b) if cfg_a and cfg_b else []
        differs = [d for d in differs if d[0] != "train.init_checkpoint"]
        predicted = advice.forecast(cfg_b, recorded, links, differs) if cfg_b else None
        t90 = interval.interval(predicted.t_s, interval.for_terms(spread, predicted.t_s, predicted.term_sd)) \
            if isinstance(predicted, advice.Forecast) and predicted.t_s > 0 else None
        out.pairs.append(Pair(a, b, differs, predicted, t90))
    out.only_b = list(by_b.values())
    return out


def _config(row: dict[str, Any]) -> dict[str, Any]:
    result = row.get("result")
    return advice.config_of(result) if isinstance(result, dict) else {}
