"""Process-wide tuning that only the owner of the process may switch on.

Two things make compiles at 10,000 tools fast, and both change state that
belongs to the whole process, not to one library object:

- **the cyclic garbage collector.** A catalog snapshot is hundreds of thousands of
  Python objects at 10,000 tools. Each full collection walks all of them, several
  times while a snapshot is built and then about once every 100 compiles. Tuned, a
  snapshot is built with the collector paused and then ``gc.freeze()``-d, so later
  collections skip it (docs/selection.md, "Process-wide tuning").
- **BLAS threads.** The retrieval scan (one matrix product) runs on one BLAS
  thread: OpenBLAS's workers spin after a product and, on a small machine, slow
  the next query embedding down. One thread costs under a millisecond of scan at
  10,000 tools; a larger catalog's rows are split over jit's own blocking threads
  instead (:func:`matrix_product`; docs/benchmarks.md, "The 100k retrieval scan is
  split over jit's own threads").

A third policy is about memory: a snapshot build frees far more than it keeps, and glibc's
allocator keeps freed heap for later use, so a process that rebuilt its snapshot would stay
larger by what the build freed. Tuned, each build ends by handing the free heap back
(``malloc_trim``, :func:`snapshot_built`).

A fourth policy is about output, not speed: loading the embedding model prints a
progress bar and transformers' warnings on stderr, which is the CLI's output and
``jit serve --stdio``'s log stream. Those libraries take their settings from
environment variables, which belong to the process too, so :func:`tuned` sets
them (where the environment does not already) and the embedder never does.

``gc.freeze()`` and BLAS limits are process-wide, so a :class:`~jit.selection.compiler.Compiler`
never changes them on its own: a host process embedding jit keeps its collector
and its BLAS threads as it set them. The process owner opts in — ``jit``'s CLI
(:func:`jit.cli.main`), ``jit serve`` (:func:`jit.serve.server.run`), ``jit eval``, the
benchmarks, or a harness that wants the same speed::

    with jit.process.tuned():
        ...  # compilers built here freeze their snapshots; scans use one BLAS thread

**Freezing with several compilers.** CPython's collector has one permanent
generation and no owners: ``gc.unfreeze()`` thaws everything, so no compiler
can thaw only its own objects, and counting references to "frozen generations"
is not something the gc module offers. The policy is therefore the process's,
not a compiler's:

- each snapshot build ends with ``gc.freeze()`` (everything alive is frozen);
- closing a compiler never thaws anything: it only notes that frozen objects
  (its Datalog engine's facts are cyclic) may now be garbage;
- the next build, whichever compiler runs it, first thaws, collects once and —
  when it ends — freezes again, so a process that re-creates compilers keeps a
  flat memory, and another live compiler's snapshot is frozen again before any
  ordinary collection runs (the collector stays paused in between);
- :func:`reclaim` does the same on demand, and leaving the outermost
  :func:`tuned` block thaws everything: the owner's word, not a library's.

Builds running at the same time in several threads pause the collector once:
the first to start pauses it and the last to end resumes it, and only if the
host had it enabled.

**Stop signals.** A long-running jit process (``jit serve``) has children to close
(its upstream servers, in sessions of their own, so a signal to jit's group does not
reach them) and statuses to write when it ends. :func:`until_stopped` runs it with
SIGTERM and SIGHUP turned into that orderly end, as end of input or Ctrl-C already
are; like the tuning, a signal's handler is the process's, so only the owner calls it,
and it takes over only the signals whose action is still the default (a host's own
handler, or ``nohup``'s ignored SIGHUP, is left alone).
"""

from __future__ import annotations

