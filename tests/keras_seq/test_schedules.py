"""InverseSqrtWarmup: the Transformer's eq. 3 against NumPy, in a real optimiser, reloaded."""

import json
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from keras_seq.schedules import InverseSqrtWarmup

pytestmark = pytest.mark.backend_agnostic


def numpy_inverse_sqrt(step_num, d_model, warmup_steps, scale=1.0):
    """Vaswani et al. 2017, eq. 3, with the paper's step_num (counted from 1)."""
    step_num = np.asarray(step_num, dtype=np.float64)
    return scale * d_model**-0.5 * np.minimum(step_num**-0.5, step_num * warmup_steps**-1.5)


def test_the_schedule_is_equation_3_with_keras_iterations_read_from_one():
    schedule = InverseSqrtWarmup(d_model=512, warmup_steps=4000, scale=1.7)
    iterations = np.array([0, 1, 99, 3998, 3999, 4000, 10_000, 99_999])
    got = np.array([float(schedule(int(i))) for i in iterations])
    # float32 arithmetic against float64: agreement to float32 precision.
    np.testing.assert_allclose(got, numpy_inverse_sqrt(iterations + 1, 512, 4000, 1.7), rtol=1e-5)


def test_the_rate_rises_linearly_peaks_at_warmup_steps_and_then_falls():
    d_model, warmup = 64, 50
    schedule = InverseSqrtWarmup(d_model, warmup)
    rates = np.array([float(schedule(i)) for i in range(300)])
    # Iteration 49 is the paper's step 50 = warmup_steps: the peak, (d_model · warmup)^-0.5.
    assert int(np.argmax(rates)) == warmup - 1
    assert rates.max() == pytest.approx((d_model * warmup) ** -0.5, rel=1e-5)
    # Linear during warm-up: equal increments (float32 sums: absolute tolerance).
    np.testing.assert_allclose(np.diff(rates[:warmup]), rates[0], rtol=1e-4)
    # Then proportional to step^-0.5: rate · sqrt(step) is constant.
    tail = np.arange(warmup, 300)
    np.testing.assert_allclose(rates[tail] * np.sqrt(tail + 1), d_model**-0.5, rtol=1e-5)


def test_config_holds_exactly_the_constructor_arguments():
    schedule = InverseSqrtWarmup(32, warmup_steps=10, scale=2.0)
    assert schedule.get_config() == {"d_model": 32, "warmup_steps": 10, "scale": 2.0}
    again = InverseSqrtWarmup.from_config(schedule.get_config())
    assert float(again(7)) == pytest.approx(float(schedule(7)), rel=1e-7)
    assert keras.saving.get_registered_name(InverseSqrtWarmup) == "keras_seq>InverseSqrtWarmup"


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"d_model": 0}, "d_model"),
        ({"d_model": 8, "warmup_steps": 0}, "warmup_steps"),
        ({"d_model": 8, "warmup_steps": 2.5}, "warmup_steps"),
        ({"d_model": 8, "scale": -1.0}, "scale"),
        ({"d_model": True}, "d_model"),
    ],
)
def test_bad_arguments_are_refused_naming_the_argument_and_value(arguments, named):
    value = arguments[named]
    with pytest.raises(ValueError, match=rf"argument `{named}`.*got {value!r}"):
        InverseSqrtWarmup(**arguments)


def _linear_model(seed):
    """y = w·x, one weight, no bias: with MAE far below y, ∂loss/∂w = x exactly."""
    model = keras.Sequential(
        [
            keras.Input((1,)),
            keras.layers.Dense(
                1, use_bias=False, kernel_initializer=keras.initializers.RandomNormal(seed=seed)
            ),
        ]
    )
    return model


def test_sgd_applies_the_schedule_of_each_update_in_training():
    """Plain SGD moves w by lr(k)·g at update k, so w after N updates sums the first N rates."""
    d_model, warmup, updates = 16, 6, 11
    schedule = InverseSqrtWarmup(d_model, warmup, scale=3.0)
    model = _linear_model(seed=4)
    model.compile(keras.optimizers.SGD(learning_rate=schedule), loss="mean_absolute_error")
    w0 = float(keras.ops.convert_to_numpy(model.weights[0])[0, 0])
    x = np.ones((updates * 4, 1), "float32")
    y = np.full((updates * 4, 1), -1000.0, "float32")  # y_pred > y throughout: |y_pred − y|' = x
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    w = float(keras.ops.convert_to_numpy(model.weights[0])[0, 0])
    expected = w0 - numpy_inverse_sqrt(np.arange(1, updates + 1), d_model, warmup, 3.0).sum()
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == updates
    # Eleven float32 updates of size ~0.2: float32 rounding only.
    assert w == pytest.approx(expected, abs=1e-5)
    # The optimiser's current rate is the next update's: the paper's step updates + 1.
    assert float(keras.ops.convert_to_numpy(model.optimizer.learning_rate)) == pytest.approx(
        numpy_inverse_sqrt(updates + 1, d_model, warmup, 3.0), rel=1e-5
    )


@pytest.mark.large
def test_a_model_compiled_with_the_schedule_reloads_with_safe_mode_in_a_fresh_process(tmp_path):
    model = _linear_model(seed=5)
    model.compile(
        keras.optimizers.Adam(learning_rate=InverseSqrtWarmup(24, warmup_steps=3, scale=0.5)),
        loss="mean_squared_error",
    )
    x = np.linspace(-1, 1, 20, dtype="float32")[:, None]
    model.fit(x, 2 * x, batch_size=5, epochs=1, verbose=0)
    path = tmp_path / "scheduled.keras"
    model.save(path)
    script = textwrap.dedent(
        f"""
        import json, keras, keras_seq
        model = keras.saving.load_model({str(path)!r}, safe_mode=True)
        schedule = model.optimizer._learning_rate
        print(json.dumps({{
            "class": type(schedule).__name__,
            "config": schedule.get_config(),
            "iterations": int(keras.ops.convert_to_numpy(model.optimizer.iterations)),
            "rate": float(keras.ops.convert_to_numpy(model.optimizer.learning_rate)),
        }}))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded["class"] == "InverseSqrtWarmup"
    assert loaded["config"] == {"d_model": 24, "warmup_steps": 3, "scale": 0.5}
    assert loaded["iterations"] == 4  # the optimiser state travels with the model
    assert loaded["rate"] == pytest.approx(numpy_inverse_sqrt(5, 24, 3, 0.5), rel=1e-5)
