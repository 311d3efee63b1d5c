"""The sweep axes every run records at the top of its config.json, declared once: type, default, bounds, how
each shows (table column, filter names, label tag) and what it does to the prediction; and the one label and id
a configuration gets from them. Standard library only: the trainer reads a run's axes by these keys, the cockpit
builds its matrix, ids, labels, columns and filters from them.

dataset, mode and window are the HLM trainer's own axes (`Axis.hlm`): a configuration id has digested them from
the start, so they stay in this one table for the ids of every store to survive; a configuration of another
workload never reads them (`unread`) and shows no word or column for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from runcontract.keys import RECORDED, Axis, ConfigKey, Effect, key, keys_of

MODES = ("foundation", "finetune")
PRECISIONS = ("fp32", "bf16", "fp16")
STRATEGIES = ("ddp", "zero1", "fsdp", "fsdp_noreshard")  # data parallelism: trainer.parallelism.parallel, docs/strategies.md
# what each strategy keeps only a 1/N share of on a worker (the trainer's result.json and the cockpit's prediction)
STRATEGY_SHARDS: dict[str, tuple[str, ...]] = {"ddp": (), "zero1": ("optimizer",),
                                               "fsdp": ("params", "grads", "optimizer"),
                                               "fsdp_noreshard": ("params", "grads", "optimizer")}


@dataclass(frozen=True)
class AxisKeys:
    """The sweep axes: a configuration is one value of each. config.json keeps them at its top level; a study
    sweeps them in [sweep] and sets the default of those in [train] there. The field order is the matrix's."""

    dataset: str = key("synthetic", "the dataset's name in [data.datasets] (standalone: the data folder's name)",
                       study=False,
                       axis=Axis("dataset", ("dataset",), short="data", core=True, hlm=True), windows=True, effect=RECORDED)
    mode: str = key("foundation", "foundation (masked-span prediction) or finetune (classification)",
                    choices=MODES, axis=Axis("mode", ("mode",), core=True, hlm=True), resume=True, windows=True, effect=RECORDED)
    window: int = key(256, "tokens per training window", minimum=2, unit="tokens",
                      axis=Axis("window", ("window", "w"), "w{}", "window {}", short="w", core=True, hlm=True), resume=True, windows=True, effect=RECORDED)
    precision: str = key("fp32", "numeric precision of the forward pass", choices=PRECISIONS,
                         axis=Axis("precision", ("prec", "precision"), short="prec", core=True), effect=Effect("recorded", ("compute",)))
    batch_size: int = key(32, "windows per worker per step", minimum=1, unit="windows",
                          axis=Axis("batch", ("batch", "batch_size"), "b{}", "batch {}", short="b", core=True), resume=True, effect=Effect("formula", ("comm", "optimizer", "other"), "f = b'/b: data wait and compute per step x f, optimizer, other and all-reduce per step as the baseline's, steps / f"))
    cpus_per_task: int | None = key(None, "CPU cores per worker (default: SLURM_CPUS_PER_TASK, else 1; a "
                                    "study's matrix uses 1)", minimum=1, unit="cores",
                                    axis=Axis("CPUs/task", ("cpus", "cpus/task", "cpus_per_task", "cpu"), "c{}",
                                              "{} CPUs/task", short="c", core=True), effect=Effect("recorded", ("compute", "data_wait"), "only from a recorded baseline with that many cores per task"))
    strategy: str = key("ddp", "data parallelism: ddp (a full replica per worker), zero1 (optimizer state "
                        "sharded), fsdp (parameters, gradients and optimizer state sharded), fsdp_noreshard (fsdp "
                        "keeping the gathered parameters from forward to backward)", choices=STRATEGIES,
                        resume=True, axis=Axis("strategy", ("strategy", "strat"), short="strat"), effect=Effect("formula", ("comm", "optimizer"), "per step ddp 2(N-1)/N G all-reduced; zero1 the same plus (N-1)/N P broadcast; fsdp 3(N-1)/N P all-gathered twice and reduce-scattered (fsdp_noreshard 2); memory per rank params, grads, optimizer state / N where sharded"))
    gpus_per_node: int = key(1, "workers (GPUs) per node", minimum=1, study=False, flag="",
                             axis=Axis("GPUs/node", ("gpus", "gpus_per_node", "gpus/node"), scale=True, core=True), effect=Effect("formula", ("comm",), "N workers: ring all-reduce over the link the run spans"))
    nodes: int = key(1, "nodes", minimum=1, study=False, flag="", axis=Axis("nodes", ("nodes",), scale=True, core=True), effect=Effect("formula", ("comm",), "N workers: the inter-node link once nodes > 1"))


