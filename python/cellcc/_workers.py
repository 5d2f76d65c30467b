"""Worker process pools that die with their parent.

A ``ProcessPoolExecutor`` worker outlives a driver killed with SIGKILL: nothing tells it
the driver is gone, and it keeps its memory (hundreds of MB for a simulator) forever.
Each worker here asks Linux to send it SIGKILL when its parent dies
(``prctl(PR_SET_PDEATHSIG)``; strictly, when the thread that started it exits: the
pools here start their workers from the caller's thread, in ``submit``) and then checks
that its parent is still the driver that started it: a driver that died between
starting the worker and the ``prctl`` would otherwise never be noticed (the worker is
already an orphan then). Elsewhere the pools
are plain pools.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from concurrent.futures import ProcessPoolExecutor

__all__ = ["pool"]

#: prctl option: the signal sent to this process when its parent thread exits
#: (linux/prctl.h).
PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """Worker initializer: SIGKILL this worker when ``parent`` dies."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no prctl: fall back to the check below
            pass
    if os.getppid() != parent:  # the parent died before the prctl took effect
        os.kill(os.getpid(), signal.SIGKILL)


def pool(jobs: int) -> ProcessPoolExecutor:
    """A pool of ``jobs`` ``spawn`` workers (clean processes: no inherited threads or
    locks) that die with this process, even when it is killed with SIGKILL."""
    context = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=context,
        initializer=_die_with_parent,
        initargs=(os.getpid(),),
    )
