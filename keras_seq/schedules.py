"""Learning-rate schedules that Keras does not ship: the Transformer's warm-up.

Keras has the others a sequence model is usually trained with, and they are
used as they are (`keras.optimizers.schedules`): `CosineDecay` (cosine decay,
optionally after a linear warm-up), `PiecewiseConstantDecay` and
`ExponentialDecay(staircase=True)` (step decay). What it lacks is the schedule
of "Attention Is All You Need", a linear warm-up followed by a decay with the
inverse square root of the step:

    lrate = d_model^-0.5 · min(step_num^-0.5, step_num · warmup_steps^-1.5)

The two terms meet at `step_num = warmup_steps`, where the rate peaks at
`(d_model · warmup_steps)^-0.5`.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_seq import argument_checks

_REGISTER = keras.saving.register_keras_serializable(package="keras_seq")


@_REGISTER
class InverseSqrtWarmup(keras.optimizers.schedules.LearningRateSchedule):
    """The Transformer's learning rate: a linear warm-up, then decay as 1/√step.

        lrate(step_num) = scale · d_model^-0.5 · min(step_num^-0.5, step_num · warmup_steps^-1.5)

    It rises linearly for the first `warmup_steps` steps, peaks at
    `scale · (d_model · warmup_steps)^-0.5` at `step_num = warmup_steps`, and
    then falls with the inverse square root of the step. The paper trains
    with `scale = 1`, `warmup_steps = 4000` and Adam(β1 = 0.9, β2 = 0.98,
    ε = 1e-9).

    Steps are counted from 1, as in the paper: Keras calls a schedule with
    `optimizer.iterations`, the number of updates already applied (0 for the
    first), and this schedule reads that as `step_num = iterations + 1`, so
    the first update has the rate of step 1 (never `0^-0.5`) and update
    number `warmup_steps` (iterations `warmup_steps - 1`) the peak.

    Args:
        d_model: The model's width (the Transformer's `d_model`), a positive
            integer.
        warmup_steps: Steps of the linear warm-up, a positive integer.
            Default 4000 (the paper's).
        scale: A positive factor on the whole schedule. Default 1.0 (the
            paper's).

    Call arguments:
        step: The optimiser's iteration count (a scalar, 0 for the first
            update).

    Returns:
        The learning rate, a float32 scalar.

    Example:

    >>> schedule = InverseSqrtWarmup(d_model=512, warmup_steps=4000)
    >>> round(float(schedule(3999)), 6)  # step_num 4000: the peak, (512 · 4000)^-0.5
    0.000699

    References:
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017, §5.3,
          equation (3).
    """

    def __init__(self, d_model, warmup_steps=4000, scale=1.0):
        super().__init__()
        self.d_model = argument_checks.positive_int("d_model", d_model)
        self.warmup_steps = argument_checks.positive_int("warmup_steps", warmup_steps)
        self.scale = argument_checks.positive_float("scale", scale)

    def __call__(self, step):
        step_num = ops.cast(step, "float32") + 1.0  # Keras counts updates from 0, the paper from 1
        warmup = float(self.warmup_steps)
        return (
            self.scale
            * self.d_model**-0.5
            * ops.minimum(ops.rsqrt(step_num), step_num * warmup**-1.5)
        )

    def get_config(self):
        return {"d_model": self.d_model, "warmup_steps": self.warmup_steps, "scale": self.scale}


__all__ = ["InverseSqrtWarmup"]
