"""Worker processes that never outlive the run that started them.

`run_parallel` hands items to `processes` worker processes (one item at a time, from a
shared counter, so slow items do not hold up a fixed share) and passes each result back
to the parent as it arrives. What makes it safe to kill:

- every worker asks the kernel for SIGTERM when its parent dies (Linux
  `prctl(PR_SET_PDEATHSIG)`), and also runs a watchdog thread that ends the process
  within `WATCHDOG_PERIOD` seconds once its parent pid changes (any POSIX system; the
  parent dying re-parents the worker). A worker also checks just before it writes
  (`orphaned()`), so nothing is written after the parent is gone;
- workers ignore SIGINT: Ctrl-C reaches the whole process group, and the parent, which
  gets KeyboardInterrupt, terminates them itself (as it does on any exception), so an
  interrupted run prints one message instead of a traceback per worker;
- a worker that raises sends the traceback to the parent, which stops the others and
  raises `WorkerFailed`; a worker killed from outside (OOM killer) is noticed by its exit
  code instead of leaving the parent waiting forever.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
import traceback
from typing import Any, Callable, Sequence

WATCHDOG_PERIOD = 0.2  # seconds between parent checks in a worker
ORPHANED_EXIT = 75  # exit status of a worker that stopped because its parent died
_PR_SET_PDEATHSIG = 1

_watched_parent: int | None = None  # set in worker processes only


class WorkerFailed(RuntimeError):
    """A worker process raised or died; the message names the item and carries its traceback."""


def orphaned() -> bool:
    """True in a worker whose parent has died (always False in the parent process)."""
    return _watched_parent is not None and os.getppid() != _watched_parent


def _watchdog(parent: int) -> None:
    while True:
        time.sleep(WATCHDOG_PERIOD)
        if os.getppid() != parent:
            os._exit(ORPHANED_EXIT)


def die_with_parent(expected_parent: int | None) -> None:
    """Make this process end when its parent does (see the module docstring).

    `expected_parent`: the pid the parent had when it started us; when the current parent
    differs, the parent died before this ran, and the process exits at once.
    """
    global _watched_parent
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):  # no prctl: the watchdog still works
            pass
    parent = os.getppid()
    if expected_parent is not None and parent != expected_parent:
        os._exit(ORPHANED_EXIT)
    _watched_parent = parent
    threading.Thread(target=_watchdog, args=(parent,), name="parent-watchdog", daemon=True).start()


def _worker_main(factory, factory_args, items, next_slot, results, expected_parent) -> None:
    die_with_parent(expected_parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    item = None
    try:
        worker = factory(*factory_args)
        try:
            while True:
                with next_slot.get_lock():
                    slot = next_slot.value
                    next_slot.value = slot + 1
                if slot >= len(items):
                    break
                item = items[slot]
                results.put(("ok", item, worker.run(item)))
        finally:
            worker.close()
    except Exception:  # report everything: the parent raises it with this traceback
        results.put(("error", item, f"worker pid {os.getpid()}:\n{traceback.format_exc()}"))
        results.close()
        results.join_thread()
        sys.exit(1)


def _stop(processes: Sequence[multiprocessing.Process]) -> None:
    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + 5.0
    for process in processes:
        process.join(timeout=max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join()


def run_parallel(
    factory: Callable[..., Any], factory_args: tuple, items: Sequence[Any], processes: int,
    on_result: Callable[[Any, Any], None], on_started: Callable[[list[int]], None] | None = None,
    poll: float = 0.25,
) -> None:
    """`factory(*factory_args)` in each of `processes` workers, then `.run(item)` per item, `.close()` at the end.

    `factory` and its arguments must be picklable (top-level callables), since workers
    may be spawned. `on_result(item, result)` runs in the parent, in completion order;
    `on_started(pids)` once all workers run. Returns when every item is done; raises
    `WorkerFailed` when a worker fails, after stopping the others.
    """
    context = multiprocessing.get_context()
    next_slot = context.Value("l", 0)
    results = context.Queue()
    # fork and spawn make us the workers' parent; the forkserver makes itself their parent.
    expected_parent = os.getpid() if context.get_start_method() in ("fork", "spawn") else None
    workers = [context.Process(target=_worker_main, name=f"rlvr-world worker {n}", daemon=True,
                               args=(factory, factory_args, list(items), next_slot, results, expected_parent))
               for n in range(processes)]
    try:
        for worker in workers:
            worker.start()
        if on_started is not None:
            on_started([worker.pid for worker in workers])
        pending = len(items)
        while pending:
            try:
                kind, item, payload = results.get(timeout=poll)
            except queue.Empty:
                failed = [w for w in workers if w.exitcode not in (None, 0)]
                if failed or all(w.exitcode is not None for w in workers):
                    pending -= _drain(results, on_result)
                    if pending:
                        codes = ", ".join(f"pid {w.pid}: exit {w.exitcode}" for w in workers)
                        raise WorkerFailed(f"worker processes ended with {pending} items left ({codes})")
                continue
            if kind == "error":
                raise WorkerFailed(f"item {item!r} failed in a worker process ({payload.rstrip()})")
            on_result(item, payload)
            pending -= 1
    finally:
        _stop(workers)
        results.close()


def _drain(results, on_result) -> int:
    done = 0
    while True:
        try:
            kind, item, payload = results.get(timeout=0.05)
        except queue.Empty:
            return done
        if kind == "error":
            raise WorkerFailed(f"item {item!r} failed in a worker process ({payload.rstrip()})")
        on_result(item, payload)
        done += 1
