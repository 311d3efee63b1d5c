"""The Apptainer definition of the training image, shipped as package data (see README.md here).

`definition_text()` reads it through importlib.resources, so an installed wheel can print or copy it.
"""

from importlib import resources

DEFINITION = "hlm.def"


def definition_text() -> str:
    """The text of containers/hlm.def."""
    return (resources.files(__name__) / DEFINITION).read_text(encoding="utf-8")
