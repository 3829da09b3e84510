"""One Transformer encoder block (Vaswani et al. 2017), post-LN or pre-LN."""

from __future__ import annotations

import keras

from keras_seq import argument_checks
from keras_seq.layers import masks
from keras_seq.layers.transformer_block import (
    TransformerBlockBase,
    attention_weight_count,
    check_block_input,
    check_heads,
    feedforward_weight_count,
)

_REGISTER = keras.saving.register_keras_serializable(package="keras_seq")


@_REGISTER
class TransformerEncoderBlock(TransformerBlockBase):
    """Multi-head self-attention and a position-wise feed-forward network.

    Each of the two sublayers is wrapped in a residual connection and layer
    normalisation. With `norm_first=False` (the paper, "post-LN"):

        x = LayerNorm(x + Dropout(MultiHead(x, x, x)))
        y = LayerNorm(x + Dropout(FFN(x)))

    and with `norm_first=True` ("pre-LN": the Annotated Transformer, ViT,
    GPT-2), the norm is first, as opposed to last:

        x = x + Dropout(MultiHead(LayerNorm(x)))
        y = x + Dropout(FFN(LayerNorm(x)))

    where, with `h = num_heads` and `d_k = d_model / h`,

        MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O
        head_i = softmax((Q W_i^Q)(K W_i^K)ᵀ / √d_k) (V W_i^V)
        FFN(x) = activation(x W_1 + b_1) W_2 + b_2

    Pre-LN keeps gradients well scaled at initialisation and trains without
    learning-rate warm-up (Xiong et al. 2020); a stack of pre-LN blocks needs
    one `LayerNormalization` after its last block, as in the Annotated
    Transformer and ViT. Without positional information the block is
    permutation-equivariant: add `SinusoidalPositionalEncoding` or
    `LearnedPositionalEmbedding` before it.

    Attention is `keras.layers.MultiHeadAttention`, which runs the backend's
    fused kernel (`keras.ops.dot_product_attention`) unless attention scores
    are requested. `dropout` is the paper's residual dropout, applied to the
    output of each sublayer before the residual addition; unlike keras-hub
    and the Annotated Transformer it does not drop attention weights (which
    the paper does not do, and which would rule out the fused kernel).

    Padding: a Keras mask (e.g. from `Embedding(mask_zero=True)`) or `mask`
    stops every query from attending to padded steps, via
    `keras_seq.layers.masks.attention_mask`; outputs at real steps do not
    depend on what the padding holds, and the mask is passed on. As in every
    keras_seq attention layer, a padded query step reads nothing: its
    attention weights and context vector are zero (Keras's own layer would
    give it uniform weights over all steps, padding included).

    Sublayers, named by role: `self_attention`, `self_attention_layer_norm`,
    `self_attention_dropout`, `feedforward_intermediate_dense`,
    `feedforward_output_dense`, `feedforward_layer_norm`,
    `feedforward_dropout`.

    Args:
        num_heads: `h`, the number of attention heads; must divide the
            inputs' feature size `d_model`.
        ff_dim: The inner size `d_ff` of the feed-forward network (2048 for
            `d_model = 512` in the paper).
        dropout: Residual dropout rate, `P_drop` (0.1 in the paper).
        norm_first: False for the paper's post-LN order, True for pre-LN.
        activation: The feed-forward activation: `"relu"` in the paper,
            `"gelu"` in BERT and ViT.
        layer_norm_epsilon: The epsilon of both layer normalisations.
        seed: Optional seed of the dropout layers.

    Call arguments:
        inputs: `(batch, time, d_model)`.
        mask: Optional boolean `(batch, time)`, True at real steps; defaults
            to the Keras mask of `inputs`.
        training: Whether dropout is applied.
        return_attention_scores: Also return the attention weights.

    Returns:
        `(batch, time, d_model)`; with `return_attention_scores=True`, also
        the weights `(batch, num_heads, time, time)`.

    Example:

    >>> x = np.random.rand(2, 5, 16).astype("float32")
    >>> tuple(TransformerEncoderBlock(num_heads=4, ff_dim=32)(x).shape)
    (2, 5, 16)
    >>> y, w = TransformerEncoderBlock(4, 32, norm_first=True)(x, return_attention_scores=True)
    >>> tuple(w.shape)
    (2, 4, 5, 5)

    References:
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017,
          Sections 3.1-3.3 and 5.4.
        - Xiong et al., "On Layer Normalization in the Transformer
          Architecture", ICML 2020.
        - Dosovitskiy et al., "An Image is Worth 16x16 Words", ICLR 2021
          (arXiv 2020), Equations 2-3 (pre-LN).
    """

    def build(self, input_shape):
        d_model = check_block_input(self, input_shape)
        d_k = check_heads(self, d_model)
        argument_checks.parameter_budget(
            self.name,
            attention_weight_count(d_model)
            + feedforward_weight_count(d_model, self.ff_dim)
            + 4 * d_model,  # two layer norms
        )
        self.self_attention = self._attention("self_attention", d_k)
        self.self_attention_layer_norm = self._layer_norm("self_attention_layer_norm")
        self.self_attention_dropout = self._dropout("self_attention_dropout", 1)
        shape = (None, None, d_model)
        self.self_attention.build(shape, shape)
        self.self_attention_layer_norm.build(shape)
        self._build_feedforward(d_model)
        self.built = True

    def call(self, inputs, mask=None, training=None, return_attention_scores=False):
        attention_mask = masks.attention_mask(query_mask=mask, value_mask=mask)

        # Self-attention sublayer.
        residual = inputs
        x = self.self_attention_layer_norm(inputs) if self.norm_first else inputs
        x, scores = self._multi_head(
            self.self_attention, x, x, attention_mask, training, return_attention_scores
        )
        x = self.self_attention_dropout(x, training=training)
        x = residual + x
        if not self.norm_first:
            x = self.self_attention_layer_norm(x)

        # Feed-forward sublayer.
        x = self._feedforward_sublayer(x, training)
        return (x, scores) if return_attention_scores else x

    def compute_output_spec(self, inputs, mask=None, training=None, return_attention_scores=False):
        # From the shapes, without tracing `call` (which a symbolic model would do
        # for every block it is given; the graph builder checks shapes on each edit).
        batch, time, d_model = inputs.shape
        dtype = self.compute_dtype
        outputs = keras.KerasTensor((batch, time, d_model), dtype=dtype)
        if not return_attention_scores:
            return outputs
        return outputs, keras.KerasTensor((batch, self.num_heads, time, time), dtype=dtype)
