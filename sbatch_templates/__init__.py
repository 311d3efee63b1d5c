"""Jinja2 batch-script templates and Slurm site profiles, shipped as package data.

Read them with importlib.resources (`template_text`), never through a checkout path, so an installed wheel
renders the same scripts as a source tree.
"""

from importlib import resources

JOB_TEMPLATE = "job.sh.j2"


def template_text(name: str = JOB_TEMPLATE) -> str:
    """The text of one template shipped in this package."""
    return (resources.files(__name__) / name).read_text(encoding="utf-8")
