"""Losses of models that predict a padded sequence of tokens.

A batch of target sentences is padded to one length with PAD (id 0). The
padding is not part of any sentence, so neither the loss nor the accuracy may
count it: a model that predicted PAD well would otherwise look better the
shorter its sentences were. `MaskedSparseCategoricalCrossentropy` (and the
metric `keras_seq.metrics.MaskedTokenAccuracy`) read the targets, and count
the positions where `y_true != pad_id` only:

    loss = Σ_{b,t: y_bt ≠ PAD} −log p_bt(y_bt) / #{b,t: y_bt ≠ PAD}
    accuracy = #{b,t: y_bt ≠ PAD, argmax p_bt = y_bt} / #{b,t: y_bt ≠ PAD}

Label smoothing (Szegedy et al. 2016; the Transformer trains with ε = 0.1)
replaces each one-hot target by a mixture with the uniform distribution over
the K outputs, `q = (1 − ε)·onehot(y) + ε/K`, and the loss of a position
becomes the cross-entropy against it:

    −Σ_k q_k log p_k = (1 − ε)·(−log p_y) + ε·(−(1/K) Σ_k log p_k)

Both losses here take `label_smoothing=ε` (`SmoothedSparseCategoricalCrossentropy`
for one class per example, as Keras' `SparseCategoricalCrossentropy` has no such
argument; `MaskedSparseCategoricalCrossentropy` for padded token sequences).
K is the whole last axis of the predictions: for a seq2seq model, the whole
target vocabulary, its reserved ids PAD, START, END and UNK included. That is
what fairseq's `label_smoothed_cross_entropy` does too (it spreads ε over the
whole dictionary and leaves PAD positions out by their target, as here); the
softmax spans those ids, so a uniform over fewer would not be a distribution
over what the model predicts. PAD positions stay out of the loss whatever ε.
The loss reported in training then includes the smoothing term (it is not the
log-likelihood of the targets any more, and cannot reach 0); accuracy, token
accuracy and BLEU are computed from the predictions and do not change with ε.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_seq import argument_checks

_REGISTER = keras.saving.register_keras_serializable(package="keras_seq")


def smoothed_sparse_crossentropy(y_true, y_pred, label_smoothing, from_logits=False):
    """Cross-entropy of each position against `(1 − ε)·onehot(y) + ε/K`, K = `y_pred.shape[-1]`.

        loss = (1 − ε)·(−log p_y) + ε·(−(1/K) Σ_k log p_k)

    Probabilities are normalised and clipped to [ε_Keras, 1 − ε_Keras] before
    the logarithm, as Keras' own cross-entropies do; logits go through
    `log_softmax`.

    Args:
        y_true: Integer targets, `(...)`, or `(..., 1)`.
        y_pred: Probabilities (or logits) `(..., K)`.
        label_smoothing: ε, a float in [0, 1).
        from_logits: Whether `y_pred` holds logits.

    Returns:
        The loss of every position, float32 `(...)`.
    """
    y_pred = ops.cast(y_pred, "float32")
    y_true = ops.cast(y_true, "int32")
    if len(y_true.shape) == len(y_pred.shape):
        y_true = ops.squeeze(y_true, axis=-1)
    if from_logits:
        log_p = ops.log_softmax(y_pred, axis=-1)
    else:
        epsilon = keras.config.epsilon()
        y_pred = y_pred / ops.sum(y_pred, axis=-1, keepdims=True)
        log_p = ops.log(ops.clip(y_pred, epsilon, 1.0 - epsilon))
    target = -ops.take_along_axis(log_p, ops.expand_dims(y_true, -1), axis=-1)[..., 0]
    uniform = -ops.mean(log_p, axis=-1)
    return (1.0 - label_smoothing) * target + label_smoothing * uniform


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
    batch counts once, whatever the lengths of the sentences around it. With
    `label_smoothing=ε`, `−log p_bt(y_bt)` becomes the cross-entropy against
    `(1 − ε)·onehot(y_bt) + ε/K` over the whole output vocabulary (K, reserved
    ids included; see the module's docstring).

    Args:
        pad_id: The target id that marks padding. Default 0
            (`keras_seq.tasks.Vocabulary.PAD`).
        from_logits: Whether the predictions are logits rather than
            probabilities. Default False.
        label_smoothing: ε, a float in [0, 1). Default 0 (none); the
            Transformer paper uses 0.1.
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
        - Szegedy et al., "Rethinking the Inception Architecture for Computer
          Vision", CVPR 2016, §7 (label smoothing); Vaswani et al., "Attention
          Is All You Need", NeurIPS 2017, §5.4 (ε_ls = 0.1).
    """

    def __init__(
        self,
        pad_id=0,
        from_logits=False,
        label_smoothing=0.0,
        name="masked_sparse_categorical_crossentropy",
    ):
        # Reduction "sum": `call` already divides by the number of real tokens.
        super().__init__(name=name, reduction="sum")
        self.pad_id = argument_checks.int_in_range("pad_id", pad_id, 0)
        self.from_logits = argument_checks.boolean("from_logits", from_logits)
        self.label_smoothing = argument_checks.rate("label_smoothing", label_smoothing)

    def __call__(self, y_true, y_pred, sample_weight=None):
        if sample_weight is not None:
            # One weight per sentence, `(batch,)`, weighs each of its tokens.
            sample_weight = ops.convert_to_tensor(sample_weight)
            while len(sample_weight.shape) < len(ops.shape(y_true)):
                sample_weight = ops.expand_dims(sample_weight, -1)
        return super().__call__(y_true, y_pred, sample_weight=sample_weight)

    def call(self, y_true, y_pred):
        y_true, mask = real_tokens(y_true, self.pad_id)
        if self.label_smoothing:
            losses = smoothed_sparse_crossentropy(
                y_true, y_pred, self.label_smoothing, from_logits=self.from_logits
            )  # (batch, T)
        else:
            losses = keras.losses.sparse_categorical_crossentropy(
                y_true, ops.cast(y_pred, "float32"), from_logits=self.from_logits
            )  # (batch, T)
        return losses * mask / ops.maximum(ops.sum(mask), 1.0)

    def get_config(self):
        return {
            "pad_id": self.pad_id,
            "from_logits": self.from_logits,
            "label_smoothing": self.label_smoothing,
            "name": self.name,
        }


