"""The shared layer checks that run in the test process, as tests of a layer test file's cases.

A layer test file keeps its cases in `SAVED_CASES` (name -> `LayerCase`); their saved files
are checked in tests/keras_seq/test_saved_layers.py, all in one fresh interpreter.
"""

from __future__ import annotations

import re
import traceback
import warnings
from collections.abc import Collection, Mapping

import keras
import numpy as np
import pytest

from keras_seq.testing.layer_checks import (
    EAGER_CHECKS,
    LayerCase,
    check_jit_fit_step,
    check_layer,
)


def _as_list(outputs) -> list:
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


def check_jit_fit_step_of_all(cases: Mapping[str, LayerCase]) -> None:
    """`check_jit_fit_step` of every case at once: one model holds each case's layer.

    Each layer gets its own inputs (8 rows at its first time length, as `check_jit_fit_step`
    feeds it) and its outputs are outputs of the model, each with a mean squared error to a
    random target. One `fit` step with `jit_compile=True` compiles the training step of every
    layer together (once, where `check_jit_fit_step` compiles once per case: 2-5 s each with
    XLA, up to 46 s with `torch.compile`); the loss must be finite, and each layer that has
    weights must have changed one (a layer's weights get gradients from its own outputs only).
    Should the joint step fail, each case is then run alone, and the error names those that
    fail alone.
    """
    inputs, arrays, outputs, layers = {}, {}, [], {}
    for index, (name, case) in enumerate(cases.items()):
        layer = layers[name] = case.make()
        case_inputs = {}
        for spec in case.input_specs:
            key = f"case{index}_{re.sub(r'[^A-Za-z0-9_]', '_', name)}_{spec.name}"
            time = (None,) if spec.time_axis else ()
            case_inputs[spec.name] = inputs[key] = keras.Input(time + spec.step_shape, name=key)
            arrays[key] = case.sample(8, 0)[spec.name]
        outputs.extend(_as_list(case.call(layer, case_inputs)))
    model = keras.Model(inputs, outputs)
    rng = np.random.default_rng(1)
    targets = [rng.normal(size=o.shape) for o in _as_list(model.predict_on_batch(arrays))]
    before = {name: [np.copy(w) for w in layer.get_weights()] for name, layer in layers.items()}
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="mse", jit_compile=True)
    try:
        with warnings.catch_warnings():
            if not model.trainable_weights:
                warnings.filterwarnings("ignore", "The model does not have any trainable weights")
            history = model.fit(arrays, targets, epochs=1, verbose=0)
    except Exception:
        joint = traceback.format_exc()
        alone = {}
        for name, case in cases.items():
            try:
                check_jit_fit_step(case)
            except Exception:  # each case's failure is reported
                alone[name] = traceback.format_exc()
        raise AssertionError(
            f"The jit-compiled fit step of every case failed; alone, "
            f"{', '.join(alone) or 'none'} failed.\n"
            + "".join(f"\n{name}:\n{error}" for name, error in alone.items())
            + f"\nThe joint step:\n{joint}"
        ) from None
    assert np.isfinite(history.history["loss"][-1])  # a sum of squares: each term finite
    unchanged = [
        name
        for name, layer in layers.items()
        if before[name]
        and not any(
            not np.allclose(b, a) for b, a in zip(before[name], layer.get_weights(), strict=True)
        )
    ]
    assert not unchanged, f"a fit step left every weight unchanged of {', '.join(unchanged)}"


def in_process_check_tests(
    cases: Mapping[str, LayerCase],
    marks: Mapping[str, Collection[pytest.MarkDecorator]] | None = None,
    large_eager: Collection[str] = (),
):
    """The two tests of `cases`, for a test module to name `test_...`.

    - The eager checks (registration, config round trip, mixed precision, masking), one test
      per case: quick, but `large` for the names in `large_eager`.
    - One fit step with `jit_compile=True` of one model that holds every case's layer
      (`check_jit_fit_step_of_all`): large, as compiling a training step takes seconds with
      XLA and tens of seconds with `torch.compile`. The cases with the same marks share a
      model: one test per set of marks, named by its cases (`all` when every case has the
      same marks).

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

    groups: dict[tuple[str, ...], list[str]] = {}
    for name in cases:
        key = tuple(sorted(repr(mark.mark) for mark in marks.get(name, ())))
        groups.setdefault(key, []).append(name)
    group_params = [
        pytest.param(
            tuple(group),
            marks=list(marks.get(group[0], ())),
            id="all" if len(groups) == 1 else "+".join(group),
        )
        for group in groups.values()
    ]

    @pytest.mark.parametrize("name", names(large_eager))
    def test_layer_passes_eager_layer_checks(name, tmp_path):
        check_layer(cases[name], tmp_path, checks=EAGER_CHECKS)

    @pytest.mark.large
    @pytest.mark.parametrize("group", group_params)
    def test_every_layer_fits_one_jit_compiled_step(group):
        check_jit_fit_step_of_all({name: cases[name] for name in group})

    return test_layer_passes_eager_layer_checks, test_every_layer_fits_one_jit_compiled_step
