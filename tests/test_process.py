"""jit.process: process-wide tuning is the process owner's, and freezing survives several compilers."""

from __future__ import annotations

import gc
import os
import signal
import threading
import weakref

import anyio
import numpy as np
import pytest

from jit import process


class _Cycle:
    def __init__(self) -> None:
        self.me = self


@pytest.fixture(autouse=True)
def _thawed():
    gc.unfreeze()
    yield
    gc.enable()
    gc.unfreeze()
    assert process.current() == process.Tuning()


def test_nothing_is_tuned_until_the_owner_asks_and_blocks_restore_what_they_found():
    assert process.current() == process.Tuning(freeze_gc=False, single_threaded_blas=False, trim_heap=False)
    with process.building_snapshot():
        assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    with process.tuned() as outer:
        assert outer == process.current() == process.Tuning(freeze_gc=True, single_threaded_blas=True,
                                                             trim_heap=True)
        with process.tuned(freeze_gc=False):
            assert process.current() == process.Tuning(freeze_gc=False, single_threaded_blas=True, trim_heap=True)
            with process.building_snapshot():
                assert gc.isenabled()
        assert process.current() == outer
    assert process.current() == process.Tuning()


def test_a_built_snapshot_hands_the_free_heap_back_only_when_tuned(monkeypatch):
    trim = process._malloc_trim()
    assert trim is not None and trim(0) in (0, 1)  # glibc here: the real malloc_trim answers
    calls = []
    monkeypatch.setattr(process, "_malloc_trim", lambda: calls.append)
    process.snapshot_built()
    assert calls == []  # a host's heap is its own
    with process.tuned(trim_heap=False):
        process.snapshot_built()
    assert calls == []
    with process.tuned():
        process.snapshot_built()
    assert calls == [0]


def test_a_tuned_build_pauses_the_collector_and_freezes_what_it_built():
    with process.tuned():
        with process.building_snapshot():
            assert not gc.isenabled()
            built = _Cycle()
        assert gc.isenabled() and gc.get_freeze_count() > 0
        assert not any(o is built for o in gc.get_objects())
    # The owner's block is over: everything is collectable again.
    assert gc.get_freeze_count() == 0 and any(o is built for o in gc.get_objects())


def test_a_release_never_thaws_and_the_next_build_collects_the_garbage_then_freezes_again():
    with process.tuned():
        with process.building_snapshot():
            closed = _Cycle()  # a compiler's cyclic Datalog facts
            live = _Cycle()  # another compiler's snapshot
        gone = weakref.ref(closed)
        del closed
        process.snapshot_released()
        assert gc.get_freeze_count() > 0 and not any(o is live for o in gc.get_objects())
        gc.collect()
        assert gone() is not None  # frozen garbage is out of reach until the next build
        with process.building_snapshot():
            assert gone() is None
            assert not gc.isenabled()  # between the reclaim and the freeze no ordinary collection runs
        assert not any(o is live for o in gc.get_objects())


def test_reclaim_on_demand_and_a_failed_build_refreezes_what_the_reclaim_thawed():
    with process.tuned():
        with process.building_snapshot():
            live = _Cycle()
            closed = _Cycle()
        gone = weakref.ref(closed)
        del closed
        process.reclaim()
        assert gone() is None and not any(o is live for o in gc.get_objects())
        process.snapshot_released()
        with pytest.raises(RuntimeError), process.building_snapshot():
            raise RuntimeError("the store went away")
        assert gc.isenabled() and not any(o is live for o in gc.get_objects())
    process.reclaim()  # untuned: a no-op
    assert gc.get_freeze_count() == 0


def test_overlapping_builds_resume_the_collector_once_the_last_one_ends():
    first_in, second_done = threading.Event(), threading.Event()
    seen: list[bool] = []

    def other() -> None:
        first_in.wait()
        with process.building_snapshot():
            pass
        seen.append(gc.isenabled())
        second_done.set()

    with process.tuned():
        t = threading.Thread(target=other)
        t.start()
        with process.building_snapshot():
            first_in.set()
            second_done.wait()
            seen.append(gc.isenabled())
        t.join()
        assert seen == [False, False] and gc.isenabled()
        gc.disable()  # a host that runs without the collector keeps it off
        with process.building_snapshot():
            pass
        assert not gc.isenabled()


def test_the_blas_limit_applies_only_while_tuned(monkeypatch):
    limits: list[dict] = []

    class Controller:
        def limit(self, **kw):
            limits.append(kw)
            return threading.Lock()  # any context manager

    monkeypatch.setattr(process, "_blas", Controller)
    matrix, right = np.ones((4, 3), dtype=np.float32), np.ones((3, 2), dtype=np.float32)
    assert process.matrix_product(matrix, right).tolist() == [[3.0, 3.0]] * 4
    with process.tuned(freeze_gc=False):
        assert process.matrix_product(matrix, right).tolist() == [[3.0, 3.0]] * 4
    assert limits == [{"limits": 1, "user_api": "blas"}]


def test_a_large_scan_split_over_threads_gives_the_one_product(monkeypatch):
    """Tuned, a catalog-sized product is computed in row blocks on jit's scan threads:
    the same numbers as the one product, in row order, whatever the split."""
    rng = np.random.default_rng(7)
    matrix = rng.standard_normal((process.SPLIT_ROWS + 1001, 24)).astype(np.float32)
    right = rng.standard_normal((24, 3)).astype(np.float32)
    expected = matrix @ right
    for workers in (1, 2, 3):
        monkeypatch.setattr(process, "_scan_workers", lambda w=workers: w)
        with process.tuned(freeze_gc=False):
            got = process.matrix_product(matrix, right)
        assert got.shape == expected.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_a_stop_signal_ends_main_in_order_and_its_default_action_is_back_after():
    """SIGHUP cancels ``main`` (its clean-up runs, a second signal meanwhile changes nothing), the
    signal is named, and the signal's action is the default again afterwards."""
    done: list[str] = []

    async def main() -> None:
        try:
            os.kill(os.getpid(), signal.SIGHUP)
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                os.kill(os.getpid(), signal.SIGHUP)  # while closing: caught, not the default (death)
                await anyio.sleep(0.05)
                done.append("closed")

    assert anyio.run(process.until_stopped, main) == "SIGHUP"
    assert done == ["closed"]
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL


def test_a_signal_the_process_already_handles_or_ignores_is_left_alone():
    """Under ``nohup`` SIGHUP is ignored, and a host may have its own SIGTERM handler: neither is taken."""
    seen: list[int] = []
    ignored = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    handled = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        async def main() -> None:
            os.kill(os.getpid(), signal.SIGHUP)
            os.kill(os.getpid(), signal.SIGTERM)
            await anyio.sleep(0.05)

        assert anyio.run(process.until_stopped, main) is None
        assert seen == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, ignored)
        signal.signal(signal.SIGTERM, handled)
