"""`Run`: one process's part of a run directory, from any training loop (docs/workloads.md).

    with runcontract.Run() as run:
        for batch in run.data(loader):          # the wait for each batch: data_wait
            with run.part("compute"):
                loss = model(batch).mean(); loss.backward()
            with run.part("optimizer"):
                opt.step(); opt.zero_grad()
            run.step(samples=len(batch))        # ends the step; time in no part is `other`
            if run.should_stop:                 # SIGTERM / SIGUSR1 arrived
                save(...); run.checkpointed(); break

Every rank writes metrics.jsonl lines and, at the end, ranks/rank<R>.json (its parts of T); rank 0 merges them
into result.json (breakdown_s, breakdown_by_rank) and writes exit.json. Local rank 0 samples NVML into gpu.jsonl.
Rank, world size and local rank come from torchrun's RANK, WORLD_SIZE, LOCAL_RANK; the run directory from
RUNCONTRACT_RUN_DIR (the working directory without it). Standard library only: torch is never imported here.
"""

from __future__ import annotations

import os
import platform
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, NoReturn

from runcontract import contract
from runcontract.contract import (
    BREAKDOWN_PARTS,
    CONTRACT_VERSION,
    EXIT_CHECKPOINTED,
    EXIT_OK,
    EXIT_USAGE,
    SCHEMA_VERSION,
)
from runcontract.files import ContractError, append_jsonl, check_version, read_json, write_json
from runcontract.ledger import Ledger, Mark, StepRecord
from runcontract.nvml import NvmlSampler

DEFAULT_METRICS_INTERVAL_S = 10.0
DEFAULT_NVML_INTERVAL_MS = 1000
SCRIPT_EXIT_REASON = "the script's own exit status"  # exit.json `reason` for a code the script chose
RANK_WAIT_S = 120.0  # how long rank 0 waits at the end for the other ranks' parts
NO_STEP = {"explicit": "call run.step() at the end of each training step",
           "callback": "the Trainer made no optimizer step",
           "hooks": "the no-edit mode counts a step per torch.optim optimizer step, and the script made none (a "
                    "script that steps its own way: mode = \"explicit\" with run.step() at each step's end; a script "
                    "that trains nothing, such as inference only, has no T to measure)"}


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, ""))
    except ValueError:
        return default


def run_dir_from_env() -> Path:
    """The run directory: $RUNCONTRACT_RUN_DIR, else the working directory."""
    return Path(os.environ.get(contract.RUN_DIR_ENV) or os.getcwd())