import functools
import gc
import itertools
import logging
import os
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = ["QUIET_MODEL_LOADING", "STOP_SIGNALS", "Tuning", "current", "reclaim", "tuned", "until_stopped"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Tuning:
    """What the process owner opted into (nothing, by default)."""

    #: Build catalog snapshots with the cyclic GC paused, then ``gc.freeze()`` them.
    freeze_gc: bool = False
    #: Run the retrieval scan on one BLAS thread per worker (threadpoolctl; :func:`matrix_product`).
    single_threaded_blas: bool = False
    #: After a catalog snapshot build, give the C heap's free memory back to the system (:func:`snapshot_built`).
    trim_heap: bool = False


_UNTUNED = Tuning()
_lock = threading.Lock()
_tuning = _UNTUNED
#: A compiler was closed since the last freeze: the next build thaws and collects first.
_reclaim_pending = False
#: Builds in progress (the collector is paused while any runs), and whether the host had it on.
_building = 0
_host_gc_enabled = True


#: Environment defaults :func:`tuned` applies while it runs: no weight-loading progress bar,
#: transformers' log at errors only (both libraries read these when the model first loads).
QUIET_MODEL_LOADING: dict[str, str] = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error"}


def current() -> Tuning:
    """The tuning in force: what the innermost :func:`tuned` block asked for."""
    return _tuning


@contextmanager
def tuned(*, freeze_gc: bool = True, single_threaded_blas: bool = True, trim_heap: bool = True) -> Iterator[Tuning]:
    """Opt this process into jit's process-wide tuning while the block runs.

    For the process owner only (a CLI's ``main``, a server's ``run``, a
    benchmark, a harness's entry point): library code never calls it. Blocks
    nest; each restores the tuning it found. Leaving the block thaws every
    frozen object if freezing was on in it and is off outside it, so the
    objects of compilers closed meanwhile become collectable again.

    Model loading is kept quiet while the block runs (:data:`QUIET_MODEL_LOADING`,
    each variable only where the environment does not set it; removed again on exit).
    """
    global _tuning, _reclaim_pending
    wanted = Tuning(freeze_gc=freeze_gc, single_threaded_blas=single_threaded_blas, trim_heap=trim_heap)
    added = [k for k, v in QUIET_MODEL_LOADING.items() if k not in os.environ]
    with _lock:
        before, _tuning = _tuning, wanted
        os.environ.update({k: QUIET_MODEL_LOADING[k] for k in added})
    try:
        yield wanted
    finally:
        with _lock:
            for k in added:
                os.environ.pop(k, None)
            _tuning = before
            if wanted.freeze_gc and not before.freeze_gc:
                _reclaim_pending = False
                gc.unfreeze()


def reclaim() -> None:
    """Collect the garbage frozen with earlier snapshots (closed compilers' Datalog facts)
    and freeze what is alive again. A no-op unless the process is tuned to freeze.

    The next snapshot build does this by itself after a compiler was closed; call it
    when compilers were closed and no build is coming soon. It costs one full
    collection, which walks every live snapshot.
    """
    global _reclaim_pending
    with _lock:
        if not _tuning.freeze_gc:
            return
        _reclaim_pending = False
        gc.unfreeze()
        gc.collect()
        gc.freeze()


#: The signals that ask a process to stop, by name (a platform may lack one: Windows has no SIGHUP).
#: SIGTERM: what an MCP client sends a stdio server that did not exit on end of input, and what
#: supervisors (systemd, docker stop, kill) send; SIGHUP: what a closing terminal sends. SIGINT is
#: not among them: Ctrl-C already cancels the event loop's main task (KeyboardInterrupt, exit 130).
STOP_SIGNALS = ("SIGTERM", "SIGHUP")


async def until_stopped(main: Callable[[], Awaitable[None]], *, signals: tuple[str, ...] = STOP_SIGNALS,
                        stop: Callable[[], None] | None = None) -> str | None:
    """Run ``main()``; the first of ``signals`` to arrive ends it in order, and the process with it.

    The signal calls ``stop`` (say, a server's "should exit" flag), or by default cancels
    ``main``, whose ``finally`` blocks and shielded clean-up then run as on any other end. The
    signals stay caught until ``main`` has returned: a second one while it closes changes
    nothing (the clean-up is bounded; SIGKILL is there for the impatient).

    Returns the name of the signal that stopped ``main``, or None when it ended by itself.
    Only signals whose action is the default are caught, and only from the main thread
    (where the event loop can receive them); with none to catch, ``main`` just runs.
    For the process owner only, as :func:`tuned` is.
    """
    import anyio

    wanted = [getattr(signal, name) for name in signals if hasattr(signal, name)]
    caught = [s for s in wanted if signal.getsignal(s) is signal.SIG_DFL]
    if not caught or threading.current_thread() is not threading.main_thread():
        await main()
        return None
    stopped_by: str | None = None
    with anyio.open_signal_receiver(*caught) as received:
        async with anyio.create_task_group() as tasks:

            async def watch() -> None:
                nonlocal stopped_by
                async for signum in received:
                    if stopped_by is None:
                        stopped_by = signal.Signals(signum).name
                        log.warning("%s received: stopping (child processes are closed first)", stopped_by)
                        (stop or tasks.cancel_scope.cancel)()

            tasks.start_soon(watch)
            await main()
            tasks.cancel_scope.cancel()
    return stopped_by


# ---------------------------------------------------------------------- for jit's own modules


@contextmanager
def building_snapshot() -> Iterator[None]:
    """Wrap one catalog snapshot build (:class:`jit.selection.catalog_view.CatalogView`).

    Untuned: nothing. Tuned to freeze: a pending reclaim first (thaw, collect),
    then the build with the collector paused, then ``gc.freeze()``.
    """
    global _reclaim_pending, _building, _host_gc_enabled
    if not _tuning.freeze_gc:
        yield
        return
    with _lock:
        thawed = _reclaim_pending
        if thawed:
            _reclaim_pending = False
            gc.unfreeze()
            gc.collect()
        if _building == 0:
            _host_gc_enabled = gc.isenabled()
            gc.disable()
        _building += 1
    built = False
    try:
        yield
        built = True
    finally:
        with _lock:
            _building -= 1
            if _building == 0 and _host_gc_enabled:
                gc.enable()
            # A failed build leaves its garbage unfrozen, but what the reclaim thawed
            # (another compiler's live snapshot) is frozen again.
            if built or thawed:
                gc.freeze()


def snapshot_built() -> None:
    """A catalog snapshot was built, the one it replaced let go by its builder; or its view file
    was written (on the file writer's thread, jit.selection.catalog_view).

    Tuned to trim: glibc's ``malloc_trim`` hands the heap's free pages back to the system.
    A build frees far more than it keeps (the replaced snapshot's tables, the rows read, the
    view file's encoding), and glibc keeps such memory for later allocations (docs/selection.md,
    "Process-wide tuning", says how much at 100,000 tools). Elsewhere (another C library): nothing."""
    if _tuning.trim_heap and (trim := _malloc_trim()) is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Any:
    import ctypes
    import ctypes.util

    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


def snapshot_released() -> None:
    """A compiler let go of its snapshot and engine: frozen objects may be garbage now.

    Never thaws (another compiler's snapshot may be frozen too): the next build,
    or :func:`reclaim`, collects them."""
    global _reclaim_pending
    if _tuning.freeze_gc:
        with _lock:
            _reclaim_pending = True


@functools.cache
def _blas() -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()  # scans the loaded BLAS libraries: once


#: Rows below which the scan is one product: splitting costs more in hand-offs than it saves.
SPLIT_ROWS = 20_000
_scan_pool: Any = None


def usable_cpus(cap: int = 4) -> int:
    """The CPUs this process may run on, at most ``cap``: the thread count for jit's compute
    pools (the scan's workers here, onnxruntime's intra-op threads), which scale poorly past 4."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cap, cpus))


def _scan_workers() -> int:
    return usable_cpus()


def matrix_product(matrix: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``matrix @ right``: the retrieval scan's product (``matrix`` the catalog's rows).

    Untuned, as the host set its BLAS. Tuned, on one BLAS thread per worker, with a
    large matrix's rows split over a few of jit's own threads (the CPUs this process
    may use, at most 4). OpenBLAS's own threads would give the same speed-up but spin
    after each product and slow the next query embedding down; jit's workers block instead
    (docs/benchmarks.md, "The 100k retrieval scan is split over jit's own threads"). The BLAS limit is process-wide
    while it lasts (threadpoolctl); two scans that overlap may restore it early for each
    other, which changes speed only."""
    global _scan_pool
    if not _tuning.single_threaded_blas:
        return matrix @ right
    with _blas().limit(limits=1, user_api="blas"):
        workers = _scan_workers()
        if workers == 1 or len(matrix) < SPLIT_ROWS:
            return matrix @ right
        with _lock:
            if _scan_pool is None:
                from concurrent.futures import ThreadPoolExecutor

                _scan_pool = ThreadPoolExecutor(workers, thread_name_prefix="jit-scan")
        import numpy as np

        out = np.empty((len(matrix), right.shape[1]), dtype=np.result_type(matrix, right))
        bounds = np.linspace(0, len(matrix), workers + 1).astype(int)
        parts = [_scan_pool.submit(np.matmul, matrix[a:b], right, out=out[a:b])
                 for a, b in itertools.pairwise(bounds)]
        for part in parts:
            part.result()
        return out
