"""SIGTERM and SIGHUP take the Ctrl-C path (real signals to this process)."""

from __future__ import annotations

import argparse
import os
import signal
import threading
import time

import pytest

from app.cli import run_headless
from app.commands.interrupts import Terminated, termination_as_interrupt


def wait_for_a_signal() -> None:
    for _ in range(1000):  # the handler runs between two bytecodes; never reached 10 s
        time.sleep(0.01)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_the_signal_raises_a_keyboard_interrupt_naming_it(sig: signal.Signals) -> None:
    before = signal.getsignal(sig)
    with pytest.raises(KeyboardInterrupt) as caught, termination_as_interrupt():
        os.kill(os.getpid(), sig)
        wait_for_a_signal()
    assert isinstance(caught.value, Terminated)
    assert caught.value.signum == sig
    assert str(caught.value) == sig.name
    assert signal.getsignal(sig) == before  # put back after the block


def test_a_signal_ignored_by_the_parent_stays_ignored() -> None:
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under `nohup`
    try:
        with termination_as_interrupt():
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.05)  # nothing raised
    finally:
        signal.signal(signal.SIGHUP, before)


def test_outside_the_main_thread_it_changes_nothing() -> None:
    before = signal.getsignal(signal.SIGTERM)
    seen: list[object] = []

    def in_thread() -> None:
        with termination_as_interrupt():
            seen.append(signal.getsignal(signal.SIGTERM))

    worker = threading.Thread(target=in_thread)
    worker.start()
    worker.join()
    assert seen == [before]


def test_a_command_that_lets_the_interrupt_through_exits_with_the_signals_status() -> None:
    def run(_args: argparse.Namespace) -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        wait_for_a_signal()
        return 0

    assert run_headless(run, argparse.Namespace()) == 128 + signal.SIGTERM


def test_a_command_that_catches_it_runs_its_clean_up_and_chooses_its_status() -> None:
    cleaned: list[bool] = []

    def run(_args: argparse.Namespace) -> int:
        try:
            os.kill(os.getpid(), signal.SIGHUP)
            wait_for_a_signal()
            return 0
        except KeyboardInterrupt:
            return 130
        finally:
            cleaned.append(True)

    assert run_headless(run, argparse.Namespace()) == 130
    assert cleaned == [True]


def test_a_ctrl_c_let_through_ends_the_command_with_130_and_no_traceback() -> None:
    def run(_args: argparse.Namespace) -> int:
        os.kill(os.getpid(), signal.SIGINT)
        wait_for_a_signal()
        return 0

    assert run_headless(run, argparse.Namespace()) == 130


class _InterruptedFinaliser:
    """An object whose finaliser gets the signal, as gRPC's `_Rendezvous.__del__` did when the
    garbage collector ran it at the moment of a Ctrl-C: Python prints and drops it."""

    def __init__(self, interrupt: KeyboardInterrupt) -> None:
        self.interrupt = interrupt

    def __del__(self) -> None:
        raise self.interrupt


@pytest.mark.parametrize(
    ("interrupt", "raised"),
    [(KeyboardInterrupt(), KeyboardInterrupt), (Terminated(signal.SIGTERM), Terminated)],
)
def test_an_interrupt_dropped_inside_a_finaliser_is_raised_again(
    interrupt: KeyboardInterrupt, raised: type[KeyboardInterrupt]
) -> None:
    with pytest.raises(raised) as caught, termination_as_interrupt():
        _InterruptedFinaliser(interrupt)  # finalised at once: its exception is dropped
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the command going on as if nothing happened
            time.sleep(0.01)
    if isinstance(caught.value, Terminated):
        assert caught.value.signum == signal.SIGTERM
