"""What a study file may say: the key tables' rules (cockpit.study.tables, runcontract.axes, each kind's own
[cluster] keys, and the HLM trainer's trainer/config_keys/ for [data], [model] and [train]) applied to a parsed
TOML document, table by table, so the study refuses what the trainer would refuse, in the trainer's words, before
a node-hour is spent. The checked values go to cockpit.study.spec, which builds the Study from them.

Every message names the file, the table and the key, and says what was expected and what was found.
"""

from __future__ import annotations

import grp
import os
import re
from pathlib import Path
from typing import Any

from cockpit.study.cluster_kinds import KINDS, kind_of, load_kinds
from cockpit.study.sites import Site, SiteError, load_site
from cockpit.study.tables import CLUSTER_KEYS, STUDY_KEYS
from runcontract.axes import AXIS_KEYS
from runcontract.keys import ConfigKey, judge_table
from trainer.config_keys import (
    DATA_KEYS,
    DATASET_KEYS,
    SPLIT_KEYS,
    TOKENIZER_KEYS,
    check_model,
    check_train,
    section_keys,
)
from trainer.data.errors import DataError
from trainer.data.tokenizer_keys import canonical

SYNTHETIC = "synthetic"


class SpecError(ValueError):
    """A study file is malformed; the message says which file, which key and what was expected."""


def _table(keys: Any) -> dict[str, ConfigKey]:
    return {k.name: k for k in keys}


SECTIONS: dict[str, dict[str, ConfigKey]] = {
    "study": _table(STUDY_KEYS),
    "cluster": _table(CLUSTER_KEYS),
    "data": _table(DATA_KEYS),
    "model": _table(section_keys("model", study=True)),
    "train": _table(section_keys("train", study=True)),
    "sweep": {k.name: ConfigKey("sweep", k.name, (list,)) for k in AXIS_KEYS},
}
AXIS_KEY = _table(AXIS_KEYS)
WORKLOAD_SECTION = "workload"  # what the study runs: cockpit.workloads
TOKENIZER_TABLE = _table(TOKENIZER_KEYS)
DATASET_TABLE = _table(DATASET_KEYS)


def sections(where: str, raw: dict[str, Any], workload_keys: tuple[ConfigKey, ...] = (),
             trainer: bool = True) -> dict[str, dict[str, Any]]:
    """The study file's top-level tables, each checked, and the rules across a table's keys. [workload] is the
    workload's own (cockpit.workloads); its keys sweep under [sweep] beside the axes. ``trainer``: the HLM
    trainer runs, so [model] and [train] must make a whole run (steps or epochs); a script brings its own."""
    unknown = sorted(set(raw) - set(SECTIONS) - {WORKLOAD_SECTION})
    if unknown:
        raise SpecError(f"{where}: unknown section [{unknown[0]}]; expected one of "
                        f"{', '.join([*SECTIONS, WORKLOAD_SECTION])}")
    tables = {**SECTIONS, "sweep": {**SECTIONS["sweep"], **{k.name: ConfigKey("sweep", k.name, (list,))
                                                           for k in workload_keys}}}
    out = {}
    for name, keys in tables.items():
        values = raw.get(name, {})
        if not isinstance(values, dict):
            raise SpecError(f"{where}: [{name}] must be a table, found {type(values).__name__}")
        out[name] = cluster_table(where, values) if name == "cluster" else \
            judge_table(where, f"[{name}]", values, keys, SpecError)
    for name, check in (("model", check_model), ("train", check_train)) if trainer else ():
        problem = check(out[name])
        if problem:
            raise SpecError(f"{where}: {problem}")
    study = out["study"]["name"]
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", study):
        raise SpecError(f"{where}: [study].name {study!r} must be 1-64 letters, digits, '_', '.', '-'")
    return out


