"""What the Transformer encoder and decoder blocks share: arguments, sublayers, checks.

`TransformerBlockBase` holds the constructor arguments, their validation and
config, and the sublayer factories (attention, layer norm, dropout, the
position-wise feed-forward network) of `TransformerEncoderBlock` and
`TransformerDecoderBlock`. `_MultiHeadAttention` here is Keras's layer with
keras_seq's mask rule (a query that may read nothing reads nothing, see
`keras_seq.layers.masks.zero_unreadable_queries`) and the two methods
incremental decoding needs.
"""

from __future__ import annotations

import keras
from keras import activations, ops

from keras_seq import argument_checks
from keras_seq.layers import masks


def check_block_input(layer, shape, what="inputs"):
    """Returns the feature size `d_model` of a `(batch, time, d_model)` shape, or raises."""
    if len(shape) != 3 or shape[-1] is None:
        raise ValueError(
            f"{type(layer).__name__} expects {what} of shape (batch, time, d_model) with a "
            f"known d_model, got shape {tuple(shape)}."
        )
    return int(shape[-1])


def check_heads(layer, d_model):
    """Returns `d_k = d_model / h`, or raises naming both when `h` does not divide `d_model`."""
    if d_model % layer.num_heads:
        raise ValueError(
            f"{type(layer).__name__}: the model dimension d_model={d_model} (the inputs' last "
            f"axis) is not divisible by num_heads={layer.num_heads}; each head gets "
            "d_k = d_model / num_heads features."
        )
    return d_model // layer.num_heads


def attention_weight_count(d_model):
    """Weights of one `MultiHeadAttention` with `d_k = d_model / h`: W_Q, W_K, W_V, W_O, biases."""
    return 4 * d_model * d_model + 4 * d_model


def feedforward_weight_count(d_model, ff_dim):
    """Weights of the position-wise feed-forward network."""
    return 2 * d_model * ff_dim + ff_dim + d_model


class _MultiHeadAttention(keras.layers.MultiHeadAttention):
    """`keras.layers.MultiHeadAttention` in which a query that may read no key reads nothing.

    Keras gives such a query (all its keys masked: a padded query step, or a
    decoder row whose encoder sequence is all padding) uniform weights over
    every key, so its output would depend on what the padding holds. Here its
    weights and its context are zero, as in every keras_seq attention layer
    (see `keras_seq.layers.masks`); everything else, weights included, is
    Keras's. The blocks build it in `build()`; it is never serialized alone.
    """

    def _compute_attention(
        self, query, key, value, attention_mask=None, training=None, return_attention_scores=False
    ):
        context, weights = super()._compute_attention(
            query, key, value, attention_mask, training, return_attention_scores
        )
        if attention_mask is None:
            return context, weights
        context = masks.zero_unreadable_queries(context, attention_mask)  # (batch, Tq, heads, d_k)
        if weights is not None:  # (batch, heads, Tq, Tv)
            weights = masks.zero_unreadable_queries(weights, attention_mask, query_axis=2)
        return context, weights

    # Incremental decoding (the decoder block's `decode_step`): the keys and values of a
    # sequence are projected once and attended to by one new query at a time.

    def project_key_value(self, value):
        """`K = value W_K`, `V = value W_V`: each `(batch, T, num_heads, key_dim)`."""
        value = ops.copy(value)  # without the caller's Keras mask, which these layers would drop
        return self._key_dense(value), self._value_dense(value)

    def attend(self, query, keys, values, attention_mask, return_attention_scores=False):
        """`MultiHead(query, ·, ·) W_O` over keys and values from `project_key_value`.

        Returns `(outputs, weights)`: `(batch, Tq, d_model)` and, with
        `return_attention_scores`, `(batch, num_heads, Tq, T)` (else None).
        """
        context, weights = self._compute_attention(
            self._query_dense(query),
            keys,
            values,
            attention_mask,
            False,
            return_attention_scores,
        )
        return self._output_dense(context), weights


