"""`clawviz._gc.bulk_gc`: the collector's first threshold raised for a bulk job, then put back,
however the uses nest or overlap (the app's exports run in server threads)."""

from __future__ import annotations

import gc
import threading

import pytest

from clawviz._gc import BULK_GEN0, bulk_gc


@pytest.fixture(autouse=True)
def _thresholds():
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_raises_the_first_threshold_and_restores_it():
    with bulk_gc():
        assert gc.get_threshold() == (BULK_GEN0, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_restores_after_an_error():
    with pytest.raises(RuntimeError), bulk_gc():
        raise RuntimeError("boom")
    assert gc.get_threshold() == (700, 10, 10)


def test_nested_uses_restore_only_at_the_last_exit():
    with bulk_gc():
        with bulk_gc():
            assert gc.get_threshold()[0] == BULK_GEN0
        assert gc.get_threshold()[0] == BULK_GEN0  # the outer job is still running
    assert gc.get_threshold() == (700, 10, 10)


def test_overlapping_threads_share_one_raise():
    entered, release = threading.Barrier(3), threading.Event()

    def job() -> None:
        with bulk_gc():
            entered.wait()
            release.wait()

    threads = [threading.Thread(target=job) for _ in range(2)]
    for t in threads:
        t.start()
    entered.wait()
    assert gc.get_threshold()[0] == BULK_GEN0
    release.set()
    for t in threads:
        t.join()
    assert gc.get_threshold() == (700, 10, 10)


def test_a_collector_turned_off_or_set_higher_is_left_alone():
    gc.set_threshold(0)
    with bulk_gc():
        assert gc.get_threshold()[0] == 0
    gc.set_threshold(50_000, 10, 10)
    with bulk_gc():
        assert gc.get_threshold()[0] == 50_000
    assert gc.get_threshold() == (50_000, 10, 10)


def test_usable_as_a_decorator_and_the_function_still_returns():
    @bulk_gc()
    def work(x: int) -> int:
        assert gc.get_threshold()[0] == BULK_GEN0
        return x * 2

    assert work(3) == 6
    assert work(4) == 8
    assert gc.get_threshold() == (700, 10, 10)
