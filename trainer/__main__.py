"""`python -m trainer` = `hlm-train` (what torchrun runs with `-m trainer`)."""

import logging
import os
import sys

from trainer.commands.cli import main
from trainer.environment import layout

code = main()
if layout().world > 1:
    # A torchrun rank has left its process group and written its files by now. Skipping the interpreter's
    # teardown keeps gloo/NCCL threads from aborting a finished run during finalisation.
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)
sys.exit(code)
