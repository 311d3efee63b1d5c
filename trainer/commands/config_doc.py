"""docs/study-keys.md, written from the key registry (trainer.config_keys) so that the page cannot drift from
what the study file, config.json and `hlm-train` accept: `python -m trainer.commands.config_doc > docs/study-keys.md`.
tests/foundation/test_docs_study_keys.py fails when the file in the repository differs from this output."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from trainer.config_keys import (
    AXIS_KEYS,
    CLUSTER_KEYS,
    DATA_KEYS,
    DATASET_KEYS,
    PREFLIGHT_KEYS,
    SITE_KEYS,
    STUDY_KEYS,
    TOKENIZER_KEYS,
    TRAINER_KEYS,
    ConfigKey,
    section_keys,
    toml_value,
)

COMMAND = "python -m trainer.commands.config_doc > docs/study-keys.md"
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


@dataclass(frozen=True)
class Table:
    """One section of the page: a study table (or config.json) and its keys."""

    title: str
    intro: str
    keys: tuple[ConfigKey, ...]
    extra: tuple[str, ...] = ()  # further column headers, filled by cells(key)
    cells: Callable[[ConfigKey], tuple[str, ...]] | None = None
    name: Callable[[ConfigKey], str] | None = None  # how a key is named (default: its name)


TABLES = (
    Table("[study]", "The study's identity.", STUDY_KEYS),
    Table("[cluster]", "Where the runs go: this machine (`kind = \"local\"`) or a Slurm cluster over SSH "
          "(docs/launch.md; a site profile gives the defaults a site needs). `[cluster.env]` is the `env` table.",
          CLUSTER_KEYS),
    Table("[data]", "The datasets and how they are tokenized (docs/data.md).", DATA_KEYS),
    Table("[data.datasets.NAME]", "One table per dataset; NAME is what `[sweep].dataset` lists.", DATASET_KEYS),
    Table("[data.tokenizer]", "The tokenizer of every dataset; a dataset's `tokenizer` table overrides single keys. "
          "*tokenizers* says which tokenizer reads the key.", TOKENIZER_KEYS,
          ("tokenizers",), lambda k: (", ".join(k.tokenizers),)),
    Table("[model]", "The architecture.", tuple(section_keys("model", study=True))),
    Table("[train]", "The run. The sweep axes a study may fix here (`window`, `mode`, ...) are the defaults of "
          "those not listed in `[sweep]`.", tuple(section_keys("train", study=True))),
    Table("[sweep]", "Each axis is a list of values of its key; the cartesian product is the configuration "
          "matrix. *column* is the axis's header in the plan, the cockpit and the report.", AXIS_KEYS,
          ("column",), lambda k: (k.axis.header if k.axis else "",)),
    Table("[site] of a site profile", "A site profile is a TOML file of one `[site]` table: the built-in ones in "
          "`sbatch_templates/sites/` (`generic`, `meluxina`), or a file a study names with `[cluster].site = "
          "\"path/to/site.toml\"` (docs/launch.md). `[site.env]` and `[site.qos_max_minutes]` are its tables.",
          SITE_KEYS),
    Table("config.json only", "Keys the cockpit writes into each run's config.json (or test hooks), not said in "
          "a study file; `hlm-train train` reads them (docs/run-directory.md).",
          tuple(k for k in TRAINER_KEYS if not k.study and k.axis is None), name=lambda k: k.dest),
    Table("a preflight's config.json", "Keys the cockpit writes into a preflight job's config.json "
          "(`cockpit preflight`), never said in a study file; `hlm-train preflight` judges them by these rules "
          "(docs/run-directory.md, \"The preflight's directory\").", PREFLIGHT_KEYS),
)


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
        f"<!-- Generated from trainer/config_keys/ by `{COMMAND}`; do not edit by hand. -->",
        "",
        "Every key a study file can say, table by table, as the key registry (`trainer/config_keys/`) holds",
        "it. *allowed* is what a value must be, in the words a refusal uses (`expected an integer >= 1, got 0`);",
        "*unset* means the key is optional or worked out (the meaning says how). An unknown key, or a value",
        "outside its bounds, stops `cockpit plan` with one line naming the file and the key.",
        "",
    ]
    for t in TABLES:
        out += [f"## {t.title}", "", t.intro, "", *table(t.keys, name=t.name, extra=t.extra, cells=t.cells), ""]
    out += ["## [workload]", "", WORKLOAD_INTRO, ""]
    return "\n".join(out).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())
