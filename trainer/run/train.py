"""One rank's run: set up, train, checkpoint on a signal, finish; exit codes and exit.json on every path.

`run(settings)` is the whole life of one rank; `_train` reads as the pieces it is made of, as torchtitan
splits its trainer:

- build (trainer/run/build.py): threads, data, model, DDP, optimizer, loader, a resumed position;
- train_step (trainer/run/step.py): one optimizer step, `forward_backward_step` per micro-batch, timed;
- the loop (trainer/run/loop.py): steps until the total or an agreed stop, T and its parts, validation,
  the profiler (trainer/run/profiling.py);
- checkpoint on signal (checkpoint.save_resumable): exit 75, run again to resume;
- the result record (trainer/run/result.py; its schema in runcontract/records.py): model.pt, evaluation, result.json.

T (the study's metric) runs from the start of the first step to the end of the last one; see
docs/training.md for what is in it and what is recorded beside it.
"""

from __future__ import annotations

import logging
import sys
import traceback
from pathlib import Path
from typing import Any

import torch

from runcontract import disk_space
from runcontract.contract import (
    EXIT_BAD_INPUT,
    EXIT_CHECKPOINTED,
    EXIT_DISK_FULL,
    EXIT_NONFINITE_LOSS,
    EXIT_OK,
    EXIT_USAGE,
    RESULT_FILE,
)
from runcontract.modes import make_dirs, protect
from runcontract.records import write_exit
from trainer import environment, rundir
from trainer.measure import provenance
from trainer.parallelism import distributed
from trainer.parallelism.distributed import Dist
from trainer.run import checkpoint, result, sources
from trainer.run.build import build
from trainer.run.loop import StopSignal, train_loop
from trainer.run.step import NonFiniteLoss, lr_at
from trainer.settings import ConfigError, Settings

__all__ = ["ConfigError", "Interrupted", "NonFiniteLoss", "lr_at", "run"]  # lr_at: tests and notebooks import it here

log = logging.getLogger("hlm.train")


class Interrupted(Exception):
    """A stop signal was agreed on by all ranks and the checkpoint is written."""


def _setup_logging(run_dir: Path, d: Dist) -> logging.Handler:
    handler: logging.Handler = logging.FileHandler(run_dir / rundir.LOG_FILE)
    protect(run_dir / rundir.LOG_FILE)
    prefix = "" if d.is_main else f"[rank {d.rank}] "
    handler.setFormatter(logging.Formatter(f"%(asctime)s %(levelname)s {prefix}%(message)s"))
    handler.setLevel(logging.INFO if d.is_main else logging.WARNING)
    root = logging.getLogger("hlm")
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    return handler


def run(s: Settings, data: sources.Data | None = None) -> int:
    """Train one rank to completion or interruption; returns the process exit code (see rundir.EXIT_*)."""
    launch, launch_source = provenance.launch_time()
    make_dirs(s.run_dir)
    threads_before = torch.get_num_threads()
    restore_environment = environment.threads_for_process(s.threads)  # OMP_NUM_THREADS, set here only
    d = Dist()
    handler = None
    # anything that escapes the handlers below (KeyboardInterrupt, SystemExit) is recorded as a failure
    code, message, extra = 1, "interrupted before the end (KeyboardInterrupt or exit)", {}
    try:
        try:
            d = distributed.setup(s.train.device)
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        if d.is_main:
            disk_space.keep_room(s.run_dir)  # exit.json still fits once the disk is full
        handler = _setup_logging(s.run_dir, d)
        with StopSignal() as stop:  # from here on a signal never kills the rank without an exit.json
            extra = _train(s, d, data, launch, launch_source, stop)
        code, message = EXIT_OK, "training completed"
    except Interrupted as exc:
        code, message, extra = EXIT_CHECKPOINTED, exc.args[0], exc.args[1]
    except ConfigError as exc:
        code, message = EXIT_USAGE, f"bad config: {exc}"
    except NonFiniteLoss as exc:
        code, message = EXIT_NONFINITE_LOSS, str(exc)
    except Exception as exc:
        from trainer.data import DataError

        full = disk_space.as_disk_full(exc)
        if full is not None:  # no space left or quota exceeded: the cockpit pauses submitting on this code
            code, message, extra = EXIT_DISK_FULL, str(full.strerror), full.fields()
        elif isinstance(exc, DataError):
            code, message = EXIT_BAD_INPUT, f"bad input data: {exc}"
        else:
            code, message = 1, f"{type(exc).__name__}: {exc}"
            log.error("%s", traceback.format_exc())
    finally:
        if code:
            (log.warning if code == EXIT_CHECKPOINTED else log.error)("%s", message)
        if d.is_main:
            try:
                write_exit(s.run_dir, code, message, rank=d.rank, world_size=d.world, **extra)
            except disk_space.DiskFull as exc:  # not even its room was left: the exit code and stderr say it
                code, message = EXIT_DISK_FULL, f"{message}; exit.json not written: {exc.strerror}"
        if code not in (EXIT_OK, EXIT_CHECKPOINTED):
            print(f"hlm-train: {message}", file=sys.stderr, flush=True)
        distributed.teardown(d, clean=code in (EXIT_OK, EXIT_CHECKPOINTED))
        torch.set_num_threads(threads_before)  # the caller may be a longer-lived process (tests, notebooks)
        restore_environment()
        if handler is not None:
            logging.getLogger("hlm").removeHandler(handler)
            handler.close()
    return code


def _train(s: Settings, d: Dist, data: sources.Data | None, launch: float, launch_source: str,
           stop: StopSignal) -> dict[str, Any]:
    """Everything between rendezvous and the result; raises Interrupted / NonFiniteLoss to stop early.

    A signal during start-up is acted on after the first step; one during evaluation or the final save
    is ignored, since finishing is then quicker than checkpointing.
    """
    if (s.run_dir / RESULT_FILE).exists():
        log.info("result.json already exists: the run is complete, nothing to do")
        return {"note": "already complete; result.json kept"}
    t = build(s, d, data)  # outside T: startup_s
    prog = t.prog
    end = train_loop(t, stop, launch)  # T

    if end.stop_reason is not None:  # checkpoint on signal
        save_s = checkpoint.save_resumable(t.ckpt_path, d, t.par, t.scaler, prog, s,
                                           t.validator.best_state)
        raise Interrupted(f"{end.stop_reason}: checkpointed at step {prog.step}/{t.total_steps} after T = "
                          f"{prog.train_time_s:.3f} s; run the same directory again to resume",
                          {"step": prog.step, "total_steps": t.total_steps, "train_time_s": prog.train_time_s,
                           "checkpoint_save_s": save_s, "signal": end.stop_reason})

    t.validator.restore_best(t.raw, prog)  # early stopping keeps the weights of the best validation
    t.validator.calibrate(t.raw, prog)  # train.calibrate: the class decision chosen on the validation part
    prog.checkpoint_s += result.save_model(t)  # the final weights first: a failing evaluation must not lose them
    evaluation, eval_s = result.evaluate(t)
    result.write(t, end, evaluation, eval_s, launch, launch_source)
    return {"step": prog.step, "train_time_s": prog.train_time_s}
