"""The study keys the prediction model prices, and a configuration read as keys.

:func:`key_effects` is each config.json key's modelled effect as the key declares it (the axes in runcontract.axes,
a workload's own keys in its package: `Workload.key_effects`; names as config.json spells them: `batch_size`,
`train.bucket_cap_mb`); docs/prediction.md states each formula. The
rest reads a result's config.json as dotted keys, lists the keys two configurations set differently and
writes a key and its value as a study file and `--what-if` do, so that every view names a key one way.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from cockpit.study.spec import AXES, SCALE_AXES
from cockpit.workloads import WORKLOADS, workload_class
from runcontract.axes import AXIS_KEYS
from runcontract.ddp_buckets import expected_buckets
from runcontract.keys import NOT_PREDICTED, Effect, toml_value

GROUP_AXES = tuple(a for a in AXES if a not in SCALE_AXES)
MAX_BUCKETS = 8  # the bucket advice stays at or below this many buckets (see docs/prediction.md)
BUCKET_LADDER_MB = (100.0, 50.0, 25.0, 10.0, 5.0, 2.0, 1.0, 0.5, 0.25, 0.1, 0.05, 0.025, 0.01)


buckets_for = expected_buckets  # DDP's bucket count, the trainer's formula (runcontract/ddp_buckets.py)


def key_effects() -> Mapping[str, Effect]:
    """What each config.json key does to the prediction, declared on the key itself (`effect=`): the axes' and
    every workload kind's own keys' (a plug-in's included); docs/prediction.md states each formula. Worked out
    once per set of registered kinds (every diff and advice asks it per key)."""
    return _effects(tuple(WORKLOADS))[0]


def identity_keys() -> frozenset[str]:
    """config.json keys that name the run rather than describe it (never a difference between two runs)."""
    return _effects(tuple(WORKLOADS))[1]


@functools.cache
def _effects(kinds: tuple[str, ...]) -> tuple[Mapping[str, Effect], frozenset[str]]:
    out = {k.dest: k.effect for k in AXIS_KEYS if k.effect is not None}
    for kind in kinds:
        out.update(WORKLOADS[kind].key_effects())
    return MappingProxyType(out), frozenset(k for k, e in out.items() if e.model == "identity")


def effect_of(key: str) -> Effect:
    """A dotted config.json key's effect: its key's, a table's entry (`tokenizer.vocab`) its table's; a key no
    table declares (a config.json of another version) is not predicted."""
    effects = key_effects()
    if key in effects:
        return effects[key]
    table, _, _ = key.rpartition(".")
    return effects.get(table, NOT_PREDICTED)



# --- reading configurations --------------------------------------------------------------------------------


def axes_of(result: dict[str, Any]) -> dict[str, Any]:
    """A result's (or a config.json's) axis values; one written before a later axis existed ran at that axis's
    default (runcontract.axes.shows), and so does an axis its workload does not take (a script's config.json
    holds no dataset, mode or window: its matrix fills them with their defaults)."""
    inner = result.get("config")
    cfg: dict[str, Any] = inner if isinstance(inner, dict) else result
    taker = workload_class(cfg)
    taken = set(taker.axes) if taker is not None else set(AXES)
    return {k.name: cfg.get(k.name, result.get(k.name, None if k.axis and k.axis.core and k.name in taken
                                               else k.default))
            for k in AXIS_KEYS}


# axes every workload's run takes, whatever its program reads: the launcher applies them (workers, nodes, and
# the cores each worker gets: OMP_NUM_THREADS and the allocation)
LAUNCHER_AXES = (*SCALE_AXES, "cpus_per_task")


def taken(cfg: dict[str, Any], key: str) -> bool:
    """Whether a run's program reads `key` (a config.json's, as config_of gives it): the launcher's axes always,
    any other key as its workload kind says (`Workload.reads_key`: a script only the keys its command names)."""
    workload, taker = cfg.get("workload"), workload_class(cfg)
    if key in LAUNCHER_AXES or taker is None or not isinstance(workload, dict):
        return True
    return taker.reads_key(workload, key)


def config_of(result: dict[str, Any]) -> dict[str, Any]:
    """The config.json a result was run from (its axes at the top level, as Study.run_config writes it)."""
    cfg = dict(result.get("config") or {})
    for a, value in axes_of(result).items():  # an axis added later: its default (axes_of)
        cfg.setdefault(a, value)
    return cfg


def flat_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """config.json as dotted keys (`train.lr`, `tokenizer.vocab`), its workload's defaults filled in for the keys
    it leaves out (the HLM trainer's [model] and [train]), identity keys left out."""
    out: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        else:
            out[prefix] = value

    identity = identity_keys()
    walk("", {k: v for k, v in cfg.items() if k not in identity})
    taker = workload_class(cfg)
    for key, default in (taker.config_defaults() if taker is not None else {}).items():
        out.setdefault(key, default)
    return {k: v for k, v in out.items() if v is not None}


def diff_keys(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(dotted key, value before, value after) of every key two config.json dicts give differently (None:
    unset)."""
    a, b = flat_config(before), flat_config(after)
    return [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def study_key(key: str, value: Any) -> str:
    """`[train] bucket_cap_mb = 1.0`, `[sweep] batch_size = [32]`: where a study file sets a config key."""
    if key in AXES:
        return f"[sweep] {key} = {toml_value([value])}"
    section, _, name = key.partition(".")
    return f"[{section}] {name} = {toml_value(value)}"


def what_if_arg(key: str, value: Any) -> str:
    """The `cockpit plan --what-if` argument that sets a config key: `train.bucket_cap_mb=1.0`."""
    if key in AXES:
        return f"sweep.{key}={toml_value([value])}"
    return f"{key}={toml_value(value)}"



def get_key(cfg: dict[str, Any], key: str) -> Any:
    if key in AXES:
        return cfg.get(key)
    section, _, name = key.partition(".")
    return (cfg.get(section) or {}).get(name)


def changed(cfg: dict[str, Any], keys: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """A config.json dict with config keys set (`batch_size`, `train.steps`)."""
    out = {**cfg, "train": dict(cfg.get("train") or {}), "model": dict(cfg.get("model") or {})}
    for key, value in keys:
        if key in AXES:
            out[key] = value
        else:
            section, _, name = key.partition(".")
            out[section] = {**(out.get(section) or {}), name: value}
    return out



def bucket_cap(cfg: dict[str, Any]) -> float | None:
    """A config.json's `[train] bucket_cap_mb` (None: DDP's default)."""
    cap = (cfg.get("train") or {}).get("bucket_cap_mb")
    return float(cap) if cap is not None else None


def group_of(ax: dict[str, Any]) -> tuple:
    """A configuration's group: its axis values but the scale (GROUP_AXES order)."""
    return tuple(ax[a] for a in GROUP_AXES)
