"""The one exception type for bad input data; the trainer's command line maps it to exit code 3."""


class DataError(ValueError):
    """Bad or missing input data. The message names the file (or key) and says what was expected."""
