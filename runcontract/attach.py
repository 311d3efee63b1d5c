"""`python -m runcontract.attach SCRIPT [ARGS...]`: run an unmodified training script with torch's global hooks
attributing its steps (runcontract.hooks), and write the run directory for it.

Under torchrun: `torchrun --nproc-per-node N -m runcontract.attach SCRIPT ARGS...`. The run directory is
$RUNCONTRACT_RUN_DIR (else the working directory). The script runs as `__main__` with `sys.argv` = SCRIPT ARGS,
its folder first on `sys.path`, as `python SCRIPT ARGS` would run it. The process exits with the script's
code. A stop signal (SIGTERM, SIGUSR1) ends it as it would have ended the script, after exit.json says so: a
script run without edits has no checkpoint to save, so its run starts over.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
import time
import traceback
from pathlib import Path
from types import FrameType

from runcontract import contract
from runcontract.contract import EXIT_OK, EXIT_USAGE, SCHEMA_VERSION
from runcontract.files import ContractError, write_json
from runcontract.run import SCRIPT_EXIT_REASON, Run

USAGE = "usage: python -m runcontract.attach SCRIPT [ARGS...]  (under torchrun: torchrun ... -m runcontract.attach SCRIPT ...)"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr)
        return EXIT_USAGE if not args else EXIT_OK
    script = Path(args[0])
    try:
        run = Run(mode="hooks", stop_signals=False)
    except ContractError as exc:
        print(f"runcontract: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not script.is_file():
        message = f"{script}: no such script (from {os.getcwd()})"
        run.fail(EXIT_USAGE, message)
        print(f"runcontract: {message}", file=sys.stderr)
        return EXIT_USAGE

    from runcontract.hooks import TorchHooks  # torch loads here, after the one-line refusals above

    hooks = TorchHooks(run).install()
    _stop_ends_the_script(run)
    sys.argv = [str(script), *args[1:]]
    sys.path.insert(0, str(script.resolve().parent))
    code = EXIT_OK
    with run:
        try:
            runpy.run_path(str(script), run_name="__main__")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (EXIT_OK if exc.code is None else 1)
            if code != EXIT_OK:
                run.fail(code, f"the script exited with {exc.code!r}", reason=SCRIPT_EXIT_REASON)
        except BaseException as exc:
            frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(script)]
            where = f" ({script.name}:{frames[-1].lineno})" if frames else ""
            run.fail(1, f"{type(exc).__name__}: {exc}{where}")
            raise
        finally:
            hooks.remove()
        hooks.notes()
        if code != EXIT_OK:
            return code
        code = run.finish()
    return code


def _stop_ends_the_script(run: Run) -> None:
    """On SIGTERM/SIGUSR1: stop.json and exit.json say which signal ended the run (no checkpoint), then the
    signal's default action ends the process."""

    def on_signal(signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if run.rank == 0:
            write_json(run.run_dir / contract.STOP_FILE, {"v": SCHEMA_VERSION, "t": time.time(),
                                                          "signal": name, "rank": run.rank})
        run.fail(128 + signum, f"{name} ended a script run without edits: it has no checkpoint to save, "
                               "the run starts over")
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    for sig in contract.STOP_SIGNALS:
        signal.signal(sig, on_signal)


if __name__ == "__main__":
    sys.exit(main())