def cluster_table(where: str, values: dict[str, Any]) -> dict[str, Any]:
    """[cluster] judged: every kind's keys (ClusterKeys) and the named kind's own, which its backend declares
    (ClusterKind.keys), as `own`; a key of another kind is refused naming the kind that takes it."""
    kind_key = SECTIONS["cluster"]["kind"]
    name = judge_table(where, "[cluster]", {"kind": values.get("kind", kind_key.default)}, {"kind": kind_key},
                       SpecError)["kind"]
    try:
        facts = kind_of(where, name)
    except ValueError as exc:
        raise SpecError(str(exc)) from None
    own = _table(facts.keys)
    kinds = load_kinds()
    for key in sorted(set(values) - set(SECTIONS["cluster"]) - set(own)):
        takers = [k.name for k in kinds.values() if any(x.name == key for x in k.keys)]
        if takers:
            theirs = f"its own keys are {', '.join(own)}" if own else "it takes only the keys every kind takes"
            raise SpecError(f"{where}: [cluster].{key} is a key of kind = \"{takers[0]}\"; kind = \"{name}\" does "
                            f"not take it ({theirs})")
    judged = judge_table(where, "[cluster]", values, {**SECTIONS["cluster"], **own}, SpecError)
    return {**{k: judged[k] for k in SECTIONS["cluster"]}, "own": {k: judged[k] for k in own}}


def parse_time_limit(where: str, value: str | int) -> int:
    """Slurm time formats (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS) -> whole minutes."""
    if isinstance(value, int):
        if value < 1:
            raise SpecError(f"{where}: [cluster].time_limit must be at least 1 minute, got {value}")
        return value
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", value.strip())
    if not match:
        raise SpecError(f"{where}: [cluster].time_limit {value!r} is not a Slurm time (e.g. 02:00:00 or 1-12:00:00)")
    days, a, b, c = match.groups()
    parts = [int(x) for x in (a, b, c) if x is not None]
    # Slurm reads the first field as a count (minutes, or hours in HH:MM:SS) and the rest as clock fields:
    # minutes and seconds 0-59, and after a day hours 0-23
    names = ("hours", "minutes", "seconds")[:len(parts)] if days is not None else ("hours", "minutes", "seconds")[-len(parts):]
    clock = list(zip(names, parts, strict=True))[0 if days is not None else 1:]
    for name, field in clock:
        top = 23 if name == "hours" else 59
        if field > top:
            raise SpecError(f"{where}: [cluster].time_limit {value!r}: expected a Slurm time (MM, MM:SS, HH:MM:SS or "
                            f"D-HH:MM:SS) with {name} 0-{top}, found {field} {name}")
    if days is not None:
        hours, minutes, seconds = (parts + [0, 0])[:3]
        total = int(days) * 1440 + hours * 60 + minutes + (1 if seconds else 0)
    elif len(parts) == 3:
        total = parts[0] * 60 + parts[1] + (1 if parts[2] else 0)
    elif len(parts) == 2:
        total = parts[0] + (1 if parts[1] else 0)
    else:
        total = parts[0]
    if total < 1:
        raise SpecError(f"{where}: [cluster].time_limit {value!r} is shorter than a minute")
    return total


def cluster_values(where: str, c: dict[str, Any], path: Path) -> dict[str, Any]:
    """[cluster] checked across its keys, with the local defaults resolved (workdir, cores)."""
    try:
        facts = kind_of(where, c["kind"])
    except ValueError as exc:
        raise SpecError(str(exc)) from None
    kind = facts.name
    if facts.over_ssh:
        if not c["workdir"]:  # account and qos: required where the site profile says so (require_account)
            raise SpecError(f"{where}: [cluster].workdir is required when kind = \"{kind}\"")
        if not (c["own"].get("ssh_host") or c["own"].get("host")):
            raise SpecError(f"{where}: [cluster] needs ssh_host (an ~/.ssh/config alias) or host when kind = \"{kind}\"")
        if not c["workdir"].startswith(("/", "~", "$")):
            raise SpecError(f"{where}: [cluster].workdir {c['workdir']!r} must be an absolute path on the cluster")
    workdir = c["workdir"]
    if facts.on_this_machine:
        base = workdir or os.path.join(os.environ.get("XDG_DATA_HOME", "~/.local/share"), "hlm-cockpit")
        workdir = str((path.parent / os.path.expanduser(base)).resolve())
    for key in ("modules", "container_binds"):
        bad = [item for item in c[key] if not isinstance(item, str)]
        if bad:
            raise SpecError(f"{where}: [cluster].{key} must be a list of strings, found {bad[0]!r}")
    env = c["env"]
    for name, value in env.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise SpecError(f"{where}: [cluster.env] {name!r} is not a valid environment variable name")
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise SpecError(f"{where}: [cluster.env].{name} must be a string or number, found {value!r}")
    site = site_of(where, c["site"], path)
    cores = c["cores_per_node"]
    if cores is None and facts.on_this_machine:
        cores = os.cpu_count() or 1
    if cores is None:  # the profile's cores; Slurm counts each hardware thread as a CPU unless told otherwise
        cores = site.cores_per_node * (1 if c["own"].get("hint_nomultithread") else site.threads_per_core) or None
    if cores is None:
        raise SpecError(f"{where}: [cluster].cores_per_node is required when kind = \"{kind}\" and the site profile "
                        f"({site.source}) does not give cores_per_node")
    if facts.on_this_machine and c["share_group"]:
        _local_group(where, c["share_group"])
    return {**c, "workdir": workdir, "cores_per_node": cores, "time_limit": str(c["time_limit"]),
            "time_limit_minutes": parse_time_limit(where, c["time_limit"]), "env": {k: str(v) for k, v in env.items()}}


