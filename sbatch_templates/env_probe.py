"""The preflight's first look at a job's Python: which interpreter, and which modules import, with their
versions. Runs before anything of this project is imported (it may be missing), with the Python and
container the study's jobs use; writes one JSON object to the path given as its only argument.

Shipped as package data and sent inline in the preflight's batch script (`python3 - OUT <<EOF`).
"""

import importlib
import json
import sys

MODULES = ("torch", "numpy", "scipy", "wfdb", "pynvml", "trainer")
DISTRIBUTIONS = {"trainer": "hlm-cockpit", "pynvml": "nvidia-ml-py"}  # where a module has no __version__


def version_of(name):
    """The module's version, or 'error: ...' naming why it does not import."""
    try:
        module = importlib.import_module(name)
    except Exception as exc:  # ImportError and whatever a broken install raises on import
        return f"error: {type(exc).__name__}: {exc}"
    version = getattr(module, "__version__", "")
    if not version:
        try:
            from importlib import metadata

            version = metadata.version(DISTRIBUTIONS.get(name, name))
        except Exception:
            version = "unknown"
    return str(version)


def main(out):
    facts = {
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "modules": {name: version_of(name) for name in MODULES},
    }
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(facts, handle, indent=2, sort_keys=True)
        handle.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "preflight-env.json")
