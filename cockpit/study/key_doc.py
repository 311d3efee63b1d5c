"""docs/study-keys.md, written from the key tables (runcontract.axes, cockpit.study.tables and each workload
kind's, `Workload.key_tables`) so that the page cannot drift from what a study file, config.json and `hlm-train`
accept: `python -m cockpit.study.key_doc > docs/study-keys.md`.
tests/foundation/test_docs_study_keys.py fails when the file in the repository differs from this output."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable

from cockpit.study.cluster_kinds import load_kinds
from cockpit.study.tables import CLUSTER_KEYS, SITE_KEYS, STUDY_KEYS
from cockpit.workloads import WORKLOADS
from cockpit.workloads.base import KeyTable
from runcontract.axes import AXIS_KEYS
from runcontract.keys import ConfigKey, toml_value

COMMAND = "python -m cockpit.study.key_doc > docs/study-keys.md"
_TYPES = {int: "integer", float: "number", str: "string", bool: "boolean", list: "list", dict: "table"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _row(k: ConfigKey, name: str | None = None, extra: Iterable[str] = ()) -> str:
    kind = " or ".join(_TYPES.get(t, t.__name__) for t in k.kind)
    default = "required" if k.required else f"`{toml_value(k.default)}`"
    cells = [f"`{name or k.name}`", kind, default, k.expected, k.unit, *extra, k.help]
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def table(keys: Iterable[ConfigKey], *, name: Callable[[ConfigKey], str] | None = None,
          extra: tuple[str, ...] = (), cells: Callable[[ConfigKey], tuple[str, ...]] | None = None) -> list[str]:
    """A Markdown table of keys: name, type, default, allowed values (in the refusals' words), unit, help."""
    head = ["key", "type", "default", "allowed", "unit", *extra, "meaning"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in keys:
        lines.append(_row(k, name(k) if name else None, cells(k) if cells else ()))
    return lines


# the study's own tables; tables() sets each kind's [cluster] keys, each workload kind's tables and [site] among them
STUDY_TABLE = KeyTable("[study]", "The study's identity.", STUDY_KEYS)
CLUSTER_TABLE = KeyTable("[cluster]", "Where the runs go: this machine (`kind = \"local\"`) or a Slurm cluster over SSH "
             "(docs/launch.md; a site profile gives the defaults a site needs). `[cluster.env]` is the `env` table. "
             "The keys every kind takes; a kind's own follow.", CLUSTER_KEYS)
SWEEP_TABLE = KeyTable("[sweep]", "Each axis is a list of values of its key; the cartesian product is the "
                       "configuration matrix. *column* is the axis's header in the plan, the cockpit and the report.",
                       AXIS_KEYS, ("column",), lambda k: (k.axis.header if k.axis else "",))
SITE_TABLE = KeyTable(
    "[site] of a site profile", "A site profile is a TOML file of one `[site]` table: the built-in ones in "
    "`sbatch_templates/sites/` (`generic`, `meluxina`), or a file a study names with `[cluster].site = "
    "\"path/to/site.toml\"` (docs/launch.md). `[site.env]` and `[site.qos_max_minutes]` are its tables.", SITE_KEYS)


def kind_tables() -> tuple[KeyTable, ...]:
    """A section per place to run jobs with keys of its own (ClusterKind.keys: Slurm's and its SSH login)."""
    return tuple(KeyTable(f"[cluster] with kind = \"{kind.name}\"", f"The keys {kind.words} takes beside every "
                          "kind's (its backend declares them); another kind refuses them in one line.", kind.keys)
                 for kind in load_kinds().values() if kind.keys)


def tables() -> tuple[KeyTable, ...]:
    """The page's sections in order: the study's own, each kind's [cluster] keys, every workload kind's, the site
    profile's."""
    return (STUDY_TABLE, CLUSTER_TABLE, *kind_tables(), SWEEP_TABLE,
            *(t for w in WORKLOADS.values() for t in w.key_tables()), SITE_TABLE)


# [workload] is the cockpit's (cockpit/workloads), not the trainer's: its keys are documented with it
WORKLOAD_INTRO = ("What the study runs: the HLM trainer (`kind = \"hlm\"`, the default; every table above) or your "
                  "own script (`kind = \"script\"`: `command`, `files`, `env`, `mode` and the study keys it takes "
                  "in `[workload.keys]`, which sweep under [sweep]). docs/workloads.md, \"A study of your script\", "
                  "lists every key.")


def markdown() -> str:
    """The whole page."""
    out = [
        "# Study keys",
        "",
        f"<!-- Generated from the key tables by `{COMMAND}`; do not edit by hand. -->",
        "",
        "Every key a study file can say, table by table, as the key tables hold it: the sweep axes every run",
        "records (`runcontract/axes.py`), the study's own tables (`cockpit/study/tables.py`) and the HLM",
        "trainer's (`trainer/config_keys/`). *allowed* is what a value must be, in the words a refusal uses",
        "(`expected an integer >= 1, got 0`);",
        "*unset* means the key is optional or worked out (the meaning says how). An unknown key, or a value",
        "outside its bounds, stops `cockpit plan` with one line naming the file and the key.",
        "",
    ]
    for t in tables():
        out += [f"## {t.title}", "", t.intro, "", *table(t.keys, name=t.name, extra=t.extra, cells=t.cells), ""]
    out += ["## [workload]", "", WORKLOAD_INTRO, ""]
    return "\n".join(out).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())
