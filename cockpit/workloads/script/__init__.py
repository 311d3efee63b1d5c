"""A user's own training script as a workload: an argument list with the configuration's values filled in,
the files it needs, its environment, and the study keys it takes (docs/workloads.md, "[workload]").

Values reach the script as argv elements, never through a shell; a batch script quotes them with
cockpit.launch.slurm.quoting or refuses them. The script writes the run directory through the runcontract
library: a few explicit lines, the transformers callback, or no edit at all (mode = "hooks": launched under
`python -m runcontract.attach`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cockpit.workloads.base import ConfigurationParts, StudyParts, Workload, WorkloadError
from runcontract.axes import AXIS_KEYS
from runcontract.contract import MODES, RUN_DIR_ENV
from runcontract.keys import ConfigKey, nearest

ATTACH_MODULE = "runcontract.attach"  # the no-edit wrapper: torch's global hooks around an unmodified script

# the axes a script may take too (its placeholders; [sweep] them as for the HLM): all but the HLM's own (Axis.hlm)
SHARED_AXES = tuple(k.name for k in AXIS_KEYS if k.axis is not None and not k.axis.hlm)
TYPES: dict[str, tuple[type, ...]] = {"int": (int,), "float": (float,), "bool": (bool,), "str": (str,)}
KEY_FIELDS = ("type", "default", "minimum", "maximum", "choices", "help")
TABLE_FIELDS = ("kind", "command", "files", "env", "mode", "work", "keys")
# what an N-worker run of the script does beside its 1-worker baseline, which the plan's first prediction needs
# before any run has counted samples: each worker its own steps (DDP's usual loop), or one total split up
WORK = {"per_worker": "each worker does the configured steps at its batch: N workers do N times the samples",
        "total": "the workers split one fixed amount of work (a DistributedSampler over one epoch)"}
NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")
# figures a mode's results cannot give, said in the plan before anything runs (the result's `attribution`
# then names what a run really did not show)
NOT_GIVEN: dict[str, tuple[str, ...]] = {
    "explicit": ("the parts the script does not time (in other)", "the trainer's model quality (eval)"),
    "callback": ("communication where the Trainer builds no DistributedDataParallel",
                 "the trainer's model quality (eval)"),
    "hooks": ("communication where the script builds no DistributedDataParallel",
              "data wait where the script uses no DataLoader", "the trainer's model quality (eval)"),
}


@dataclass(frozen=True)
class ScriptWorkload(Workload):
    """`torchrun ... SCRIPT ARGS` (explicit, callback) or `torchrun ... -m runcontract.attach SCRIPT ARGS`
    (hooks) on every worker; no prepare step, no study data."""

    command: tuple[str, ...]
    files: tuple[str, ...] = ()
    environment: tuple[tuple[str, str], ...] = ()
    mode: str = "explicit"
    declared: tuple[ConfigKey, ...] = ()
    work: str = "per_worker"

    kind = "script"
    axes = SHARED_AXES
    run_dir_env = RUN_DIR_ENV

    @classmethod
    def from_table(cls, where: str, table: dict[str, Any], study_dir: Path | None) -> ScriptWorkload:
        unknown = sorted(set(table) - set(TABLE_FIELDS))
        if unknown:
            raise WorkloadError(f"{where}: [workload].{unknown[0]} is not a known key ({nearest(unknown[0], TABLE_FIELDS)}); "
                                f"expected one of {', '.join(TABLE_FIELDS)}")
        mode = table.get("mode", "explicit")
        if mode not in MODES:
            raise WorkloadError(f"{where}: [workload].mode: expected one of {', '.join(MODES)}, got {mode!r}")
        keys = _keys(where, table.get("keys", {}))
        work = table.get("work", "per_worker")
        if work not in WORK:
            raise WorkloadError(f"{where}: [workload].work: expected one of {', '.join(WORK)}, got {work!r}")
        command = _strings(where, "command", table.get("command"))
        if not command:
            raise WorkloadError(f"{where}: [workload].command is required for kind = \"script\": the script and its "
                                "arguments, e.g. [\"train.py\", \"--lr\", \"{lr}\"]")
        if command[0].startswith("-"):
            raise WorkloadError(f"{where}: [workload].command[0]: expected the script's path, got {command[0]!r}")
        known = {k.name for k in keys} | set(SHARED_AXES)
        for i, arg in enumerate(command):
            for name in _placeholders(where, i, arg):
                if name not in known:
                    raise WorkloadError(
                        f"{where}: [workload].command[{i}]: {{{name}}} is neither a key of [workload.keys] nor an axis "
                        f"a script takes ({nearest(name, known)}); expected one of {', '.join(sorted(known))}")
        files = _strings(where, "files", table.get("files", []))
        if study_dir is None:  # on the cluster: the job runs in its run directory, so paths are whole there
            for what, path in [("command[0]", command[0]), *(("files", f) for f in files)]:
                if not path.startswith(("/", "~", "$")):
                    raise WorkloadError(f"{where}: [workload].{what}: {path!r} is relative; a study on a cluster "
                                        "names its files by absolute path (or ~/..., $VAR/...) there")
        else:  # on this machine: the files are checked now, and found from any directory (the run directory too:
            # an element of command that names one of files exactly becomes its whole path)
            found = {f: _here(where, "files", f, study_dir) for f in files}
            command = (_here(where, "command[0]", command[0], study_dir), *(found.get(a, a) for a in command[1:]))
            files = tuple(found.values())
        env = table.get("env", {})
        if not isinstance(env, dict):
            raise WorkloadError(f"{where}: [workload].env: expected a table of NAME = \"value\", got {env!r}")
        for name, value in env.items():
            if not ENV_NAME.fullmatch(name):
                raise WorkloadError(f"{where}: [workload].env.{name}: expected a variable name (letters, digits, _)")
            if not isinstance(value, str) or not _one_line(value):
                raise WorkloadError(f"{where}: [workload].env.{name}: expected a string without a line break or "
                                    f"NUL, got {value!r}")
        return cls(command=command, files=files, environment=tuple(env.items()), mode=mode, declared=keys, work=work)

    def keys(self) -> tuple[ConfigKey, ...]:
        return self.declared

    @property
    def work_per_worker(self) -> bool | None:
        return self.work == "per_worker"

    @classmethod
    def config_work_per_worker(cls, table: Mapping[str, Any]) -> bool | None:
        return table.get("work", "per_worker") == "per_worker"

    @classmethod
    def reads_key(cls, table: Mapping[str, Any], key: str) -> bool:
        return key in command_keys(table.get("command") or [])

    def files_needed(self) -> tuple[str, ...]:
        return (self.command[0], *(f for f in self.files if f != self.command[0]))

    def worker_args(self, values: Mapping[str, Any], run_dir: str) -> list[str]:
        args = [_fill(arg, values) for arg in self.command]
        return ["-m", ATTACH_MODULE, *args] if self.mode == "hooks" else args

    def batch_words(self, values: Mapping[str, Any]) -> list[tuple[str, str, bool]] | None:
        words = [("[workload].mode", "-m", False), ("[workload].mode", ATTACH_MODULE, False)] if self.mode == "hooks" else []
        return [*words, *((f"[workload].command[{i}]", _fill(arg, values), i == 0) for i, arg in enumerate(self.command))]

    def env(self) -> dict[str, str]:
        return dict(self.environment)

    def run_config(self, study: StudyParts, cfg: ConfigurationParts) -> dict[str, Any]:
        workload = {"kind": self.kind, "mode": self.mode, "command": list(self.command), "work": self.work,
                    "env": dict(self.environment), "digests": self.digests()}
        return {**super().run_config(study, cfg), "workload": workload}

    def digests(self) -> dict[str, str]:
        """The SHA-256 of the script's and its files' content where they are on this machine (a study run here;
        a cluster's are not read from the laptop): editing the script changes what a run measures."""
        return {path: digest for path in self.files_needed() if (digest := file_digest(path))}

    @classmethod
    def counted_keys(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        out = super().counted_keys(config)
        command = out.get("workload.command")
        if isinstance(command, list) and command:  # the script by name: its content is in workload.digests
            out["workload.command"] = [os.path.basename(str(command[0])), *command[1:]]
        digests = {k: v for k, v in out.items() if k.startswith("workload.digests.")}
        for key in digests:  # the files by name, wherever the study's folder now lies
            del out[key]
        for key, value in digests.items():
            out["workload.digests." + os.path.basename(key[len("workload.digests."):])] = value
        out.pop("workload.work", None)  # how the plan predicts, not what runs
        return out

    def describe(self) -> str:
        return f"script workload (mode {self.mode})"

    def not_given(self) -> tuple[str, ...]:
        return NOT_GIVEN[self.mode]


def _keys(where: str, table: Any) -> tuple[ConfigKey, ...]:
    """[workload.keys]: each key's type, default and bounds, as a ConfigKey of section "sweep"."""
    if not isinstance(table, dict):
        raise WorkloadError(f"{where}: [workload.keys] must be a table, found {table!r}")
    axes = {k.name for k in AXIS_KEYS}
    out = []
    for name, spec in table.items():
        at = f"[workload.keys].{name}"
        if not NAME.fullmatch(name):
            raise WorkloadError(f"{where}: {at}: expected a name of lower-case letters, digits and _ (at most 32)")
        if name in axes:
            raise WorkloadError(f"{where}: {at}: {name!r} is an axis already; sweep it under [sweep] and use "
                                f"{{{name}}} in the command")
        if not isinstance(spec, dict):
            raise WorkloadError(f"{where}: {at}: expected a table like {{type = \"float\", default = 0.1}}, "
                                f"got {spec!r}")
        unknown = sorted(set(spec) - set(KEY_FIELDS))
        if unknown:
            raise WorkloadError(f"{where}: {at}.{unknown[0]} is not a known field ({nearest(unknown[0], KEY_FIELDS)}); "
                                f"expected one of {', '.join(KEY_FIELDS)}")
        kind = spec.get("type")
        if kind not in TYPES:
            raise WorkloadError(f"{where}: {at}.type: expected one of {', '.join(TYPES)}, got {kind!r}")
        if "default" not in spec:
            raise WorkloadError(f"{where}: {at}.default is required (the value where [sweep] does not give one)")
        for bound in ("minimum", "maximum"):
            value = spec.get(bound)
            if value is not None and (kind not in ("int", "float") or isinstance(value, bool)
                                      or not isinstance(value, int | float)):
                raise WorkloadError(f"{where}: {at}.{bound}: expected a number on an int or float key, got {value!r}")
        choices = spec.get("choices")
        if choices is not None and (not isinstance(choices, list) or not choices):
            raise WorkloadError(f"{where}: {at}.choices: expected a non-empty list, got {choices!r}")
        help_text = spec.get("help", "")
        if not isinstance(help_text, str):
            raise WorkloadError(f"{where}: {at}.help: expected a string, got {help_text!r}")
        # a string reaches the script as one argv element, and through a batch script line on a cluster
        text = kind == "str"
        key = ConfigKey("sweep", name, TYPES[kind], spec["default"], help=help_text,
                        choices=tuple(choices) if choices is not None else None, top_level=True,
                        minimum=spec.get("minimum"), maximum=spec.get("maximum"),
                        rule=_one_line if text else None,
                        expected_words="a string without a line break or NUL" if text and choices is None else "")
        if choices is not None:
            for choice in choices:
                if not key.accepts_type(choice):
                    raise WorkloadError(f"{where}: {at}.choices: expected {kind} values, got {choice!r}")
        problem = key.problem(spec["default"])
        if problem:
            raise WorkloadError(f"{where}: {at}.default: {problem}")
        out.append(key)
    return tuple(out)


def _one_line(value: Any) -> bool:
    return not any(ch in str(value) for ch in "\n\r\x00")


def _strings(where: str, name: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise WorkloadError(f"{where}: [workload].{name}: expected a list of strings, got {value!r}")
    if any("\x00" in v or "\n" in v for v in value):
        raise WorkloadError(f"{where}: [workload].{name}: a value holds a NUL or a line break")
    return tuple(value)


def _placeholders(where: str, index: int, arg: str) -> list[str]:
    names = []
    for match in PLACEHOLDER.finditer(arg):
        token = match.group(0)
        if token in ("{{", "}}"):
            continue
        if match.group(1) is None or not NAME.fullmatch(match.group(1)):
            raise WorkloadError(f"{where}: [workload].command[{index}]: expected {{key}} placeholders (write {{{{ "
                                f"and }}}} for braces), found {token!r} in {arg!r}")
        names.append(match.group(1))
    return names


def command_keys(command: list[str] | tuple[str, ...]) -> set[str]:
    """The study keys a script's command reads: its {key} placeholders (a malformed one names nothing)."""
    return {m.group(1) for arg in command for m in PLACEHOLDER.finditer(str(arg)) if m.group(1)}


def _fill(arg: str, values: Mapping[str, Any]) -> str:
    """One argument with its {key} placeholders replaced by the configuration's values (a bool as true/false)."""
    def value(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        v = values[match.group(1)]
        return ("true" if v else "false") if isinstance(v, bool) else str(v)
    return PLACEHOLDER.sub(value, arg)


def file_digest(path: str) -> str | None:
    """A file's SHA-256 (None where it is not readable here: a cluster path), read once per size and mtime."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return _digest(path, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _digest(path: str, size: int, mtime_ns: int) -> str | None:
    sha = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                sha.update(chunk)
    except OSError:
        return None
    return sha.hexdigest()


def _here(where: str, what: str, path: str, study_dir: Path) -> str:
    full = (study_dir / os.path.expanduser(path)).resolve()
    if not full.exists():
        raise WorkloadError(f"{where}: [workload].{what}: {path!r} not found (looked for {full})")
    return str(full)
