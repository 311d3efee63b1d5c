"""`cockpit plan STUDY --what-if KEY=VALUE [...]`: the changed study predicted from the recorded one
(cockpit.whatif), per configuration beside the study as recorded, with the link figures it used."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from cockpit.prediction import Links
    from cockpit.spec import Study
    from cockpit.whatif import WhatIf


def main(study: Study, args: argparse.Namespace, console: Console, err: Console,
         baselines: Callable[[], list[dict[str, Any]]]) -> int:
    """`baselines`: the results of `--baselines DIR` (cockpit.commands.plan.baseline_results)."""
    from cockpit.launch.slurm.sites import SiteError
    from cockpit.store import StoreError
    from cockpit.whatif import WhatIfError, links_for, parse_assignment, variant_of, what_if

    def fail(message: str) -> int:
        err.print(f"error: {message}", style="bold red", markup=False, highlight=False, soft_wrap=True)
        return 2

    if args.render:
        return fail("--render writes the study's own scripts: give it without --what-if (a what-if is not run)")
    try:
        assignments = [parse_assignment(a) for a in args.what_if]
        variant = variant_of(study, assignments)
        results, preflight, store_path, problems = recorded_inputs(study, baselines())
        links = links_for(variant, results, preflight)
        w = what_if(study, variant, results, links, assignments)
    except (WhatIfError, ValueError, SiteError, StoreError) as exc:
        return fail(str(exc))
    console.print(what_if_table(study, variant, w))
    console.print(what_if_summary(w, store_path, len(results)), markup=False, highlight=False, soft_wrap=True)
    for problem in problems:
        err.print(f"error: {problem}", style="bold red", markup=False, highlight=False, soft_wrap=True)
    return 2 if problems else 0


def recorded_inputs(study: Study, baselines: list[dict[str, Any]]
                    ) -> tuple[list[dict[str, Any]], Links | None, Path | None, list[str]]:
    """What the study has recorded, read as `cockpit plan` reads it (the store session.store_path_for finds,
    never written): its results plus `baselines`, the link figures its latest preflight measured, the store
    (None when there is none) and one line per result row that does not parse."""
    from cockpit import prediction
    from cockpit.session import store_path_for

    store_path = store_path_for(study)
    if not store_path.exists():
        return list(baselines), None, None, []
    from cockpit.preflight import record
    from cockpit.store import StudyStore

    store = StudyStore(store_path, read_only=True)
    try:
        with store.reading():
            if study.name not in store.study_names():
                return list(baselines), None, store_path, []
            key = store.study_key(study.name)
            results = [*baselines, *store.results(key).values()]
            problems = [f"{store_path}: {p}" for p in store.result_problems(key)]
            kept = record.latest(store, study.name)
    finally:
        store.close()
    measured = prediction.preflight_links(kept.links, kept.digest) if kept is not None else None
    return results, measured, store_path, problems


def _f(value: float | None, spec: str) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def _label(cfg_label: str, keep: set[str]) -> str:
    """The configuration label's words for the axes that vary (config_label's order) and its NxG."""
    words = cfg_label.split()
    # config_label: dataset mode w.. NxG c.. precision b..
    names = ("dataset", "mode", "window", "scale", "cpus_per_task", "precision", "batch_size")
    return " ".join(w for name, w in zip(names, words, strict=False) if name in keep or name == "scale")


def what_if_table(study: Study, variant: Study, w: WhatIf):  # noqa: ANN201 - a rich Table
    """One row per configuration of the what-if: as recorded (T, S, E: measured or predicted), the what-if's
    prediction with its inputs (work, T, T1: S = T1 / (T / work), E = S / N, node-hours) and the change."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    from cockpit import advice
    from cockpit.plan import hours

    keep = {a for a in variant.sweep if len(set(study.sweep.get(a, [])) | set(variant.sweep[a])) > 1}
    asked = " ".join(f"{k}={advice.toml_value(v)}" for k, v in w.assignments)
    table = Table(title=escape(f"{study.name}: what if {asked}"),
                  caption="work: samples / the baseline's; S = T1 / (T / work), E = S / N; was: the study as "
                          "recorded (* predicted, else measured); ΔT = T - was T. After the configuration: m = as "
                          "measured, m+Δ = measured with each part changed as the model changes it, model = the "
                          "model alone, x = extrapolated (below)",
                  box=box.SIMPLE_HEAD, pad_edge=False, caption_justify="left")
    for column in ("config", "work", "T s", "T1 s", "S", "E", "node-h", "was T", "was E", "ΔT s"):
        table.add_column(column, justify="left" if column == "config" else "right", no_wrap=column != "config",
                         overflow="fold")
    for line in w.lines:
        r, p = line.recorded, line.predicted
        was = (_f(r.t_s, ".2f") + ("*" if r.how != "measured" else ""), _f(r.efficiency, ".2f")) if r else ("-", "-")
        if isinstance(p, advice.Forecast):
            now = (_f(p.work, "g"), _f(p.t_s, ".2f"), _f(p.t1_s, ".2f"), _f(p.speedup, ".2f"), _f(p.efficiency, ".2f"),
                   hours(p.node_hours))
            delta = _f(p.t_s - r.t_s, "+.2f") if r else "-"
            label = f"{_label(line.label, keep)} {_basis_word(p)}"
        else:
            now = ("-", "-", "-", "-", "-", hours(line.node_hours))
            delta = "-"
            label = f"{_label(line.label, keep)} not predicted"
        table.add_row(label, *now, *was, delta)
    return table


def _basis_word(p: Any) -> str:
    word = "m" if p.basis.startswith("measured (") else "m+Δ" if p.basis.startswith("measured") else "model"
    return word + (" x" if p.extrapolated else "")


def what_if_summary(w: WhatIf, store_path: Path | None, recorded: int) -> str:
    """What changed, node-hours before and after, the link figures used, what is extrapolated and why some
    configurations are not predicted."""
    from cockpit import advice
    from cockpit.plan import hours

    lines = ["what-if: " + ("; ".join(w.changes) or "no key differs from the study")]
    predicted = [line for line in w.lines if isinstance(line.predicted, advice.Forecast)]
    lines.append(f"{len(predicted)} of {len(w.lines)} configurations predicted from {recorded} recorded result(s)"
                 + (f" in {store_path}" if store_path else " (no store yet: nothing recorded to predict from)"))
    lines.append(f"node-hours: {hours(sum(line.node_hours for line in w.lines))} for the what-if "
                 f"({len(w.lines) - len(predicted)} at the per-run estimate) against "
                 f"{hours(w.recorded_node_hours)} as recorded ({sum(1 for li in w.lines if li.recorded)} configurations; "
                 "* = predicted, not measured)")
    lines.append("link figures: " + "; ".join(w.link_words))
    extrapolated: dict[str, list[str]] = {}
    unpredicted: dict[str, list[str]] = {}
    for line in w.lines:
        p = line.predicted
        if isinstance(p, advice.Forecast):
            for why in p.extrapolated:
                extrapolated.setdefault(why, []).append(line.label)
        else:
            unpredicted.setdefault(p.reason, []).append(line.label)
    for why, labels in extrapolated.items():
        lines.append(f"extrapolated ({len(labels)}): {why}")
    for why, labels in unpredicted.items():
        lines.append(f"not predicted ({len(labels)}): {why}")
    if w.dropped:
        lines.append(f"not in the what-if ({len(w.dropped)}): " + ", ".join(w.dropped))
    return "\n".join(lines)