# an axis a study may default in [train] has section "train"; dataset, gpus_per_node and nodes only [sweep]
AXIS_KEYS = tuple(replace(k, section="train" if k.study else "sweep") for k in keys_of("", AxisKeys, top_level=True))
AXIS_KEY: dict[str, ConfigKey] = {k.name: k for k in AXIS_KEYS}
AXES: tuple[str, ...] = tuple(k.name for k in AXIS_KEYS)
SCALE_AXES: tuple[str, ...] = tuple(k.name for k in AXIS_KEYS if k.axis and k.axis.scale)
AXIS: dict[str, Axis] = {k.name: k.axis for k in AXIS_KEYS if k.axis}
# the order a configuration is shown in (its label, the tables' identity columns): "scale" = nodes x workers
LABEL_ORDER = ("dataset", "mode", "window", "scale", "cpus_per_task", "precision", "batch_size", "strategy")
assert set(LABEL_ORDER) - {"scale"} == set(AXES) - set(SCALE_AXES), "every axis has its place in LABEL_ORDER"


def shows(axis: ConfigKey, values: Mapping[str, Any]) -> bool:
    """Whether an axis enters a configuration's id and label: a core axis always; an axis added later only when
    the configuration sets it away from its default (absent, as in a store written before it existed, is the
    default)."""
    assert axis.axis is not None, f"{axis.name} is not a sweep axis"
    return axis.axis.core or values.get(axis.name, axis.default) != axis.default


def unread(axis: ConfigKey, values: Mapping[str, Any]) -> bool:
    """Whether a configuration's program never reads the axis: the HLM's own axes (dataset, mode, window:
    Axis.hlm) in a configuration of another workload (`values["workload"]`, its kind; absent: the HLM
    trainer's), which runs with them at their defaults."""
    return axis.axis is not None and axis.axis.hlm and values.get("workload", "hlm") != "hlm"


def labelled(axis: ConfigKey, values: Mapping[str, Any]) -> bool:
    """Whether an axis has a word in a configuration's label and a column in its tables: as it `shows`, unless
    the configuration's program never reads it (`unread`)."""
    return not unread(axis, values) and shows(axis, values)


def id_values(values: Mapping[str, Any], axes: tuple[ConfigKey, ...] = AXIS_KEYS) -> dict[str, Any]:
    """The axis values a configuration id digests (cockpit.study.spec.Configuration.config_id): every core axis and
    each later axis set away from its default."""
    return {k.name: values[k.name] for k in axes if shows(k, values)}


def label_words(values: Mapping[str, Any]) -> dict[str, str]:
    """The configuration label's words by part (LABEL_ORDER): {"window": "w256", "scale": "1x2", ...}; a
    missing core axis shows as '?', a missing scale axis as 1 (a stored configuration may lack one); a later
    axis at its default shows no word (`shows`); a further run of a repeated configuration ends it (`run 2`)."""
    def tag(name: str) -> str:
        if name == "scale":
            return "x".join(str(values.get(a, 1)) for a in reversed(SCALE_AXES))
        return AXIS[name].tag.format(values.get(name, "?"))

    words = {name: tag(name) for name in LABEL_ORDER if name == "scale" or labelled(AXIS_KEY[name], values)}
    if int(values.get("run") or 1) > 1:  # a repeated baseline's further run (the cockpit's [study].baseline_runs)
        words["run"] = f"run {values['run']}"
    return words


def config_label(values: Mapping[str, Any]) -> str:
    """Short human name of a configuration, every axis in it: `mitdb foundation w256 1x2 c4 bf16 b32`.
    The one label of the plan, the batch scripts, the TUI and the headless run. A script workload's own keys
    follow as the analysis words them (`values["keys"]`: `lr=0.1 pin_memory=true`)."""
    keys = values.get("keys")
    return " ".join([*label_words(values).values(), *([keys] if isinstance(keys, str) and keys else [])])
