"""Keep TensorFlow's native start-up lines off the terminal unless asked for.

Importing TensorFlow prints, from its C++ runtime and before any Python code
can configure it, lines such as::

    WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
    I0000 00:00:1796123075.100514    5619 port.cc:153] oneDNN custom operations are on. ...
    I0000 00:00:1796123075.142907    5619 cpu_feature_guard.cc:227] This TensorFlow binary ...

`TF_CPP_MIN_LOG_LEVEL` silences the later ones but not those written while the
shared libraries load, so every `keras-seq` command, `validate` included, used
to open with them. `quiet_tensorflow_startup()` installs an import hook: while
the `tensorflow` package itself is imported (by whoever imports it first), the
process's file descriptor 2 goes to a temporary file; afterwards everything
captured is written back to the real stderr except TensorFlow's informational
start-up lines (`I…`/`W…` glog lines, the absl notice and the CPU-instructions
note). Errors (`E…` lines) and anything else written meanwhile, by another
thread too, still reach the terminal, and if the import fails everything is
replayed. It also sets `TF_CPP_MIN_LOG_LEVEL=2` (errors only) unless the user
set it.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator

# glog's informational and warning lines: "I0000 00:00:1796123075.100514    5619 port.cc:153] ...".
_GLOG_NOTICE = re.compile(r"^[IW]\d{4} \d\d:\d\d:[\d.]+\s+\d+ [\w./-]+:\d+\] ")
_STARTUP_NOTES = (
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "To enable the following instructions:",
)
_PACKAGE = "tensorflow"
# Set by `quiet_tensorflow_startup()`, so the app's training processes are quiet like the app.
QUIET_VARIABLE = "KERAS_SEQ_QUIET_TENSORFLOW"


def is_startup_notice(line: str) -> bool:
    """Tell whether `line` is one of TensorFlow's informational start-up lines."""
    return bool(_GLOG_NOTICE.match(line)) or line.startswith(_STARTUP_NOTES)


def without_startup_notices(text: str) -> str:
    """`text` with TensorFlow's informational start-up lines removed, all else kept."""
    kept = [line for line in text.splitlines(keepends=True) if not is_startup_notice(line)]
    return "".join(kept)


@contextlib.contextmanager
def filtered_native_stderr() -> Iterator[None]:
    """Send file descriptor 2 to a temporary file; write it back filtered on exit.

    On an exception everything captured is written back unfiltered, so a
    failing import shows all it printed.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    failed = True
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
            failed = False
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            text = captured.read().decode("utf-8", errors="replace")
            text = text if failed else without_startup_notices(text)
            if text:
                sys.stderr.write(text)
                sys.stderr.flush()


class _QuietLoader(importlib.abc.Loader):
    """Wrap the `tensorflow` package's loader so that its import runs filtered."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        with filtered_native_stderr():
            self._loader.exec_module(module)


class _QuietFinder(importlib.abc.MetaPathFinder):
    """Find `tensorflow` with the other finders, then hand out the wrapping loader."""

    def __init__(self) -> None:
        self._busy = threading.local()

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _PACKAGE or getattr(self._busy, "active", False):
            return None
        self._busy.active = True
        try:
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        finally:
            self._busy.active = False
        if spec is None or spec.loader is None:
            return None
        spec.loader = _QuietLoader(spec.loader)
        return spec


def quiet_tensorflow_startup() -> None:
    """Hide TensorFlow's native start-up lines for the rest of this process.

    Does nothing if TensorFlow is already imported or the hook is installed;
    call it before the first Keras import (the CLI does, unless `--verbose`).
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ[QUIET_VARIABLE] = "1"
    if _PACKAGE in sys.modules or any(isinstance(f, _QuietFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _QuietFinder())


def quiet_if_inherited() -> None:
    """In a child process: be as quiet as the parent that started it asked to be."""
    if os.environ.get(QUIET_VARIABLE) == "1":
        quiet_tensorflow_startup()
