"""The token accuracy of a model that predicts a padded sequence of tokens, as a Keras metric.

Padding (PAD, id 0) is not part of any sentence, so it is not counted:

    accuracy = #{b,t: y_bt ≠ PAD, argmax p_bt = y_bt} / #{b,t: y_bt ≠ PAD}

`keras_seq.metrics.token_accuracy` computes the same on NumPy arrays after
decoding; this one accumulates it during `fit` and `evaluate`.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_seq import argument_checks
from keras_seq.losses import real_tokens

_REGISTER = keras.saving.register_keras_serializable(package="keras_seq")


@_REGISTER
class MaskedTokenAccuracy(keras.metrics.Metric):
    """The fraction of real (non-PAD) target tokens whose most probable prediction is right.

        accuracy = Σ m_bt [argmax_v p_btv = y_bt] / Σ m_bt,   m_bt = [y_bt ≠ pad_id]

    accumulated over every batch since the last reset (so the epoch's value
    weighs each token once, not each batch). Sample weights multiply `m`.

    Args:
        pad_id: The target id that marks padding. Default 0.
        name: Name of the metric. Default `"token_accuracy"`.
        dtype: Dtype of the accumulators.

    Example:

    >>> accuracy = MaskedTokenAccuracy()
    >>> probabilities = np.array([[[0.1, 0.2, 0.7], [0.8, 0.1, 0.1]]], "float32")
    >>> accuracy.update_state(np.array([[2, 0]]), probabilities)
    >>> float(accuracy.result())  # the padded position does not count
    1.0

    References:
        - Luong, Pham & Manning, "Effective Approaches to Attention-based
          Neural Machine Translation", EMNLP 2015 (per-token evaluation of
          translation models).
    """

    def __init__(self, pad_id=0, name="token_accuracy", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.pad_id = argument_checks.int_in_range("pad_id", pad_id, 0)
        self.correct = self.add_variable(shape=(), initializer="zeros", name="correct")
        self.total = self.add_variable(shape=(), initializer="zeros", name="total")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, mask = real_tokens(y_true, self.pad_id)
        if sample_weight is not None:
            weight = ops.cast(sample_weight, "float32")
            while len(weight.shape) < len(mask.shape):
                weight = ops.expand_dims(weight, -1)
            mask = mask * weight
        predicted = ops.cast(ops.argmax(y_pred, axis=-1), "int32")
        hits = ops.cast(ops.equal(predicted, y_true), "float32") * mask
        self.correct.assign_add(ops.cast(ops.sum(hits), self.dtype))
        self.total.assign_add(ops.cast(ops.sum(mask), self.dtype))

    def result(self):
        return ops.divide_no_nan(self.correct, self.total)

    def reset_state(self):
        self.correct.assign(0.0)
        self.total.assign(0.0)

    def get_config(self):
        return {"pad_id": self.pad_id, "name": self.name, "dtype": self.dtype}
