"""`python -m trainer` = `hlm-train` (what torchrun runs with `-m trainer`)."""

import sys

from trainer.cli import main

sys.exit(main())
