"""A check that a refusal came before any large allocation, measured in bytes, not seconds."""

from __future__ import annotations

import contextlib
import resource
import sys
import tracemalloc
from collections.abc import Iterator

# Far below what any refused size would take (gigabytes to terabytes), far above what a check
# needs; the resident-size bound is wider, for a backend that starts up inside the block.
PYTHON_LIMIT_BYTES = 64 * 2**20
PROCESS_LIMIT_BYTES = 512 * 2**20


def _max_rss_bytes() -> int:
    # ru_maxrss is in kilobytes on Linux, bytes on macOS.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


@contextlib.contextmanager
def allocates_little() -> Iterator[None]:
    """Fail if the block's Python/NumPy allocations peak, or the process's peak RSS grows, by more.

    `tracemalloc` sees NumPy's arrays; the peak resident size sees what a backend allocates
    outside Python. Both are byte counts, so the check holds on a busy machine.
    """
    rss_before = _max_rss_bytes()
    tracemalloc.start()
    try:
        yield
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    grown = _max_rss_bytes() - rss_before
    assert peak < PYTHON_LIMIT_BYTES, f"allocated {peak:,} bytes through Python before refusing"
    assert grown < PROCESS_LIMIT_BYTES, f"the process grew by {grown:,} bytes before refusing"
