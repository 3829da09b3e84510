"""The shared layer checks that run in the test process, as tests of a layer test file's cases.

A layer test file keeps its cases in `SAVED_CASES` (name -> `LayerCase`); their saved files
are checked in tests/keras_seq/test_saved_layers.py, all in one fresh interpreter.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import pytest

from keras_seq.testing.layer_checks import (
    EAGER_CHECKS,
    LayerCase,
    check_jit_fit_step,
    check_layer,
)


def in_process_check_tests(
    cases: Mapping[str, LayerCase],
    marks: Mapping[str, Collection[pytest.MarkDecorator]] | None = None,
    large_eager: Collection[str] = (),
):
    """The two tests of `cases`, for a test module to name `test_...`.

    - The eager checks (registration, config round trip, mixed precision, masking): quick,
      but `large` for the names in `large_eager`.
    - One fit step with `jit_compile=True`: large, as compiling a training step takes 3-10 s
      of CPU with XLA and up to 46 s with `torch.compile`.

    `marks` gives the marks of both tests of a case, by name (`backend_agnostic`, ...).
    """
    marks = marks or {}

    def names(large=()):
        return [
            pytest.param(
                name, marks=[*marks.get(name, ()), *([pytest.mark.large] if name in large else [])]
            )
            for name in cases
        ]

    @pytest.mark.parametrize("name", names(large_eager))
    def test_layer_passes_eager_layer_checks(name, tmp_path):
        check_layer(cases[name], tmp_path, checks=EAGER_CHECKS)

    @pytest.mark.large
    @pytest.mark.parametrize("name", names())
    def test_layer_fits_a_jit_compiled_step(name):
        check_jit_fit_step(cases[name])

    return test_layer_passes_eager_layer_checks, test_layer_fits_a_jit_compiled_step
