"""`AssembledTransformerSeq2Seq`: any Keras encoder model, and the Transformer's decoder stack.

    source ─▶ encoder (any keras.Model) ─▶ "memory" (batch, S, d_enc) ──────────────┐
    target ─▶ shift right ─▶ embedding·√d_model + positions ─▶ decoder block × N ◀──┘ ─▶ softmax

The decoder half of `keras_seq.models.TransformerSeq2Seq` (Vaswani et al.
2017) over an encoder the user assembles (the Build tab's graph, or any
functional model of one's own): the encoder maps `(batch, S)` source ids to a
dict with `"memory"`, the states every decoder block's cross-attention reads.
Everything after the encoder is `TransformerSeq2Seq`'s: the target embedding
scaled by `√d_model`, the positions, the causal decoder blocks (with the final
`LayerNormalization` when `norm_first`), teacher forcing, and `encode` /
`decode_step` with each block's key/value cache, so greedy decoding, beam
search, sampling, `Translator` and its SavedModel work unchanged.

The source mask is `source != PAD`, as for every `Seq2Seq`, whatever masks the
encoder computes. `memory` may be wider or narrower than `embedding_dim`: the
cross-attention projects its keys and values from `d_enc` features.
"""

from __future__ import annotations

import keras

from keras_seq import argument_checks
from keras_seq.models.own_encoder import OwnEncoder
from keras_seq.models.transformer_seq2seq import TransformerSeq2Seq

_REGISTER = keras.saving.register_keras_serializable(package="keras_seq")


@_REGISTER
class AssembledTransformerSeq2Seq(OwnEncoder, TransformerSeq2Seq):
    """`num_layers` Transformer decoder blocks over the memory of an encoder of one's own.

        p(y_t | y_{<t}, x) = softmax(W_o o_t + b_o)

    with `o_t` the last decoder block's output at step `t`, its cross-attention
    reading `memory = encoder(x)["memory"]` (`TransformerDecoderBlock`'s
    equations).

    Args:
        source_vocab_size: Source token ids, the 4 reserved ids included (the
            encoder embeds them itself).
        target_vocab_size: Target token ids, the 4 reserved ids included.
        encoder: A `keras.Model` from `(batch, S)` int ids to a dict with
            `"memory"` `(batch, S, d_enc)`.
        num_layers: Decoder blocks. Default 1.
        embedding_dim: `d_model` of the decoder: the width of the target
            embeddings and of every decoder block. Default 64.
        num_heads: Attention heads; must divide `embedding_dim`. Default 4.
        ff_dim: Inner size of the feed-forward networks. Default 128.
        norm_first: Pre-LN blocks, and a final `LayerNormalization`. Default
            False (post-LN).
        max_length: The longest target `decode_step` can produce, and, with
            learned positions, the longest target. Default 128.
        positions: `"sinusoidal"` (default) or `"learned"`.
        reverse_source: Reverse each source within its length before
            encoding (Sutskever et al. 2014). Default False.
        dropout: Dropout rate after the target positions and inside every
            decoder block. Default 0.
        **kwargs: Model keywords (`name`, `trainable`, `dtype`), see `Seq2Seq`.

    Call arguments, returns, `encode` and `decode_step`: as `TransformerSeq2Seq`.

    Example:

    >>> source = keras.Input((None,), dtype="int32")
    >>> x = keras.layers.Embedding(20, 16, mask_zero=True)(source)
    >>> memory = layers.TransformerEncoderBlock(num_heads=4, ff_dim=32)(x)
    >>> encoder = keras.Model(source, {"memory": memory})
    >>> model = AssembledTransformerSeq2Seq(20, 30, encoder, embedding_dim=16, max_length=10)
    >>> ids = np.array([[5, 6, 7, 0]]); target = np.array([[8, 9, 2]])
    >>> tuple(model({"source": ids, "target": target}).shape)
    (1, 3, 30)

    References:
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017.
    """

    architecture = "assembled_transformer"

    def __init__(
        self,
        source_vocab_size,
        target_vocab_size,
        encoder,
        num_layers=1,
        embedding_dim=64,
        num_heads=4,
        ff_dim=128,
        norm_first=False,
        max_length=128,
        positions="sinusoidal",
        reverse_source=False,
        dropout=0.0,
        **kwargs,
    ):
        self._take_encoder(encoder)
        super().__init__(
            source_vocab_size,
            target_vocab_size,
            num_layers=num_layers,
            embedding_dim=embedding_dim,
            num_heads=num_heads,
            ff_dim=ff_dim,
            norm_first=norm_first,
            max_length=max_length,
            positions=positions,
            reverse_source=reverse_source,
            dropout=dropout,
            **kwargs,
        )

    # Validation and layers ---------------------------------------------------------

    def _check_arguments(self):
        self._check_encoder("for the decoder blocks' cross-attention to read")
        if self.embedding_dim % self.num_heads:
            raise ValueError(
                f"Received an invalid value for argument `num_heads`, expected a divisor of "
                f"embedding_dim={self.embedding_dim} (each head gets embedding_dim / num_heads "
                f"features), got {self.num_heads!r}."
            )
        argument_checks.parameter_budget(
            "target_embedding", self.target_vocab_size * self.embedding_dim
        )
        projection = (self.embedding_dim + 1) * self.target_vocab_size
        argument_checks.parameter_budget("output_projection", projection)
        if self.positions == "learned":
            argument_checks.parameter_budget(
                "target_position_embedding", self.max_length * self.embedding_dim
            )

    def _make_layers(self):
        self.encoder = self._given_encoder[0]
        self._make_decoder_layers()

    def _build_layers(self):
        memory = self._encoder_specs()["memory"]
        self._build_decoder_layers(tuple(memory.shape))

    # The pass (the decoder and its steps are TransformerSeq2Seq's) -----------------

    def _encode(self, source, training):
        """The encoder's memory and the source mask."""
        source, source_mask = self._prepare_source(source)
        return self.encoder(source, training=training)["memory"], source_mask

    def get_config(self):
        return {**super().get_config(), **self._encoder_config()}
