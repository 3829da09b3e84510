"""The allocation check used by the "refused before allocating" tests can fail."""

import numpy as np
import pytest

from tests.allocation import allocates_little


def test_a_large_allocation_inside_the_block_fails_the_check():
    with pytest.raises(AssertionError, match="allocated"), allocates_little():
        block = np.ones(20_000_000)  # 160 MB through NumPy, which tracemalloc sees
        del block


def test_a_refusal_that_allocates_nothing_passes():
    with allocates_little(), pytest.raises(ValueError):
        raise ValueError("refused")
