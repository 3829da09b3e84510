"""`compile_for`: the optimizer, loss and metric a task's targets call for.

classification ─▶ sparse categorical cross-entropy, accuracy
regression     ─▶ mean squared error
sequence       ─▶ MaskedSparseCategoricalCrossentropy, MaskedTokenAccuracy (PAD left out)
frames         ─▶ binary cross-entropy per pixel, mean squared error

`label_smoothing=ε` smooths the classification and sequence losses
(`keras_seq.losses.with_label_smoothing`); `learning_rate` may be a
`keras.optimizers.schedules.LearningRateSchedule` (`keras_seq.schedules`).
"""

from __future__ import annotations

import keras

from keras_seq import argument_checks
from keras_seq.losses import MaskedSparseCategoricalCrossentropy, with_label_smoothing
from keras_seq.metrics.masked_token_accuracy import MaskedTokenAccuracy
from keras_seq.tasks.base import TargetSpec


def compile_for(model, targets, *, learning_rate=1e-2, clipnorm=1.0, label_smoothing=0.0):
    """Compiles `model` with Adam and the loss and metric that `targets` calls for.

    Classification: sparse categorical cross-entropy, metric `"accuracy"`.
    Regression: mean squared error as the loss (reported as `loss` and
    `val_loss`), no extra metric.
    Sequence (a `Seq2Seq`'s token targets): `MaskedSparseCategoricalCrossentropy`
    and `MaskedTokenAccuracy` (`token_accuracy`), which leave PAD out.
    Frames (`conv_lstm_predictor`'s future frames): binary cross-entropy per
    pixel (Shi et al. 2015 on Moving MNIST), metric `"mean_squared_error"`.

    Args:
        model: A model from `recurrent_model` (or `seq2seq` for sequence
            targets).
        targets: The task's `TargetSpec`.
        learning_rate: Adam's learning rate: a positive number, or a
            `keras.optimizers.schedules.LearningRateSchedule` (e.g.
            `keras_seq.schedules.InverseSqrtWarmup`). Default 1e-2.
        clipnorm: Clip each gradient to this norm. Default 1.0; None turns
            clipping off.
        label_smoothing: ε in [0, 1) for the classification and sequence
            losses: targets `(1 − ε)·onehot + ε/K`. Default 0. Not for
            regression.

    Returns:
        `model`, compiled.
    """
    if not isinstance(targets, TargetSpec):
        raise ValueError(
            "Received an invalid value for argument `targets`, expected a TargetSpec, "
            f"got {targets!r}."
        )
    if targets.kind not in ("sequence", "frames"):
        check_one_vector_target(targets)
    if not isinstance(learning_rate, keras.optimizers.schedules.LearningRateSchedule):
        learning_rate = argument_checks.positive_float("learning_rate", learning_rate)
    if clipnorm is not None:
        clipnorm = argument_checks.positive_float("clipnorm", clipnorm)
    label_smoothing = argument_checks.rate("label_smoothing", label_smoothing)
    if label_smoothing and targets.kind in ("regression", "frames"):
        raise ValueError(
            "Received an invalid value for argument `label_smoothing`, expected 0 for "
            f"{targets.kind} targets (there is no one-hot target to smooth), got "
            f"{label_smoothing!r}."
        )
    optimizer = keras.optimizers.Adam(learning_rate=learning_rate, clipnorm=clipnorm)
    if targets.kind == "classification":
        loss = with_label_smoothing("sparse_categorical_crossentropy", label_smoothing)
        model.compile(optimizer, loss=loss, metrics=["accuracy"])
    elif targets.kind == "sequence":
        loss = MaskedSparseCategoricalCrossentropy(label_smoothing=label_smoothing)
        model.compile(optimizer, loss=loss, metrics=[MaskedTokenAccuracy()])
    elif targets.kind == "frames":
        model.compile(optimizer, loss="binary_crossentropy", metrics=["mean_squared_error"])
    else:
        model.compile(optimizer, loss="mean_squared_error")
    return model


def check_one_vector_target(targets):
    """These helpers predict one class or vector per sequence; pointer targets need more."""
    if targets.kind not in ("classification", "regression"):
        raise ValueError(
            f"Received a `targets` of kind {targets.kind!r}; recurrent_model and compile_for "
            "predict one class or vector per sequence ('classification' or 'regression'). "
            "For pointer targets use keras_seq.models.pointer_network; for sequence targets "
            "keras_seq.models.seq2seq (which compile_for compiles)."
        )
