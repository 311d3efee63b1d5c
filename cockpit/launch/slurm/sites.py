"""Site profiles: what a batch script must know about one Slurm installation, kept as data.

A profile is a TOML file. The built-in ones ship in `sbatch_templates/sites/` (found with importlib.resources,
so an installed wheel works without a checkout); a study may also name its own file with
`[cluster].site = "path/to/site.toml"` (relative to the study file).
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

_KEYS: dict[str, tuple[type | tuple[type, ...], Any]] = {
    "name": (str, None),
    "description": (str, ""),
    "login_host": (str, ""),
    "login_port": (int, 22),
    "require_account": (bool, False),
    "require_qos": (bool, False),
    "partitions": (list, []),
    "gpu_partitions": (list, []),
    "default_partition": (str, ""),
    "gpus_per_node": (int, 0),
    "cores_per_node": (int, 0),
    "numa_nodes": (int, 0),
    "container_runtime": (str, "apptainer"),
    "container_modules": (list, []),
    "max_requeues": (int, 5),
    "qos_max_minutes": (dict, {}),
    "env": (dict, {}),
    # link figures for the scaling prediction (docs/prediction.md); 0 = unknown
    "intra_node_busbw_gbs": ((int, float), 0.0),
    "inter_node_busbw_gbs": ((int, float), 0.0),
    "allreduce_latency_us": ((int, float), 0.0),
    "gpu_memory_gb": ((int, float), 0.0),  # one GPU's memory: the plan flags a configuration predicted above it
}


class SiteError(ValueError):
    """A site profile is missing or malformed, or a study asks for something its site cannot do."""


@dataclass(frozen=True)
class Site:
    """One Slurm site's facts and defaults."""

    name: str
    source: str
    description: str = ""
    login_host: str = ""
    login_port: int = 22
    require_account: bool = False
    require_qos: bool = False
    partitions: tuple[str, ...] = ()
    gpu_partitions: tuple[str, ...] = ()
    default_partition: str = ""
    gpus_per_node: int = 0
    cores_per_node: int = 0
    numa_nodes: int = 0
    container_runtime: str = "apptainer"
    container_modules: tuple[str, ...] = ()
    max_requeues: int = 5
    qos_max_minutes: dict[str, int] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    intra_node_busbw_gbs: float = 0.0  # all-reduce bus bandwidth within a node, GB/s
    inter_node_busbw_gbs: float = 0.0  # across nodes
    allreduce_latency_us: float = 0.0  # per ring step
    gpu_memory_gb: float = 0.0  # one GPU's memory, GB (10^9 bytes); 0 = unknown


def builtin_sites() -> list[str]:
    """Names of the profiles shipped with the package."""
    folder = resources.files("sbatch_templates") / "sites"
    return sorted(p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml"))


@functools.lru_cache(maxsize=32)
def load_site(name: str, relative_to: Path | None = None) -> Site:
    """A built-in profile by name, or a profile file when `name` ends in .toml. Read once per process:
    every batch script and every plan (each poll) asks for it, and a Site is immutable."""
    if name.endswith(".toml"):
        path = Path(name).expanduser()
        if not path.is_absolute() and relative_to is not None:
            path = relative_to / path
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise SiteError(f"[cluster].site: cannot read site profile {path}: {exc.strerror}") from exc
        return parse_site(text, str(path))
    resource = resources.files("sbatch_templates") / "sites" / f"{name}.toml"
    if not resource.is_file():
        raise SiteError(
            f"[cluster].site: unknown site {name!r}; built-in sites are {', '.join(builtin_sites())} "
            "(or give the path of a .toml profile)"
        )
    return parse_site(resource.read_text(encoding="utf-8"), f"sbatch_templates/sites/{name}.toml")


def site_for(study: Any) -> Site:
    """The study's site profile (built-in name or a .toml path relative to the study file)."""
    return load_site(study.cluster.site, relative_to=Path(study.path).parent)


def parse_site(text: str, source: str) -> Site:
    """Validate a profile's text; every error names the file and the key."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SiteError(f"{source}: not valid TOML: {exc}") from exc
    if set(raw) != {"site"} or not isinstance(raw["site"], dict):
        raise SiteError(f"{source}: expected exactly one table [site]")
    table = raw["site"]
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise SiteError(f"{source}: [site].{unknown[0]} is not a known key; expected one of {', '.join(_KEYS)}")
    values: dict[str, Any] = {}
    for key, (types, default) in _KEYS.items():
        if key not in table:
            if default is None:
                raise SiteError(f"{source}: [site].{key} is required")
            values[key] = default
            continue
        value = table[key]
        if not isinstance(value, types) or (isinstance(value, bool) and types is not bool):
            raise SiteError(f"{source}: [site].{key} must be {_type_name(types)}, found {value!r}")
        values[key] = value
    for key in ("partitions", "gpu_partitions", "container_modules"):
        if any(not isinstance(item, str) for item in values[key]):
            raise SiteError(f"{source}: [site].{key} must be a list of strings")
        values[key] = tuple(values[key])
    for qos, minutes in values["qos_max_minutes"].items():
        if not isinstance(minutes, int) or isinstance(minutes, bool) or minutes < 1:
            raise SiteError(f"{source}: [site.qos_max_minutes].{qos} must be a positive number of minutes")
    env = {}
    for name, value in values["env"].items():
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise SiteError(f"{source}: [site.env].{name} must be a string or number, found {value!r}")
        env[name] = str(value)
    values["env"] = env
    for key in ("intra_node_busbw_gbs", "inter_node_busbw_gbs", "allreduce_latency_us", "gpu_memory_gb"):
        if values[key] < 0:
            raise SiteError(f"{source}: [site].{key} must be >= 0 (0 = unknown), found {values[key]!r}")
        values[key] = float(values[key])
    return Site(source=source, **values)


def check_cluster(site: Site, cluster: Any, gpus_per_node: int) -> None:
    """Refuse, before anything is submitted, what this site would refuse (or silently mis-run)."""
    where = f"{site.name} site ({site.source})"
    if site.require_account and not cluster.account:
        raise SiteError(f"[cluster].account is required on the {where}: sbatch -A is mandatory there")
    if site.require_qos and not cluster.qos:
        raise SiteError(f"[cluster].qos is required on the {where}: sbatch -q is mandatory there")
    partition = cluster.partition or site.default_partition
    if site.partitions and partition and partition not in site.partitions:
        raise SiteError(
            f"[cluster].partition {partition!r} is not a partition of the {where}; "
            f"expected one of {', '.join(site.partitions)}"
        )
    if site.gpu_partitions and partition and partition not in site.gpu_partitions:
        raise SiteError(
            f"[cluster].partition {partition!r} has no GPUs on the {where}; use one of {', '.join(site.gpu_partitions)}"
        )
    if site.gpus_per_node and gpus_per_node > site.gpus_per_node:
        raise SiteError(f"a configuration asks for {gpus_per_node} GPUs per node but the {where} has {site.gpus_per_node}")
    limit = site.qos_max_minutes.get(cluster.qos or "")
    if limit is not None and cluster.time_limit_minutes > limit:
        raise SiteError(
            f"[cluster].time_limit {cluster.time_limit} exceeds the {limit} minutes QOS {cluster.qos!r} allows on the {where}"
        )


def _type_name(types: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", bool: "true/false", list: "a list", dict: "a table"}
    return names.get(types, str(types)) if isinstance(types, type) else " or ".join(names[t] for t in types)
