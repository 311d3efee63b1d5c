"""The structure docs/architecture.md draws, enforced: no import circle between modules of cockpit/ and
trainer/, nor between their packages (module-level, function-level and type-checking imports all count), no
import upwards between the layers (a lower layer never names a higher one), every package in one layer, and
the cockpit never imports torch."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Lowest first. A module may import its own layer and the ones below; the first prefix that matches wins.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("shared contract", ("runcontract", "trainer.rundir", "trainer.config_keys", "trainer.scoring.scores", "trainer.data.errors",
                         "trainer.data.tokenizer_keys", "trainer.environment", "sbatch_templates")),
    ("study, backends and figures", ("cockpit.plugins", "cockpit.workloads", "cockpit.study", "cockpit.preflight", "cockpit.figures",
                                     "cockpit.launch")),
    ("forecast and state", ("cockpit.forecast", "cockpit.store")),
    ("orchestration", ("cockpit.run",)),
    ("presentation", ("cockpit.report", "cockpit.tui", "cockpit.web", "cockpit.notebook")),
    ("commands", ("cockpit.commands", "cockpit.cli", "cockpit.__main__")),
]
TRAINER = "trainer"  # the cluster side: may import the shared contract and itself, nothing of the cockpit
# The run-directory contract any training script imports (docs/workloads.md): itself and the standard library;
# torch only where it hooks torch, transformers and Lightning only in their callbacks, pynvml (optional) in its sampler.
RUNCONTRACT_THIRD_PARTY = {"runcontract.hooks": {"torch"}, "runcontract.probe": {"torch"}, "runcontract.hf": {"torch", "transformers"},
                           "runcontract.lightning": {"torch", "pytorch_lightning", "lightning"},
                           "runcontract.nvml": {"pynvml"}}


def modules() -> dict[str, Path]:
    out = {}
    for top in ("cockpit", "trainer", "runcontract"):
        for path in (REPO / top).rglob("*.py"):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """Every project module `path` imports anywhere in it (resolved to the deepest known module)."""
    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                found.add(resolve(f"{node.module}.{alias.name}") or resolve(node.module))
        elif isinstance(node, ast.Import):
            found.update(resolve(alias.name) for alias in node.names)
    return {m for m in found if m}


def layer_of(module: str) -> int | None:
    if module in ("cockpit", "trainer"):  # the packages themselves: a version string, no imports
        return 0
    for rank, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return None


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(path, known) - {name} for name, path in known.items()}


def package_of(module: str) -> str:
    """`cockpit.store.ledger` -> `cockpit.store`; a top-level module (`cockpit.notebook`) is its own node."""
    parts = module.split(".")
    return ".".join(parts[:2]) if (REPO / parts[0] / parts[1] if len(parts) > 1 else REPO).is_dir() else module


def package_graph() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for module, targets in graph().items():
        out.setdefault(package_of(module), set()).update(package_of(t) for t in targets)
    return {p: targets - {p} for p, targets in out.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in edges:
        if v not in index:
            visit(v)
    return found


def test_no_import_circle():
    assert circles(graph()) == []


def test_no_import_circle_between_packages():
    """store/ -> a module that imports store/ is a loop too, even when no single module closes it."""
    assert circles(package_graph()) == []


def test_every_package_sits_in_one_layer():
    straddling = {}
    for module in graph():
        if module.startswith("cockpit.") and package_of(module) != module:
            straddling.setdefault(package_of(module), set()).add(layer_of(module))
    assert {p: layers for p, layers in straddling.items() if len(layers) > 1} == {}


def test_no_upward_import_between_the_layers():
    upward = []
    for module, targets in graph().items():
        if module.startswith("trainer"):
            bad = [t for t in targets if not (t.startswith(TRAINER) or layer_of(t) == 0)]
            upward += [f"{module} -> {t} (the trainer never imports the cockpit)" for t in bad]
            continue
        mine = layer_of(module)
        assert mine is not None, f"{module} is in no layer: add it to LAYERS (and docs/architecture.md)"
        for target in targets:
            theirs = layer_of(target)
            if theirs is not None and theirs > mine:
                upward.append(f"{module} ({LAYERS[mine][0]}) -> {target} ({LAYERS[theirs][0]})")
    assert upward == []


def test_the_cockpit_never_imports_torch():
    for path in (REPO / "cockpit").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            assert not any(n == "torch" or n.startswith("torch.") for n in names), path


def test_the_run_contract_stands_alone():
    """runcontract imports nothing of the cockpit or the trainer, and no third-party package but the few its
    torch-facing modules need: a script imports it with the standard library alone."""
    import sys

    stdlib = set(sys.stdlib_module_names)
    found = []
    for path in (REPO / "runcontract").rglob("*.py"):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        allowed = RUNCONTRACT_THIRD_PARTY.get(module, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for name in names:
                top = name.split(".")[0]
                if top not in stdlib and top != "runcontract" and top not in allowed and top != "__future__":
                    found.append(f"{module} imports {name}")
    assert found == []


# The cockpit modules outside the HLM workload's package that still read the HLM trainer's own code: its data
# rules for the study file, the demo's records, the scores command and the preflight program's config keys.
TRAINER_READERS = {"cockpit.study.spec_rules", "cockpit.commands.demo", "cockpit.commands.scores",
                   "cockpit.preflight.jobs"}


def test_the_cockpit_reaches_the_trainer_through_the_hlm_workload():
    """The study core belongs to no workload: outside cockpit/workloads/hlm/ at most five cockpit modules import
    trainer/, and those named here only (a new one is a decision, not a drift)."""
    readers = {m for m, targets in graph().items() if m.startswith("cockpit.")
               and not m.startswith("cockpit.workloads.hlm") and any(t.startswith("trainer") for t in targets)}
    assert readers == TRAINER_READERS and len(readers) <= 5


def test_no_module_is_over_500_lines():
    """Small modules with one job: a module that grows past 500 lines is split, not stretched."""
    long = {str(p.relative_to(REPO)): n for top in ("cockpit", "trainer", "runcontract")
            for p in (REPO / top).rglob("*.py") if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500}
    assert long == {}
