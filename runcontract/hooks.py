"""The no-edit way in: torch's own global hooks split an unmodified script's steps into the five parts.

Installed by `python -m runcontract.attach` before the script starts (docs/workloads.md, "No edit"):

- a step is one training iteration, ended by an optimizer step (`register_optimizer_step_pre_hook`/
  `_post_hook`): with one optimizer, each of its steps; with several (a GAN's generator and discriminator), the
  end of the `optimizer.step()` by which every optimizer the run has stepped has stepped once since the previous
  step's end, or, where one steps again first, the end of the optimizer step before that (known once it steps
  again: the step is ended then, at that earlier instant, `Ledger.mark`). `measured.optimizers` counts each
  optimizer's own steps. `optimizer` is the time inside `step()`, less the closure's: a closure passed to
  `step(closure)` (Lightning's training_step, backward and zero_grad; LBFGS's evaluations) is timed as the rest
  of a step is (its forward and backward in compute, the rest in other);
- `compute` is the outermost module's forward (`register_module_forward_pre_hook`/`forward_hook`) and the
  backward pass (`torch.autograd.backward`, which `Tensor.backward` calls) minus its exposed communication; a
  wrapper's forward that Lightning redirects to `training_step` (under DDP) is not a forward: the modules
  called inside it are. A module under `torch.compile` is called as one (its compiled code calls no hook, so
  the hooks break no graph);
- `data_wait` is the DataLoader's iterator starting and each `next()` on it; the batches' samples (the first
  tensor's leading dimension) handed to the script between two step ends are the step's samples, as work is
  counted. A loader that fetches ahead (Accelerate's prepared loader, Lightning's prefetcher) draws k batches
  more than it has handed over: k is the batches drawn from a new iterator before the first forward, less one,
  and each batch counts once k more were drawn (or the epoch ended), so a batch fetched ahead and never used
  is not counted;
- `comm`: when a `DistributedDataParallel` is built, a comm hook doing DDP's own averaging all-reduce marks
  the hand-over of each gradient bucket; the rest of the backward pass after the last bucket is the wait for
  the all-reduces (as the HLM trainer measures it, docs/training.md);
- `comm.grad_bytes` (what a prediction of N workers needs): the DDP module's parameters that require a gradient,
  or, with no DDP, those the optimizer steps; `comm.buckets`: DDP's buckets per step, as the comm hook counted;
- `other`: everything else between two step ends (moving a batch to the device, the loss function, zeroing
  gradients, logging, a scheduler).

What a run did not show (no DDP with several processes, no DataLoader, no module forward) is named in
result.json `attribution.not_separated`, never guessed. On CUDA each boundary synchronises the device, so that
the host clock reads the device's work (`attribution.measured.cuda_sync`).
"""

# no `from __future__ import annotations`: DDP checks the comm hook's annotations at runtime

import functools
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.nn.parallel import DistributedDataParallel
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from torch.utils.data import DataLoader
from torch.utils.data.dataloader import _BaseDataLoaderIter

from runcontract.ledger import Mark
from runcontract.run import Run

# torch.distributed's collectives a script may call itself: counted inside T, named in not_separated
COLLECTIVES = ("all_reduce", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_to_all",
               "all_to_all_single", "broadcast", "broadcast_object_list", "reduce", "reduce_scatter",
               "reduce_scatter_tensor", "gather", "scatter", "barrier")


class CommState:
    """The DDP comm hook's state: the process group and the last bucket's hand-over (perf_counter)."""

    def __init__(self, group: dist.ProcessGroup | None) -> None:
        self.group = group
        self.last_ready: float | None = None
        self.buckets = 0
        self.bytes = 0
        self.busy = False  # inside the hook: its all-reduce is DDP's, not the script's