def site_of(where: str, name: str, path: Path) -> Site:
    """The study's site profile, read as the backends will read it: an unknown name or an unreadable file is
    refused here, naming the study file (a local study too: its plan and what-if read the profile's figures)."""
    try:
        return load_site(name, relative_to=path.parent)
    except SiteError as exc:
        raise SpecError(f"{where}: {exc}") from None


def _local_group(where: str, group: str) -> None:
    """A local study's files are made on this machine: its share_group must be a group here."""
    try:
        grp.getgrnam(group)
    except KeyError:
        mine = sorted({_group_name(gid) for gid in (os.getgid(), *os.getgroups())})
        raise SpecError(f"{where}: [cluster].share_group {group!r}: expected a Unix group of this machine "
                        f"(kind = \"local\": the files are made here; yours: {', '.join(mine)}), found no such group"
                        ) from None


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def given_keys(where: str, prefix: str, values: dict[str, Any], keys: dict[str, ConfigKey]) -> dict[str, Any]:
    """The keys a table actually gives, checked: defaults are left out so that a more specific table
    overrides single keys of a general one instead of resetting the rest."""
    checked = judge_table(where, prefix, values, keys, SpecError)
    return {k: checked[k] for k in values}


def split_of(where: str, prefix: str, table: dict[str, Any]) -> dict[str, Any]:
    """test_records / patient_pattern of a table, validated by the trainer's own rules."""
    from trainer.data.splits import check_options

    given = {k: table[k] for k in SPLIT_KEYS if table.get(k) is not None}
    try:
        return check_options(given, prefix)
    except DataError as exc:
        raise SpecError(f"{where}: {exc}") from None


def dataset_values(where: str, data: dict[str, Any], path: Path, kind: str) -> list[dict[str, Any]]:
    """Every [data.datasets] entry checked, its tokenizer table by the tokenizer's own validators."""
    default_tok = given_keys(where, "[data.tokenizer]", data["tokenizer"], TOKENIZER_TABLE)
    default_split = split_of(where, "[data]", data)
    entries = data["datasets"] or {SYNTHETIC: {"synthetic": True}}
    out = []
    for name, entry in entries.items():
        prefix = f"[data.datasets].{name}"
        if isinstance(entry, str):
            entry = {"path": entry}
        if not isinstance(entry, dict):
            raise SpecError(f"{where}: {prefix} must be a path string or a table, found {entry!r}")
        d = judge_table(where, prefix, entry, DATASET_TABLE, SpecError)
        # [data.tokenizer] applies to every dataset; the dataset's own table overrides single keys.
        tok = {"name": "samples", **default_tok,
               **given_keys(where, f"{prefix}.tokenizer", d["tokenizer"], TOKENIZER_TABLE)}
        try:  # the tokenizer's own validators (rules across its keys), so the study refuses what prepare would
            canonical(tok)
        except DataError as exc:
            raise SpecError(f"{where}: {prefix}: {exc}") from None
        synthetic = d["synthetic"] or (name == SYNTHETIC and not d["path"])
        data_path = d["path"]
        if not synthetic and not data_path:
            raise SpecError(f"{where}: {prefix} needs a path (or synthetic = true for the built-in generator)")
        if data_path and KINDS[kind].on_this_machine:
            data_path = str((path.parent / os.path.expanduser(data_path)).resolve())
        train_data = list(d["train_data"] or [])
        if train_data and synthetic:
            raise SpecError(f"{where}: {prefix}.train_data goes with a path, not with the synthetic generator")
        if KINDS[kind].on_this_machine:
            train_data = [str((path.parent / os.path.expanduser(p)).resolve()) for p in train_data]
        out.append({
            "name": name, "path": None if synthetic else data_path, "tokenizer": tok, "synthetic": synthetic,
            "synthetic_params": {k: d[k] for k in ("records", "seconds", "seed")} if synthetic else {},
            "skip_bad_records": data["skip_bad_records"] if d["skip_bad_records"] is None else d["skip_bad_records"],
            "split": split_of(where, prefix, d) or default_split,
            "train_data": tuple(train_data),
        })
    return out


