"""`StopSignals`: the first SIGINT or SIGTERM only asks for a stop, the second interrupts,
and the previous handlers come back afterwards."""

from __future__ import annotations

import os
import signal

import pytest

from pyburn.train.interrupt import StopSignals

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGTERM"), reason="needs POSIX signals")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_first_signal_requests_a_stop_second_interrupts(signum):
    before = signal.getsignal(signum)
    with pytest.raises(KeyboardInterrupt):
        with StopSignals() as stop:
            assert not stop.requested
            os.kill(os.getpid(), signum)
            assert stop.requested and stop.received == signum
            os.kill(os.getpid(), signum)
    assert signal.getsignal(signum) is before


def test_handlers_come_back_after_a_clean_exit():
    before = signal.getsignal(signal.SIGINT)
    with StopSignals():
        assert signal.getsignal(signal.SIGINT) is not before
    assert signal.getsignal(signal.SIGINT) is before
