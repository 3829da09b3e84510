"""Ctrl-C that training cannot lose.

Python runs a signal handler in the main thread between two of its bytecodes,
wherever those are. When they belong to a weakref callback or a `__del__`
method, which the garbage collector runs at almost any allocation, the
`KeyboardInterrupt` the default handler raises is printed as "Exception
ignored in ..." and dropped; a library may also turn it into an error of its
own. Training then went on as if Ctrl-C had never been pressed: on a loaded
machine one `keras-seq sweep` in a few hundred trained every trial to the end.

`remembered()` (the command line wraps each command in it) installs a handler
that notes the press before raising, and the engine asks `pressed()` where a
lost interrupt would otherwise let work go on: after each training batch,
when a run fails or finishes, and before each trial of a sweep
(`raise_if_pressed()`). A note that outlives its `KeyboardInterrupt` raises
another; one that reached its caller stops the command, which then ends.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

_PRESSED = threading.Event()
_depth = 0  # how many `remembered()` blocks are open; the handler is installed by the first


def pressed() -> bool:
    """Whether Ctrl-C (SIGINT) was pressed inside the open `remembered()` block."""
    return _PRESSED.is_set()


def watching() -> bool:
    """Whether a `remembered()` block is open (the engine then checks after each batch)."""
    return _depth > 0


def raise_if_pressed() -> None:
    """Raise `KeyboardInterrupt` if Ctrl-C was pressed, even if its first one was lost."""
    if _PRESSED.is_set():
        raise KeyboardInterrupt


def _note_and_raise(signum, frame) -> None:
    _PRESSED.set()
    raise KeyboardInterrupt


@contextlib.contextmanager
def remembered() -> Iterator[None]:
    """Within the block, a Ctrl-C is noted before its `KeyboardInterrupt` is raised.

    It replaces only Python's own handler (`signal.default_int_handler`), and
    only in the main thread, the one that can install handlers: in the app's
    training threads, in its worker processes (which ignore SIGINT) and under
    a handler someone else installed, the block changes nothing. On exit
    Python's handler is put back and the note is cleared. Blocks nest.
    """
    global _depth
    if threading.current_thread() is not threading.main_thread() or (
        _depth == 0 and signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    if _depth == 0:
        _PRESSED.clear()
        signal.signal(signal.SIGINT, _note_and_raise)
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            _PRESSED.clear()


# The handlers a library may install in the main thread and leave behind.
KEPT_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGUSR1") if hasattr(signal, name)
)


@contextlib.contextmanager
def handlers_kept() -> Iterator[None]:
    """Put back the process's SIGINT, SIGTERM and SIGUSR1 handlers when the block ends.

    For libraries that install handlers in the main thread and leave them there:
    `ray.init` sets a SIGTERM handler that calls `sys.exit` (and Ray Tune's `Tuner.fit`,
    which sweeps used before, one for SIGINT and SIGUSR1 that logged and raised nothing:
    the next Ctrl-C in the process was swallowed, and `remembered()`, which replaces only
    Python's own handler, stood aside). Inside the block the library's handlers stay
    (Ray's SIGTERM handler ends a driver cleanly while it runs).
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread sets handlers: a library installs none from here
        return
    kept = {signum: signal.getsignal(signum) for signum in KEPT_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in kept.items():
            if handler is not None:  # None: set outside Python, which cannot set it back
                signal.signal(signum, handler)


__all__ = ["handlers_kept", "pressed", "raise_if_pressed", "remembered", "watching"]