class TransformerBlockBase(keras.layers.Layer):
    """Arguments, validation, config and sublayer factories shared by both blocks."""

    def __init__(
        self,
        num_heads,
        ff_dim,
        dropout=0.0,
        norm_first=False,
        activation="relu",
        layer_norm_epsilon=1e-5,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = argument_checks.positive_int(
            "num_heads", num_heads, argument_checks.MAX_UNITS
        )
        self.ff_dim = argument_checks.positive_int("ff_dim", ff_dim, argument_checks.MAX_UNITS)
        self.dropout = argument_checks.rate("dropout", dropout)
        self.norm_first = argument_checks.boolean("norm_first", norm_first)
        try:
            self.activation = activations.get(activation)
        except ValueError:
            raise argument_checks.invalid(
                "activation", "the name of a Keras activation or a callable", activation
            ) from None
        self.layer_norm_epsilon = argument_checks.positive_float(
            "layer_norm_epsilon", layer_norm_epsilon
        )
        self.seed = None if seed is None else argument_checks.seed("seed", seed)
        self.supports_masking = True

    # Sublayers, each named by its role ---------------------------------------

    def _attention(self, name, d_k):
        # Dropout here would act on the attention weights, which the paper does
        # not do and which would stop MultiHeadAttention using the fused kernel.
        return _MultiHeadAttention(
            num_heads=self.num_heads, key_dim=d_k, name=name, dtype=self.dtype_policy
        )

    def _layer_norm(self, name):
        return keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, name=name, dtype=self.dtype_policy
        )

    def _dropout(self, name, offset):
        seed = None if self.seed is None else self.seed + offset
        return keras.layers.Dropout(self.dropout, seed=seed, name=name, dtype=self.dtype_policy)

    def _multi_head(self, attention, query, value, mask, training, scores):
        """MultiHead(query, value, value) and, with `scores`, its weights (else None)."""
        # MultiHeadAttention clears the Keras masks of the tensors it is given.
        # Hand it copies, so that the caller's tensors keep theirs: an encoder
        # output that feeds several decoder blocks must stay masked for each.
        query_copy = ops.copy(query)
        value_copy = query_copy if value is query else ops.copy(value)
        outputs = attention(
            query_copy,
            value_copy,
            attention_mask=mask,
            return_attention_scores=scores,
            training=training,
        )
        return outputs if scores else (outputs, None)

    def _build_feedforward(self, d_model):
        self.feedforward_layer_norm = self._layer_norm("feedforward_layer_norm")
        self.feedforward_intermediate_dense = keras.layers.Dense(
            self.ff_dim,
            activation=self.activation,
            name="feedforward_intermediate_dense",
            dtype=self.dtype_policy,
        )
        self.feedforward_output_dense = keras.layers.Dense(
            d_model, name="feedforward_output_dense", dtype=self.dtype_policy
        )
        self.feedforward_dropout = self._dropout("feedforward_dropout", 2)
        shape = (None, None, d_model)
        self.feedforward_layer_norm.build(shape)
        self.feedforward_intermediate_dense.build(shape)
        self.feedforward_output_dense.build((None, None, self.ff_dim))

    def _feedforward_sublayer(self, x, training):
        """x + Dropout(FFN(x)), normalised before (pre-LN) or after (post-LN)."""
        residual = x
        if self.norm_first:
            x = self.feedforward_layer_norm(x)
        x = self.feedforward_intermediate_dense(x)  # activation(x W_1 + b_1)
        x = self.feedforward_output_dense(x)  # (...) W_2 + b_2
        x = self.feedforward_dropout(x, training=training)
        x = residual + x
        if not self.norm_first:
            x = self.feedforward_layer_norm(x)
        return x

    def get_config(self):
        return {
            **super().get_config(),
            "num_heads": self.num_heads,
            "ff_dim": self.ff_dim,
            "dropout": self.dropout,
            "norm_first": self.norm_first,
            "activation": activations.serialize(self.activation),
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "seed": self.seed,
        }
