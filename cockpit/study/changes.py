"""Whether a finished run measured what the study now asks: its config.json (as result.json keeps it) against the
config.json the study would write today, key by key.

A configuration's id is its axes' digest, so editing `[model] layers` or a script's `command` keeps the id; without
this check the old run would be shown as the new one. Only the keys that can change a run count, and each
workload says which (Workload.counted_keys): the trainer's model, train and data keys, a script's command, mode,
env and the content of its files, and for every workload how the job starts (container, python, modules, env).
What cannot change a run (description, pace, poll interval, budget, where the token cache lies) changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cockpit.workloads import workload_class
from cockpit.workloads.base import flatten

if TYPE_CHECKING:
    from cockpit.study.spec import Configuration, Study

# prefixes a run written before they were recorded lacks: absent there means "not kept", not "changed"
RECORDED_LATER = ("launch.", "workload.digests.")
NO_CONFIG = "the run kept no config: whether it ran these settings is unknown"


@dataclass(frozen=True)
class Change:
    """One key a finished run ran with one value and the study now asks with another (None: not set)."""

    key: str
    ran: Any
    asked: Any

    def words(self) -> str:
        return f"{self.key} {_word(self.ran)} -> {_word(self.asked)}"


def _word(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def counted(config: Mapping[str, Any]) -> dict[str, Any]:
    """The dotted keys of a config.json that can change what its run measures, by its workload's rules."""
    cls = workload_class(config)
    own = cls.counted_keys(config) if cls is not None else {}
    launch = config.get("launch")  # how the job starts (Study.launch_config), key by key
    if isinstance(launch, dict):
        own.update(flatten({"launch": launch}))
    return own


def differences(ran: Mapping[str, Any], asked: Mapping[str, Any]) -> tuple[Change, ...]:
    """The counted keys whose value the run had differs from the study's ask; a key a run of an earlier release
    could not record (RECORDED_LATER) is not a difference."""
    before, after = counted(ran), counted(asked)
    out = []
    for key in sorted(set(before) | set(after)):
        if key not in before and key.startswith(RECORDED_LATER):
            continue
        if before.get(key) != after.get(key):
            out.append(Change(key, before.get(key), after.get(key)))
    return tuple(out)


def run_changes(study: Study, cfg: Configuration, result: Mapping[str, Any]) -> tuple[Change, ...] | None:
    """What the study now asks of `cfg` differently from what its finished run ran (empty: the run stands for
    it); None when the result kept no config (a run of an early release), which the views say in NO_CONFIG."""
    ran = result.get("config")
    if not isinstance(ran, dict) or not ran:
        return None
    return differences(ran, study.run_config(cfg))


def study_changes(study: Study, results: Mapping[str, Mapping[str, Any]]) -> dict[str, tuple[Change, ...]]:
    """Each configuration of the study with a result whose run would differ today, by config id."""
    by_id = {cfg.config_id: cfg for cfg in study.matrix()}
    out = {}
    for cid, result in results.items():
        cfg = by_id.get(cid)
        if cfg is None:
            continue
        changes = run_changes(study, cfg, result)
        if changes:
            out[cid] = changes
    return out


def unknown(study: Study, results: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The config ids of the study whose result kept no config (NO_CONFIG)."""
    ids = {cfg.config_id for cfg in study.matrix()}
    return sorted(cid for cid, r in results.items() if cid in ids and not isinstance(r.get("config"), dict))


def changes_words(changes: tuple[Change, ...]) -> str:
    """`model.layers 2 -> 3, train.steps 40 -> 80`: every view names the keys so."""
    return ", ".join(change.words() for change in changes)
