"""Jinja2 batch-script templates and Slurm site profiles, shipped as package data.

Read them with importlib.resources (`template_text`), never through a checkout path, so an installed wheel
renders the same scripts as a source tree.
"""

from importlib import resources

JOB_TEMPLATE = "job.sh.j2"
PREFLIGHT_TEMPLATE = "preflight.sh.j2"  # extends the job's template: same header, environment and launcher
ENV_PROBE = "env_probe.py"  # the preflight's look at the job's Python, sent inline in its script


def template_text(name: str = JOB_TEMPLATE) -> str:
    """The text of one template shipped in this package."""
    return (resources.files(__name__) / name).read_text(encoding="utf-8")
