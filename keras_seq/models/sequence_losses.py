"""The loss and the metric of a model that predicts a padded sequence of tokens.

A batch of target sentences is padded to one length with PAD (id 0). The
padding is not part of any sentence, so neither the loss nor the accuracy may
count it: a model that predicted PAD well would otherwise look better the
shorter its sentences were. Both objects here read the targets, and count
the positions where `y_true != pad_id` only:

    loss = Σ_{b,t: y_bt ≠ PAD} −log p_bt(y_bt) / #{b,t: y_bt ≠ PAD}
    accuracy = #{b,t: y_bt ≠ PAD, argmax p_bt = y_bt} / #{b,t: y_bt ≠ PAD}
"""

from __future__ import annotations

import keras
from keras import ops

from keras_seq import validation

_REGISTER = keras.saving.register_keras_serializable(package="keras_seq")


def _real_tokens(y_true, pad_id):
    """The targets as int32 and a float mask of the real (non-PAD) positions."""
    y_true = ops.cast(y_true, "int32")
    return y_true, ops.cast(ops.not_equal(y_true, pad_id), "float32")


@_REGISTER
class MaskedSparseCategoricalCrossentropy(keras.losses.Loss):
    """Sparse categorical cross-entropy averaged over the real tokens of a padded batch.

    For targets `y` `(batch, T)` and predicted probabilities `p`
    `(batch, T, vocab)`:

        loss = Σ_{b,t} w_b m_bt (−log p_bt(y_bt)) / Σ_{b,t} m_bt,   m_bt = [y_bt ≠ pad_id]

    where `w_b` is the sample weight (1 if none): each real token of the
    batch counts once, whatever the lengths of the sentences around it.

    Args:
        pad_id: The target id that marks padding. Default 0
            (`keras_seq.tasks.Vocabulary.PAD`).
        from_logits: Whether the predictions are logits rather than
            probabilities. Default False.
        name: Name of the loss.

    Example:

    >>> loss = MaskedSparseCategoricalCrossentropy()
    >>> probabilities = np.array([[[0.2, 0.3, 0.5], [0.2, 0.3, 0.5]]], "float32")
    >>> round(float(loss(np.array([[2, 0]]), probabilities)), 4)  # only −log 0.5
    0.6931

    References:
        - Sutskever, Vinyals & Le, "Sequence to Sequence Learning with Neural
          Networks", NeurIPS 2014 (the log-probability of the target
          sentence, maximised over the training set).
    """

    def __init__(self, pad_id=0, from_logits=False, name="masked_sparse_categorical_crossentropy"):
        # Reduction "sum": `call` already divides by the number of real tokens.
        super().__init__(name=name, reduction="sum")
        self.pad_id = validation.int_in_range("pad_id", pad_id, 0)
        self.from_logits = validation.boolean("from_logits", from_logits)

    def __call__(self, y_true, y_pred, sample_weight=None):
        if sample_weight is not None:
            # One weight per sentence, `(batch,)`, weighs each of its tokens.
            sample_weight = ops.convert_to_tensor(sample_weight)
            while len(sample_weight.shape) < len(ops.shape(y_true)):
                sample_weight = ops.expand_dims(sample_weight, -1)
        return super().__call__(y_true, y_pred, sample_weight=sample_weight)

    def call(self, y_true, y_pred):
        y_true, mask = _real_tokens(y_true, self.pad_id)
        losses = keras.losses.sparse_categorical_crossentropy(
            y_true, ops.cast(y_pred, "float32"), from_logits=self.from_logits
        )  # (batch, T)
        return losses * mask / ops.maximum(ops.sum(mask), 1.0)

    def get_config(self):
        return {"pad_id": self.pad_id, "from_logits": self.from_logits, "name": self.name}


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
        self.pad_id = validation.int_in_range("pad_id", pad_id, 0)
        self.correct = self.add_variable(shape=(), initializer="zeros", name="correct")
        self.total = self.add_variable(shape=(), initializer="zeros", name="total")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, mask = _real_tokens(y_true, self.pad_id)
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