def timed_allreduce(state: CommState, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DDP's default averaging all-reduce, with the bucket's hand-over marked."""
    state.last_ready = time.perf_counter()
    state.buckets += 1
    state.bytes += bucket.buffer().numel() * bucket.buffer().element_size()
    state.busy = True
    try:
        return default_hooks.allreduce_hook(state.group, bucket)  # type: ignore[arg-type]
    finally:
        state.busy = False


def batch_size(batch: Any) -> int | None:
    """The samples in a DataLoader's batch: the leading dimension of its first tensor (a tensor, or one inside a
    tuple, list or dict, depth first); None where there is none."""
    if isinstance(batch, torch.Tensor):
        return int(batch.shape[0]) if batch.dim() > 0 else None
    items = batch.values() if isinstance(batch, dict) else batch if isinstance(batch, list | tuple) else ()
    for item in items:
        size = batch_size(item)
        if size is not None:
            return size
    return None


class Feed:
    """One DataLoader iterator's batches drawn and not yet counted: `ahead` is how many batches it fetches
    before it hands one over (None until the first forward after it began says)."""

    def __init__(self) -> None:
        self.held: list[int] = []
        self.ahead: int | None = None

    def deliver(self, keep: int) -> int:
        """The samples of the batches handed over: all but the last `keep` held."""
        handed, self.held = self.held[:max(0, len(self.held) - keep)], self.held[max(0, len(self.held) - keep):]
        return sum(handed)


FEED_ATTR = "_runcontract_feed"


def redirected(module: torch.nn.Module) -> bool:
    """Whether this forward is Lightning's redirection of another method (`training_step`) through a wrapper
    (DDP): the LightningModule's `forward` replaced on the instance by `_ForwardRedirection`'s function."""
    for inner in (module, getattr(module, "module", None)):
        forward = vars(inner).get("forward") if isinstance(inner, torch.nn.Module) else None
        if getattr(forward, "__qualname__", "").startswith("_ForwardRedirection."):
            return True
    return False


class TorchHooks:
    """Install with `install()`, remove with `remove()`; `notes()` says what the run could not separate."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.ledger = run.ledger
        self.main = threading.main_thread().ident
        self.depth = 0  # nesting of module forwards on the main thread: the outermost one is charged
        self.passed: Counter[int] = Counter()  # the open forwards that are no forward (`redirected`)
        self.comm: list[CommState] = []
        self.seen = {"forward": 0, "backward": 0, "batches": 0, "optimizer_steps": 0, "ddp": 0, "uncounted_batches": 0,
                     "closure_calls": 0}
        self.pending_samples = 0  # the samples of the batches handed to the script since the last step's end
        self.optimizers: dict[int, list[Any]] = {}  # id -> [class name, its steps], in the order of first step
        self.stepped: set[int] = set()  # the optimizers stepped since the last step's end
        self.settled = False  # an optimizer stepped again: every optimizer of an iteration has been seen
        self.pending: tuple[Mark, int] | None = None  # the last optimizer step's end, samples then: a step's end?
        self.param_bytes: dict[int, int] = {}  # what the optimizers step (no DDP): parameter id -> gradient bytes
        self.undecided: list[Feed] = []  # iterators whose look-ahead the next forward tells
        self.feeds: list[Feed] = []  # the iterators' Feeds that may still hold a batch (fetched ahead, never used)
        self.collectives: list[tuple[str, int]] = []  # the script's own: (name, steps ended before it) inside T
        self.other_wrappers: set[str] = set()  # DataParallel, FSDP...: built, communication not separated
        self._handles: list[Any] = []
        self._restore: list[Callable[[], None]] = []

    # --- the clock ---------------------------------------------------------------------------------------------
    def _now(self) -> float:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
            self.run.measured["cuda_sync"] = True
        return time.perf_counter()

    def _on_main(self) -> bool:
        return threading.get_ident() == self.main

    # --- install / remove --------------------------------------------------------------------------------------
    def install(self) -> "TorchHooks":
        self._handles += [register_optimizer_step_pre_hook(self._optimizer_pre),
                          register_optimizer_step_post_hook(self._optimizer_post),
                          register_module_forward_pre_hook(self._forward_pre),
                          register_module_forward_hook(self._forward_post, always_call=True)]
        self._patch(torch.autograd, "backward", self._wrap_backward)
        self._patch(_BaseDataLoaderIter, "__next__", self._wrap_next)
        self._patch(DataLoader, "__iter__", self._wrap_iter)
        self._patch(DistributedDataParallel, "__init__", self._wrap_ddp_init)
        for name in COLLECTIVES:
            if hasattr(dist, name):
                self._patch(dist, name, self._wrap_collective(name))
        return self

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        for undo in reversed(self._restore):
            undo()
        self._handles, self._restore = [], []

    def _patch(self, owner: Any, name: str, wrap: Callable[[Any], Any]) -> None:
        original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        setattr(owner, name, wrap(original))
        self._restore.append(lambda: setattr(owner, name, original))

    # --- optimizer: the step ------------------------------------------------------------------------------------
    def _optimizer_pre(self, optimizer: Any, args: Any, kwargs: Any) -> tuple[Any, dict[str, Any]] | None:
        if not self._on_main():
            return None
        if id(optimizer) in self.stepped:  # it steps again: the iteration ended at the previous optimizer step
            self.settled = True
            self._end_pending()
        if id(optimizer) not in self.optimizers:
            self.optimizers[id(optimizer)] = [type(optimizer).__name__, 0]
            self._optimizer_gradients(optimizer)
        self.ledger.enter("optimizer", self._now())
        if callable(kwargs.get("closure")):
            return args, {**kwargs, "closure": self._step_closure(kwargs["closure"])}
        if args and callable(args[0]):
            return (self._step_closure(args[0]), *args[1:]), kwargs
        return None

    def _step_closure(self, closure: Callable[[], Any]) -> Callable[[], Any]:
        """The closure `optimizer.step(closure)` calls (once, or several times for LBFGS), timed outside
        `optimizer`: its forward and backward in compute, the rest (the loss, logging, zero_grad) in other."""
        def step_closure() -> Any:
            if not self._on_main() or "optimizer" not in self.ledger.stack:
                return closure()
            self.seen["closure_calls"] += 1
            self.ledger.leave("optimizer", self._now())
            try:
                return closure()
            finally:
                self.ledger.enter("optimizer", self._now())
        return step_closure

    def _optimizer_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if not self._on_main():
            return
        now = self._now()
        self.ledger.leave("optimizer", now)
        self.seen["optimizer_steps"] += 1
        self.optimizers[id(optimizer)][1] += 1
        self._decide(lambda held: 0)  # no forward since it began: every batch drawn was handed over
        self.stepped.add(id(optimizer))
        if self.settled and self.stepped >= self.optimizers.keys():  # every optimizer has stepped: the step ends
            self.pending = None
            self.stepped = set()
            self.run.step(samples=self.pending_samples)
            self.pending_samples = 0
        else:  # another optimizer may step in this iteration yet
            self.pending = (self.ledger.mark(now), self.pending_samples)

    def _end_pending(self) -> None:
        """End the step at the last optimizer step's end, with the samples handed over by then."""
        if self.pending is not None:
            mark, samples = self.pending
            self.run.step(samples=samples, at=mark)
            self.pending_samples -= samples
        self.pending = None
        self.stepped = set()

    def flush(self) -> None:
        """End the step the last optimizer step may have ended (the run's end, or a known iteration boundary)."""
        self._end_pending()

    def _optimizer_gradients(self, optimizer: Any) -> None:
        """With no DDP and no model given (`run.gradients`): the parameters every optimizer steps."""
        if self.seen["ddp"] or (self.run.grad_bytes is not None and not self.param_bytes):
            return
        params = [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]
        self.param_bytes.update({id(p): p.numel() * p.element_size() for p in params})
        self.run.gradients(params, probe=False)
        self.run.grad_bytes = sum(self.param_bytes.values())

    # --- forward and backward: compute (and comm) --------------------------------------------------------------
    def _forward_pre(self, module: torch.nn.Module, args: Any) -> None:
        if torch.compiler.is_compiling() or not self._on_main():  # a module inside a compiled one: no graph break
            return
        if self.depth == 0 and redirected(module):
            self.passed[id(module)] += 1
            return
        self.depth += 1
        if self.depth == 1:
            self.seen["forward"] += 1
            self._decide(lambda held: held - 1)  # drawn before the first forward: one, and those fetched ahead
            self.ledger.enter("compute", self._now())

    def _forward_post(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        if torch.compiler.is_compiling() or not self._on_main():
            return
        if self.depth == 0 and self.passed[id(module)]:
            self.passed[id(module)] -= 1
            return
        if self.depth == 0:
            return
        self.depth -= 1
        if self.depth == 0:
            self.ledger.leave("compute", self._now())

    def _wrap_backward(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def backward(*args: Any, **kwargs: Any) -> Any:
            if not self._on_main():
                return original(*args, **kwargs)
            for state in self.comm:
                state.last_ready = None
            self.seen["backward"] += 1
            self.ledger.enter("compute", self._now())
            try:
                return original(*args, **kwargs)
            finally:
                now = self._now()
                ready = [s.last_ready for s in self.comm if s.last_ready is not None]
                self.ledger.leave("compute", now, tail=("comm", max(ready)) if ready else None)
        return backward

    # --- the DataLoader: data_wait ------------------------------------------------------------------------------
    def _wrap_next(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def __next__(iterator: Any) -> Any:
            if not self._on_main():
                return original(iterator)
            feed = self._feed(iterator)
            self.ledger.enter("data_wait", self._now())
            try:
                batch = original(iterator)
            except StopIteration:  # the epoch's end: every batch fetched ahead has been handed over
                self.pending_samples += feed.deliver(0)
                raise
            finally:
                self.ledger.leave("data_wait", self._now())
            self.seen["batches"] += 1
            size = batch_size(batch)
            if size is None:
                self.seen["uncounted_batches"] += 1
            feed.held.append(size or 0)
            if feed.ahead is not None:
                self.pending_samples += feed.deliver(feed.ahead)
            return batch
        return __next__

    def _decide(self, ahead: Callable[[int], int]) -> None:
        """Fix the look-ahead of each iterator that has drawn a batch and not yet said, and count what it handed over."""
        for feed in self.undecided:
            if feed.held:
                feed.ahead = ahead(len(feed.held))
                self.pending_samples += feed.deliver(feed.ahead)
        self.undecided = [feed for feed in self.undecided if feed.ahead is None]

    def _feed(self, iterator: Any, fresh: bool = False) -> Feed:
        """The iterator's Feed (a new one when it starts an epoch)."""
        feed = None if fresh else iterator.__dict__.get(FEED_ATTR)
        if feed is None:
            feed = Feed()
            setattr(iterator, FEED_ATTR, feed)
            self.undecided.append(feed)
            self.feeds = [*(f for f in self.feeds if f.held or f.ahead is None), feed]
        return feed

    def _wrap_iter(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def __iter__(loader: Any) -> Any:
            if not self._on_main():
                return original(loader)
            self.ledger.enter("data_wait", self._now())
            try:
                iterator = original(loader)
            finally:
                self.ledger.leave("data_wait", self._now())
            if isinstance(iterator, _BaseDataLoaderIter):
                self._feed(iterator, fresh=True)
            return iterator
        return __iter__

    # --- DDP: comm ----------------------------------------------------------------------------------------------
    def _wrap_ddp_init(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def __init__(ddp: DistributedDataParallel, *args: Any, **kwargs: Any) -> None:
            original(ddp, *args, **kwargs)
            state = CommState(ddp.process_group)
            ddp.register_comm_hook(state, timed_allreduce)
            self.comm.append(state)
            self.seen["ddp"] += 1
            self.run.gradients(ddp.module.parameters())  # the whole model's, as DDP all-reduces them
        return __init__

    def _wrap_collective(self, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(original)
            def collective(*args: Any, **kwargs: Any) -> Any:
                if self._on_main() and self.ledger.started and not any(s.busy for s in self.comm):
                    self.collectives.append((name, self.ledger.steps))
                return original(*args, **kwargs)
            return collective
        return wrap

    # --- what the run showed -----------------------------------------------------------------------------------
    def notes(self) -> None:
        """End the last step, and fill the run's `not_separated` and `measured` from what the hooks saw."""
        self.flush()
        run, seen = self.run, self.seen
        unused = [len(feed.held) for feed in self.feeds if feed.ahead]
        run.measured.update(seen, comm_buckets=sum(s.buckets for s in self.comm),
                            comm_bytes=sum(s.bytes for s in self.comm), batches_fetched_ahead=sum(unused),
                            optimizers=[{"optimizer": name, "steps": steps}
                                        for name, steps in self.optimizers.values()])
        if self.comm and self.ledger.steps:  # DDP's buckets per step, as the comm hook counted them
            run.buckets = max(1, round(run.measured["comm_buckets"] / self.ledger.steps))
        if not seen["ddp"] and run.world_size > 1:
            run.not_separated.append("comm: communication not separated: no DDP found (any collective is inside "
                                     "compute, optimizer or other)")
        own = Counter(name for name, before in self.collectives if before < self.ledger.steps)  # inside a step
        if own:
            calls = ", ".join(f"dist.{name} x{count}" for name, count in sorted(own.items()))
            run.not_separated.append(f"comm: collectives besides DDP's gradient all-reduce ({calls}; the script's or "
                                     "its library's) are not separated: their time is inside compute, optimizer or "
                                     "other")
            run.measured["own_collectives"] = dict(own)
        if not seen["batches"]:
            run.not_separated.append("data_wait: no DataLoader iterated (the script's own loading is in other)")
        if not seen["batches"] or seen["uncounted_batches"]:
            run.not_separated.append("samples: not counted for every batch (no tensor found in it), so work per "
                                     "worker and S are not comparable across worker counts")
        if not seen["forward"] and not seen["backward"]:
            run.not_separated.append("compute: no module forward or backward seen (in other)")
