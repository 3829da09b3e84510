"""Losses of models that predict a padded sequence of tokens.

A batch of target sentences is padded to one length with PAD (id 0). The
padding is not part of any sentence, so neither the loss nor the accuracy may
count it: a model that predicted PAD well would otherwise look better the
shorter its sentences were. `MaskedSparseCategoricalCrossentropy` (and the
metric `keras_seq.metrics.MaskedTokenAccuracy`) read the targets, and count
the positions where `y_true != pad_id` only:

    loss = Σ_{b,t: y_bt ≠ PAD} −log p_bt(y_bt) / #{b,t: y_bt ≠ PAD}
    accuracy = #{b,t: y_bt ≠ PAD, argmax p_bt = y_bt} / #{b,t: y_bt ≠ PAD}
"""

from __future__ import annotations

import keras
from keras import ops

from keras_seq import validation

_REGISTER = keras.saving.register_keras_serializable(package="keras_seq")


def real_tokens(y_true, pad_id):
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
        y_true, mask = real_tokens(y_true, self.pad_id)
        losses = keras.losses.sparse_categorical_crossentropy(
            y_true, ops.cast(y_pred, "float32"), from_logits=self.from_logits
        )  # (batch, T)
        return losses * mask / ops.maximum(ops.sum(mask), 1.0)

    def get_config(self):
        return {"pad_id": self.pad_id, "from_logits": self.from_logits, "name": self.name}