@_REGISTER
class SmoothedSparseCategoricalCrossentropy(keras.losses.Loss):
    """Sparse categorical cross-entropy with label smoothing, for one class per example.

    For a target class `y` and predicted probabilities `p` over K classes:

        loss = −Σ_k q_k log p_k,   q = (1 − ε)·onehot(y) + ε/K
             = (1 − ε)·(−log p_y) + ε·(−(1/K) Σ_k log p_k)

    averaged over the batch (Keras' default reduction, sample weights
    included). With ε = 0 it is `keras.losses.SparseCategoricalCrossentropy`;
    Keras' sparse loss has no `label_smoothing` (only the one-hot
    `CategoricalCrossentropy` has), hence this class.

    Args:
        label_smoothing: ε, a float in [0, 1). Default 0.1 (the Transformer
            paper's).
        from_logits: Whether the predictions are logits rather than
            probabilities. Default False.
        name: Name of the loss.

    Example:

    >>> loss = SmoothedSparseCategoricalCrossentropy(label_smoothing=0.3)
    >>> probabilities = np.array([[0.2, 0.3, 0.5]], "float32")
    >>> round(float(loss(np.array([2]), probabilities)), 4)  # 0.7·(−log 0.5) + 0.1·(−Σ log p)
    0.8359

    References:
        - Szegedy et al., "Rethinking the Inception Architecture for Computer
          Vision", CVPR 2016, §7.
        - Müller, Kornblith & Hinton, "When Does Label Smoothing Help?",
          NeurIPS 2019 (it calibrates, and hurts distillation).
    """

    def __init__(
        self,
        label_smoothing=0.1,
        from_logits=False,
        name="smoothed_sparse_categorical_crossentropy",
    ):
        super().__init__(name=name)
        self.label_smoothing = argument_checks.rate("label_smoothing", label_smoothing)
        self.from_logits = argument_checks.boolean("from_logits", from_logits)

    def call(self, y_true, y_pred):
        return smoothed_sparse_crossentropy(
            y_true, y_pred, self.label_smoothing, from_logits=self.from_logits
        )

    def get_config(self):
        return {
            "label_smoothing": self.label_smoothing,
            "from_logits": self.from_logits,
            "name": self.name,
        }


def with_label_smoothing(loss, label_smoothing):
    """The loss `loss` with label smoothing ε, for the losses that have a one-hot target.

    - `"sparse_categorical_crossentropy"` (or Keras' class of it) →
      `SmoothedSparseCategoricalCrossentropy(ε)`;
    - `MaskedSparseCategoricalCrossentropy` → the same loss (same PAD id) with ε;
    - `"categorical_crossentropy"` (or Keras' class) → Keras'
      `CategoricalCrossentropy(label_smoothing=ε)`.

    With ε = 0 the loss is returned as given.

    Args:
        loss: A loss name or object, as `model.compile` takes it.
        label_smoothing: ε, a float in [0, 1).

    Returns:
        The loss to compile with.

    Raises:
        ValueError: for ε outside [0, 1), or a loss without a one-hot target
            to smooth (mean squared error, a custom loss), naming it.
    """
    label_smoothing = argument_checks.rate("label_smoothing", label_smoothing)
    if not label_smoothing:
        return loss
    if isinstance(loss, MaskedSparseCategoricalCrossentropy):
        config = {**loss.get_config(), "label_smoothing": label_smoothing}
        return MaskedSparseCategoricalCrossentropy(**config)
    if isinstance(loss, SmoothedSparseCategoricalCrossentropy):
        return SmoothedSparseCategoricalCrossentropy(label_smoothing, loss.from_logits, loss.name)
    if loss == "sparse_categorical_crossentropy":
        return SmoothedSparseCategoricalCrossentropy(label_smoothing)
    if isinstance(loss, keras.losses.SparseCategoricalCrossentropy):
        config = loss.get_config()
        if config.get("ignore_class") is not None:
            raise ValueError(
                "Received a SparseCategoricalCrossentropy with `ignore_class`; for label "
                "smoothing with padding use keras_seq.losses.MaskedSparseCategoricalCrossentropy."
            )
        return SmoothedSparseCategoricalCrossentropy(label_smoothing, config["from_logits"])
    if loss == "categorical_crossentropy":
        return keras.losses.CategoricalCrossentropy(label_smoothing=label_smoothing)
    if isinstance(loss, keras.losses.CategoricalCrossentropy):
        return keras.losses.CategoricalCrossentropy.from_config(
            {**loss.get_config(), "label_smoothing": label_smoothing}
        )
    raise ValueError(
        f"Received a loss with no one-hot target to smooth, {loss!r}: label smoothing applies to "
        "categorical cross-entropies (classes or tokens), not to regression or custom losses."
    )
