"""Learning test: a ConvLSTM predicts moving shapes; a frame LSTM of equal size does not.

`moving_shapes(1000)`: one shape of 4-6 pixels glides across 16×16 frames at
up to 2 pixels per frame and bounces off the walls; the model reads 5 frames
and predicts the next 5. Two trivial predictions set the bar: the last input
frame repeated (wrong wherever the shape moved), and the training split's
mean target frame (a faint blur, the best a model that ignores the motion
can do under squared error).

`conv_lstm_predictor` (two ConvLSTM2D layers of 16 maps, 3×3 kernels, 29,797
weights) and `frame_lstm_predictor` with `matched_units` (12 units, 29,552
weights) are trained alike: Adam, learning rate 1e-2, batch 32, 6 epochs,
per-pixel binary cross-entropy. Shi et al. (2015) made the point this shows:
with its convolutions, the ConvLSTM keeps the frame's spatial structure; the
flattening LSTM must spend its weights on every pixel of every frame, and at
this budget (a 12-unit bottleneck) it learns no more than the mean frame.

Measured on 2 shared CPU cores with TensorFlow 2.21 (validation MSE):

    seed   repeat last   mean frame   frame LSTM   ConvLSTM
    0      0.1070        0.0632       0.0633       0.0534
    1      0.1065        0.0650       0.0650       0.0531

The test runs seed 0 (seed 1, measured above, passes too): 17-18 s at a load average of 1.4,
26-31 s on a busier machine. Asserted, with a margin: the ConvLSTM's MSE is below 0.9 × the
better trivial prediction and 0.9 × the frame LSTM's.
"""

import time

import keras
import numpy as np
import pytest

from keras_seq.models import conv_lstm_predictor, frame_lstm_predictor, matched_units
from keras_seq.tasks import moving_shapes

pytestmark = pytest.mark.large

SEED = 0
EPOCHS = 6
BATCH_SIZE = 32
LEARNING_RATE = 1e-2
MARGIN = 0.9


def _validation_mse(model, task, seed):
    keras.utils.set_random_seed(seed)
    model.compile(
        keras.optimizers.Adam(LEARNING_RATE),
        loss="binary_crossentropy",
        metrics=["mean_squared_error"],
    )
    history = model.fit(
        task.x_train,
        task.y_train,
        validation_data=(task.x_val, task.y_val),
        epochs=EPOCHS,
        batch_size=BATCH_SIZE,
        verbose=0,
    )
    return history.history["val_mean_squared_error"][-1]


@pytest.mark.timeout(400)  # a hang guard: 30 s on two cores, over 120 s at a load of 8
def test_conv_lstm_beats_trivial_predictions_and_an_equal_size_frame_lstm():
    seed = SEED
    task = moving_shapes(1000, size=16, frames=10, predict=5, seed=seed)
    future = task.targets.length
    repeat_last = np.mean((np.repeat(task.x_val[:, -1:], future, axis=1) - task.y_val) ** 2)
    mean_frame = np.mean((task.y_train.mean(axis=0) - task.y_val) ** 2)
    trivial = min(repeat_last, mean_frame)

    start = time.perf_counter()
    keras.utils.set_random_seed(seed)
    conv = conv_lstm_predictor(task.inputs, future, filters=16, num_layers=2, kernel_size=3)
    budget = conv.count_params()
    keras.utils.set_random_seed(seed)
    units = matched_units(budget, task.inputs, future)
    flat = frame_lstm_predictor(task.inputs, future, units=units)
    assert abs(flat.count_params() - budget) / budget < 0.02  # equal sizes, within 2%

    conv_mse = _validation_mse(conv, task, seed)
    flat_mse = _validation_mse(flat, task, seed)
    seconds = time.perf_counter() - start
    print(
        f"seed {seed}: repeat last {repeat_last:.4f}, mean frame {mean_frame:.4f}, frame LSTM "
        f"{flat_mse:.4f} ({flat.count_params():,} weights), ConvLSTM {conv_mse:.4f} "
        f"({budget:,} weights), {seconds:.0f} s"
    )
    assert conv_mse < MARGIN * trivial
    assert conv_mse < MARGIN * flat_mse