class Run:
    """One process's record of a run. Use as a context manager (or call `finish`/`fail` yourself).

    run_dir: default $RUNCONTRACT_RUN_DIR or the working directory. requires: the contract version the script
    was written for; an older library refuses it in one line (exit.json code 2, ContractError). mode: what
    result.json `attribution.mode` says (`explicit` here; the callback and the hooks set their own).
    not_separated: what this mode cannot see, one line each (result.json `attribution.not_separated`).
    stop_signals: install SIGTERM/SIGUSR1 handlers that set `should_stop` (False: leave signals alone).
    """

    def __init__(self, run_dir: str | os.PathLike[str] | None = None, *, requires: int = CONTRACT_VERSION,
                 mode: str = "explicit", not_separated: Iterable[str] = (), metrics_interval_s: float | None = None,
                 nvml_interval_ms: int | None = None, stop_signals: bool = True,
                 rank_wait_s: float = RANK_WAIT_S) -> None:
        self.process_start = time.time()
        self.run_dir = Path(run_dir) if run_dir is not None else run_dir_from_env()
        self.rank = _env_int("RANK", 0)
        self.world_size = _env_int("WORLD_SIZE", 1)
        self.local_rank = _env_int("LOCAL_RANK", 0)
        self.host = socket.gethostname()
        self.mode = mode
        self.not_separated = list(not_separated)
        self.ledger = Ledger()
        self.rank_wait_s = rank_wait_s
        self.samples = 0
        self.tokens = 0
        self.loss: float | None = None
        self.measured: dict[str, Any] = {}  # what a mode adds to result.json `attribution.measured`
        self.extra: dict[str, Any] = {}  # more result.json fields a script or a mode adds (never the contract's own)
        self.grad_bytes: int | None = None  # result.json comm.grad_bytes: what the prediction of N workers needs
        self.buckets: int | None = None  # result.json comm.buckets: DDP's gradient buckets per step, where seen
        self.probe: dict[str, Any] | None = None  # result.json comm.probe: the links as runcontract.probe timed them
        self.device: str | None = None  # result.json device: where the parameters were (set by gradients())
        self._stop_signal: str | None = None
        self._checkpoint: dict[str, Any] | None = None
        self._finished = False
        self._nvml: NvmlSampler | None = None
        self._lock = threading.Lock()
        self.run_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        if mode not in contract.MODES:
            raise ValueError(f"mode {mode!r}: expected one of {', '.join(contract.MODES)}")
        self.config = self._read_config()
        if requires > CONTRACT_VERSION:
            self._refuse(f"the script needs runcontract contract version {requires}; this library is version "
                         f"{CONTRACT_VERSION} (upgrade runcontract where the script runs)")
        found = self.config.get("train")
        train: dict[str, Any] = found if isinstance(found, dict) else {}
        self.metrics_interval_s = float(metrics_interval_s if metrics_interval_s is not None
                                        else train.get("metrics_interval_s", DEFAULT_METRICS_INTERVAL_S))
        self.nvml_interval_ms = int(nvml_interval_ms if nvml_interval_ms is not None
                                    else train.get("nvml_interval_ms", DEFAULT_NVML_INTERVAL_MS))
        self._previous = self._previous_segment()
        self._interval = Interval()
        if stop_signals and threading.current_thread() is threading.main_thread():
            for sig in contract.STOP_SIGNALS:
                signal.signal(sig, self._on_stop_signal)

    # --- start ---------------------------------------------------------------------------------------------------
    def _read_config(self) -> dict[str, Any]:
        path = self.run_dir / contract.CONFIG_FILE
        try:
            data = read_json(path)
            if data is not None:
                check_version(path, data)
        except ContractError as exc:
            self._refuse(str(exc))
        return data or {}

    def _refuse(self, message: str) -> NoReturn:
        """A run this library cannot serve: exit.json code 2 (rank 0), ContractError with the one line."""
        if self.rank == 0:
            self._write_exit(EXIT_USAGE, message)
        raise ContractError(message)

    def _previous_segment(self) -> dict[str, Any]:
        """What an earlier segment of this run left when it was checkpointed after a signal (else nothing):
        T and the parts go on from there, as the HLM trainer's do across resumes."""
        try:
            previous_exit = read_json(self.run_dir / contract.EXIT_FILE) or {}
            mine = read_json(self.run_dir / contract.rank_file(self.rank)) or {}
        except ContractError:
            return {"after": None}
        out: dict[str, Any] = {"after": previous_exit.get("time")}
        if previous_exit.get("code") == EXIT_CHECKPOINTED and mine.get("after_checkpoint", True):
            out.update(parts=mine.get("parts") or {}, train_time_s=float(mine.get("train_time_s") or 0.0),
                       steps=int(mine.get("steps") or 0), samples=int(mine.get("samples") or 0),
                       tokens=int(mine.get("tokens") or 0), resumes=int(mine.get("resumes") or 0) + 1)
        return out

    def __enter__(self) -> Run:
        if self.local_rank == 0 and self._nvml is None:
            self._nvml = NvmlSampler(self.run_dir / contract.GPU_FILE, self.nvml_interval_ms).start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc is None:
            code = self.finish()
            if code != EXIT_OK:  # 75 after a checkpoint (the batch script requeues), 1 when no step ended
                raise SystemExit(code)
        elif isinstance(exc, SystemExit):
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if code == EXIT_OK:
                self.finish()
            else:
                self.fail(code, f"the script exited with {exc.code!r}", reason=SCRIPT_EXIT_REASON)
        elif isinstance(exc, KeyboardInterrupt):
            self.fail(130, "interrupted (KeyboardInterrupt)")
        else:
            last = traceback.extract_tb(tb)[-1] if tb is not None else None
            where = f" ({Path(last.filename).name}:{last.lineno})" if last is not None else ""
            self.fail(1, f"{type(exc).__name__}: {exc}{where}")

    # --- the loop ------------------------------------------------------------------------------------------------
    def data(self, iterable: Iterable[Any]) -> Iterator[Any]:
        """Yield what `iterable` yields, charging the wait for each item (and for the iterator's start) to
        data_wait."""
        self.ledger.enter("data_wait")
        try:
            iterator = iter(iterable)
        finally:
            self.ledger.leave("data_wait")
        while True:
            self.ledger.enter("data_wait")
            try:
                item = next(iterator)
            except StopIteration:
                return
            finally:
                self.ledger.leave("data_wait")
            yield item

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        """Charge the block to `name` (data_wait, compute, comm, optimizer); nested blocks charge the inner one."""
        self.ledger.enter(name)
        try:
            yield
        finally:
            self.ledger.leave(name)

    def step(self, samples: int = 0, tokens: int = 0, loss: float | None = None, *,
             at: Mark | None = None) -> StepRecord:
        """End a step: its wall time since the previous step's end, its parts, and the work it did on this rank.
        `at`: the step ended at that earlier instant of it (`self.ledger.mark()`), not now."""
        record = self.ledger.end_step(at=at)
        self.samples += int(samples)
        self.tokens += int(tokens)
        if loss is not None:
            self.loss = float(loss)
        self._interval.steps += 1
        self._interval.samples += int(samples)
        self._interval.tokens += int(tokens)
        for part, seconds in record.parts.items():
            self._interval.parts[part] += seconds
        if time.time() - self._interval.start >= self.metrics_interval_s:
            self._metrics_line()
        return record

    def gradients(self, parameters: Iterable[Any], probe: bool = True) -> int:
        """Record the bytes one all-reduce of these parameters' gradients moves (result.json `comm.grad_bytes`,
        from which the cockpit predicts N workers from this run): each parameter that requires a gradient, its
        elements x bytes per element. Call it once, before the loop, with the whole model's parameters
        (`model.parameters()`). With a process group of several ranks it also times the start-up probe
        (runcontract.probe: the links' bandwidth and latency, contention; result.json `comm.probe`), outside T
        since no step has begun; every rank must call it, as every rank calls a collective."""
        params = [p for p in parameters if p.requires_grad]
        self.grad_bytes = int(sum(p.numel() * p.element_size() for p in params))
        if params:
            self.device = str(params[0].device.type)  # "cpu", "cuda": as the HLM trainer's result says it
        if probe and self.world_size > 1 and self.probe is None:
            if self.ledger.started:
                self.not_separated.append("link: run.gradients() was called inside the loop, so no start-up probe "
                                          "ran (call it before the first step)")
            elif "torch.distributed" in sys.modules:
                # torch's module: imported only where the script already has torch (this one stays stdlib-only)
                from runcontract.probe import probe_for_run
                self.probe = probe_for_run(self.grad_bytes)
            if self.probe is None and not self.ledger.started:
                self.not_separated.append("link: no process group when run.gradients() was called, so no start-up "
                                          "probe ran (call it after init_process_group)")
        return self.grad_bytes

    @property
    def steps(self) -> int:
        return self.ledger.steps

    @property
    def train_time_s(self) -> float:
        """T so far on this rank, earlier segments of a resumed run included."""
        return float(self._previous.get("train_time_s", 0.0)) + self.ledger.train_time_s

    # --- checkpoint on signal ------------------------------------------------------------------------------------
    def _on_stop_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stop_signal = signal.Signals(signum).name
        if self.rank == 0:
            write_json(self.run_dir / contract.STOP_FILE, {"v": SCHEMA_VERSION, "t": time.time(),
                                                          "signal": self._stop_signal, "rank": self.rank})

    @property
    def should_stop(self) -> bool:
        """True once SIGTERM or SIGUSR1 arrived: save a checkpoint, call `checkpointed()`, leave the loop."""
        return self._stop_signal is not None

    def request_stop(self, why: str = "SIGTERM") -> None:
        """Ask the loop to stop as a stop signal would (a script's own reason, or a test)."""
        self._stop_signal = why

    def checkpointed(self, seconds: float | None = None, path: str | None = None) -> None:
        """Say that the script saved its state after `should_stop`: the run ends with exit.json code 75 and the
        process exits 75 (run the same directory again to resume; T and the parts go on)."""
        self._checkpoint = {"checkpoint_save_s": seconds, "checkpoint": path}

    # --- the end -------------------------------------------------------------------------------------------------
    def finish(self, status: str = "completed", code: int | None = None, message: str = "") -> int:
        """Write this rank's parts; rank 0 merges every rank's into result.json and writes exit.json.
        Returns the exit code recorded (75 after `checkpointed()`). Idempotent."""
        with self._lock:
            if self._finished:
                return code or EXIT_OK
        if code in (None, EXIT_OK) and not self.ledger.steps and not self._previous.get("steps"):
            self.fail(1, f"no step ended: {NO_STEP[self.mode]}")
            return 1
        with self._lock:
            self._finished = True
        if self._nvml is not None:
            self._nvml.stop()
        self._metrics_line(final=True)
        if code is None:
            code = EXIT_CHECKPOINTED if (self.should_stop and self._checkpoint is not None) else EXIT_OK
            if self.should_stop and self._checkpoint is None:
                message = message or (f"{self._stop_signal} arrived and the script ended without a checkpoint "
                                      "(checkpointed() not called)")
        mine = self._rank_record(code)
        write_json(self.run_dir / contract.rank_file(self.rank), mine)
        if self.rank != 0:
            return code
        ranks = self._gather(mine)
        if code == EXIT_OK:  # a checkpointed segment has no result yet: the run goes on when resumed
            write_json(self.run_dir / contract.RESULT_FILE, self._result(ranks, status, code))
        self._write_exit(code, message or contract.exit_reason(code), step=self.ledger.steps,
                         train_time_s=self.train_time_s, signal=self._stop_signal,
                         world_size=self.world_size, **(self._checkpoint or {}))
        return code

    def fail(self, code: int, message: str, reason: str | None = None) -> None:
        """End a run that went wrong: exit.json with `code` and the one-line message (rank 0); no result.json.
        `reason`: what the code means when the script chose it (default: the contract's meaning of the code)."""
        with self._lock:
            if self._finished:
                return
            self._finished = True
        if self._nvml is not None:
            self._nvml.stop()
        self._metrics_line(final=True)
        if self.rank == 0:
            self._write_exit(code, message, reason=reason, step=self.ledger.steps, train_time_s=self.train_time_s,
                             signal=self._stop_signal, world_size=self.world_size)

    def _write_exit(self, code: int, message: str, reason: str | None = None, **extra: Any) -> None:
        record = {"schema_version": SCHEMA_VERSION, "code": int(code), "reason": reason or contract.exit_reason(int(code)),
                  "message": message, "time": time.time(), "contract_version": CONTRACT_VERSION,
                  **{k: v for k, v in extra.items() if v is not None}}
        write_json(self.run_dir / contract.EXIT_FILE, record)

    def _parts(self) -> dict[str, float]:
        now = self.ledger.breakdown()
        before = self._previous.get("parts") or {}
        return {part: now[part] + float(before.get(part, 0.0)) for part in BREAKDOWN_PARTS}

    def _rank_record(self, code: int) -> dict[str, Any]:
        prev = self._previous
        return {"v": SCHEMA_VERSION, "rank": self.rank, "host": self.host, "after": prev.get("after"),
                "after_checkpoint": code == EXIT_CHECKPOINTED, "parts": self._parts(),
                "train_time_s": self.train_time_s, "steps": self.ledger.steps + int(prev.get("steps", 0)),
                "samples": self.samples + int(prev.get("samples", 0)),
                "tokens": self.tokens + int(prev.get("tokens", 0)), "resumes": int(prev.get("resumes", 0)),
                "first_step_s": self.ledger.first_step_s, "loss": self.loss, "time": time.time()}

    def _gather(self, mine: dict[str, Any]) -> list[dict[str, Any]]:
        """Every rank's record of this segment (ranks/rank<R>.json with the same `after`), waiting up to
        rank_wait_s for the late ones; the missing are left out and named in `attribution`."""
        found = {0: mine}
        deadline = time.monotonic() + self.rank_wait_s
        while True:
            for rank in range(1, self.world_size):
                if rank in found:
                    continue
                try:
                    record = read_json(self.run_dir / contract.rank_file(rank))
                except ContractError:
                    record = None  # being replaced: read it again next time
                if record is not None and record.get("after") == mine["after"]:
                    found[rank] = record
            if len(found) == self.world_size or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        missing = [r for r in range(self.world_size) if r not in found]
        if missing:
            self.not_separated.append(f"breakdown_by_rank: no parts from rank(s) {', '.join(map(str, missing))} "
                                      f"within {self.rank_wait_s:g} s")
        return [found[r] for r in sorted(found)]

    def _unmarked(self) -> list[str]:
        """Explicit mode: the parts the script never opened (their seconds are wherever the script was)."""
        if self.mode != "explicit":
            return []
        return [f"{part}: the script marks no `{part}` part (its seconds are in the part open at the time, or other)"
                for part in ("data_wait", "compute", "comm", "optimizer") if part not in self.ledger.opened]

    def _result(self, ranks: list[dict[str, Any]], status: str, code: int) -> dict[str, Any]:
        config = self.config
        timing: dict[str, Any] = {"train_time_s": self.train_time_s, "steps": sum(int(r["steps"]) for r in ranks[:1]),
                  "samples": sum(int(r["samples"]) for r in ranks), "tokens": sum(int(r["tokens"]) for r in ranks),
                  "resumes": int(self._previous.get("resumes", 0)), "first_step_s": self.ledger.first_step_s,
                  "step_time_sd_s": self.ledger.spread.sd(), "wall_s": time.time() - self._launch_time()[0], "startup_s": self._startup_s(),
                  "launch_time_source": self._launch_time()[1]}
        t = timing["train_time_s"]
        hosts = sorted({str(r.get("host")) for r in ranks})
        return {
            "schema_version": SCHEMA_VERSION, "kind": contract.SCRIPT_RESULT_KIND,
            "status": status, "config_id": str(config.get("config_id") or self.run_dir.name),
            "group_id": config.get("group_id"), "study": config.get("study"), "config": config,
            "world_size": self.world_size, "nodes": len(hosts), "hostnames": hosts,
            "device": self.device or _study_device(config), "backend": None,
            "versions": {"python": platform.python_version(), "torch": _loaded_version("torch"),
                         "runcontract": CONTRACT_VERSION},
            "timing": timing,
            "breakdown_s": dict(ranks[0]["parts"]),
            "breakdown_by_rank": [{"rank": r["rank"], "host": r.get("host"), **r["parts"],
                                   "train_time_s": r["train_time_s"]} for r in ranks],
            "throughput": {"samples_per_s": timing["samples"] / t if t > 0 else None,
                           "tokens_per_s": timing["tokens"] / t if t > 0 and timing["tokens"] else None},
            "final_loss": self.loss,
            **({"comm": {"grad_bytes": self.grad_bytes, "probe": self.probe,
                         **({"buckets": self.buckets} if self.buckets else {})}} if self.grad_bytes else {}),
            "attribution": {"mode": self.mode, "contract_version": CONTRACT_VERSION,
                            "not_separated": [*self._unmarked(), *self.not_separated], "measured": dict(self.measured)},
            "started_at": self.process_start, "finished_at": time.time(),
            **self.extra,
        }

    def _launch_time(self) -> tuple[float, str]:
        try:
            return float(os.environ[contract.LAUNCH_TIME_ENV]), contract.LAUNCH_TIME_ENV
        except (KeyError, ValueError):
            return self.process_start, "process start"

    def _startup_s(self) -> float | None:
        if not self.ledger.started:
            return None
        launched = self._launch_time()[0]
        # first_start is a perf_counter reading: place it on the wall clock through the present
        first_wall = time.time() - (self.ledger.now() - self.ledger.first_start)
        return max(0.0, first_wall - launched)

    def _metrics_line(self, final: bool = False) -> None:
        interval = self._interval
        seconds = time.time() - interval.start
        if not interval.steps and not final:
            return
        line: dict[str, Any] = {"v": SCHEMA_VERSION, "t": time.time(), "rank": self.rank,
                                "step": self.ledger.steps, "epoch": None, "total_steps": None, "loss": self.loss,
                                "lr": None, "interval_s": seconds, "steps_in_interval": interval.steps,
                                **{f"{p}_s": interval.parts[p] for p in BREAKDOWN_PARTS},
                                "samples_per_s": interval.samples / seconds if seconds > 0 else None,
                                "tokens_per_s": interval.tokens / seconds if seconds > 0 else None,
                                "mem_bytes": None, "train_time_s": self.train_time_s}
        if final:
            line["final"] = True
        append_jsonl(self.run_dir / contract.METRICS_FILE, line)
        self._interval = Interval()


@dataclass
class Interval:
    """What one metrics.jsonl line sums: the steps since the last line."""

    start: float = field(default_factory=time.time)
    steps: int = 0
    samples: int = 0
    tokens: int = 0
    parts: dict[str, float] = field(default_factory=lambda: dict.fromkeys(BREAKDOWN_PARTS, 0.0))


def _study_device(config: dict[str, Any]) -> str | None:
    """The device the study asked for ([train].device) where the script's parameters were not seen ("auto": not
    known, None)."""
    train = config.get("train")
    device = config.get("device") or (train.get("device") if isinstance(train, dict) else None)
    return str(device) if device in ("cpu", "cuda") else None


def _loaded_version(module: str) -> str | None:
    """A module's version if the script loaded it (never imports it)."""
    found = sys.modules.get(module)
    return getattr(found, "__version__", None) if found is not None else None
