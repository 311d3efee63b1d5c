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

from cockpit.study.tables import SITE_KEYS, SiteKeys
from runcontract.keys import judge_table

_BY_NAME = {k.name: k for k in SITE_KEYS}


class SiteError(ValueError):
    """A site profile is missing or malformed, or a study asks for something its site cannot do."""


@dataclass(frozen=True)
class Site(SiteKeys):
    """One Slurm site's facts and defaults: the registry's [site] table (cockpit.study.tables.SiteKeys) as read
    from a profile (its lists as tuples, its env values as strings, its figures as floats) and the file it came
    from."""

    name: str = ""
    # frozen as the profile is: the registry's lists, held as tuples
    partitions: tuple[str, ...] = ()  # type: ignore[assignment]
    gpu_partitions: tuple[str, ...] = ()  # type: ignore[assignment]
    container_modules: tuple[str, ...] = ()  # type: ignore[assignment]
    qos_max_minutes: dict[str, int] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    source: str = ""  # the profile file


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
            "(the profiles in sbatch_templates/sites/), or give the path of a .toml profile (relative to the study file)"
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
    values = judge_table(source, "[site]", table, _BY_NAME, SiteError)
    for k in SITE_KEYS:  # the shapes Site holds
        if list in k.kind:
            values[k.name] = tuple(values[k.name])
        elif float in k.kind:
            values[k.name] = float(values[k.name])
    values["env"] = {name: str(value) for name, value in values["env"].items()}
    return Site(source=source, **values)