def sweep_values(where: str, sweep: dict[str, Any], train: dict[str, Any], datasets: list[str],
                 cluster: dict[str, Any], workload_keys: tuple[ConfigKey, ...] = (),
                 workload_axes: tuple[str, ...] | None = None, workload_kind: str = "hlm") -> dict[str, list[Any]]:
    """Each axis's values (the [train] default where the study does not sweep it), then each workload key's
    (its own default where not swept), each judged by its rule in the trainer's words, then against the cluster
    and the datasets. ``workload_axes``: the axes the workload takes; sweeping another is refused."""
    axes: dict[str, list[Any]] = {}
    for name, k in [*AXIS_KEY.items(), *((k.name, k) for k in workload_keys)]:
        values = sweep[name]
        if values is not None and workload_axes is not None and name in AXIS_KEY and name not in workload_axes:
            raise SpecError(f"{where}: [sweep].{name} is the HLM trainer's axis; a {workload_kind} workload takes "
                            f"{', '.join(workload_axes)} and its own [workload.keys]")
        if values is None and name not in AXIS_KEY:
            values = [k.default]
        elif values is None:
            if name == "dataset":
                values = [datasets[0]]
            elif k.section == "sweep" or train[name] is None:
                values = [1]  # cpus_per_task unset: one core per worker, as the trainer outside Slurm
            else:
                values = [train[name]]
        if not values:
            raise SpecError(f"{where}: [sweep].{name} is empty; give at least one value or leave it out")
        for value in values:
            problem = k.problem(value)
            if problem:
                raise SpecError(f"{where}: [sweep].{name}: {problem}")
        if len(set(values)) != len(values):
            raise SpecError(f"{where}: [sweep].{name} repeats a value: {values}")
        axes[name] = list(values)
    _against_cluster(where, axes, datasets, cluster)
    return axes


def _against_cluster(where: str, axes: dict[str, list[Any]], datasets: list[str], cluster: dict[str, Any]) -> None:
    for value in axes["gpus_per_node"]:
        if value > cluster["gpus_per_node"]:
            raise SpecError(f"{where}: [sweep].gpus_per_node contains {value} but [cluster].gpus_per_node is "
                            f"{cluster['gpus_per_node']}")
    for value in axes["cpus_per_task"]:
        if value > cluster["cores_per_node"]:
            raise SpecError(f"{where}: [sweep].cpus_per_task contains {value} but [cluster].cores_per_node is "
                            f"{cluster['cores_per_node']}")
    if KINDS[cluster["kind"]].on_this_machine and any(n > 1 for n in axes["nodes"]):
        raise SpecError(f"{where}: [sweep].nodes asks for several nodes but [cluster].kind is \"{cluster['kind']}\" "
                        "(one machine)")
    for value in axes["dataset"]:
        if value not in datasets:
            raise SpecError(f"{where}: [sweep].dataset contains {value!r}, which is not in [data.datasets] "
                            f"({', '.join(datasets)})")
