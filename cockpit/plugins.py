"""Plug-ins: modules that add a workload kind (cockpit.workloads.register) or a place to run jobs
(cockpit.launch.registry.register) without an edit to the cockpit. They are named by the `hlm_cockpit.plugins`
entry point group of an installed package, or in the COCKPIT_PLUGINS environment variable (module names,
comma-separated); each is imported once, before the first study file is read (docs/workloads.md, "Plug-ins")."""

from __future__ import annotations

import importlib
import os
from importlib.metadata import entry_points

ENV = "COCKPIT_PLUGINS"
GROUP = "hlm_cockpit.plugins"
_loaded: set[str] = set()


class PluginError(ImportError):
    """A named plug-in cannot be imported; the message names it and where it was named."""


def load_plugins() -> list[str]:
    """Import every plug-in not imported yet; returns the module names imported now."""
    named = [(e.value.split(":")[0], f"entry point {e.name!r} ({GROUP})") for e in entry_points(group=GROUP)]
    named += [(m.strip(), ENV) for m in os.environ.get(ENV, "").split(",") if m.strip()]
    done = []
    for module, source in named:
        if module in _loaded:
            continue
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise PluginError(f"plug-in {module!r} named by {source}: cannot be imported ({exc})") from exc
        _loaded.add(module)
        done.append(module)
    return done
