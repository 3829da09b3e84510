"""The decoder blocks: a seq2seq graph's (or a pointer network's) whole decoder as one block.

    Input ─▶ … encoder blocks … ─┬─▶ memory ─┐
                                 └─▶ state ──┴─▶ RecurrentDecoder ─▶ Output (softmax over words)
    Input ─▶ … encoder blocks … ───▶ memory ───▶ TransformerDecoder ─▶ Output

A graph whose task translates (its targets are token sequences) has exactly one
decoder block, and it feeds the `Output`. Each block gives the graph's walk its
decoder's weights (the same sublayers the model makes, so the parameter count
and the refusals are the model's) and its outputs' shape, `(batch, T, width)`
with `T` the task's target length, without running the decoder; `assemble`
makes the model that trains, decodes (greedy, beam search, sampling) and
translates text like every seq2seq model, over the encoder the walk built.

`RecurrentDecoder` (`DecoderBlock`) is the decoder
half of `keras_seq.models.AssembledSeq2Seq`: the target embedding, the shift
of the target to the right, and `keras_seq.layers.RecurrentDecoder` (its cell,
layers and Bahdanau or Luong attention), reading the encoder states at its
`memory` port through the attention and starting from its `state` port. Wired
to recurrent blocks, the port reads the final state each returns (`h`, and `c`
for an LSTM; both directions joined when bidirectional), one per decoder layer,
as `RNNSeq2Seq` starts its decoder; wired to any other block, its `(batch,
units)` output (a `FinalStatePooling`'s) is every decoder layer's `h_0`. The
`Output` is that model's `output_projection` and softmax. The model it
assembles is `AssembledSeq2Seq`.

`TransformerDecoder` (`TransformerDecoderStack`) is the decoder half of
`keras_seq.models.TransformerSeq2Seq` (Vaswani et al. 2017): the target
embedding scaled by √d_model, the positions, `num_layers` causal decoder blocks
cross-attending to `memory` (and a final norm when pre-LN); decoding keeps each
block's self-attention keys and values for `max_length` positions (its
`decoding_floats`, what the memory estimate counts). The model it assembles is
`keras_seq.models.AssembledTransformerSeq2Seq`.

`CaptionDecoder` (`CaptionDecoderBlock`) is Show, Attend and Tell's decoder
(Xu et al. 2015), for tasks whose inputs are images and targets captions: it
reads the image encoder's feature map `(batch, rows, columns, D)` at `memory`,
each cell one region, and starts its LSTM from the mean region. The model it
assembles is `keras_seq.models.AssembledShowAttendTell`.

`PointerDecoder` (`PointerDecoderBlock`) is the decoder of
`keras_seq.models.PointerNetwork` (Vinyals et al. 2015), for tasks whose targets
are input positions: its outputs are distributions over the positions of
`memory`. The model it assembles is `PointerNetwork` with the graph's encoder.
"""

from __future__ import annotations

import keras

from builder_ui.builders import memory
from keras_seq import argument_checks
from keras_seq.layers import (
    LearnedPositionalEmbedding,
    PointerAttention,
    RecurrentDecoder,
    SinusoidalPositionalEncoding,
    TransformerDecoderBlock,
)
from keras_seq.layers.cells import states_per_layer
from keras_seq.models import (
    AssembledSeq2Seq,
    AssembledShowAttendTell,
    AssembledTransformerSeq2Seq,
    PointerNetwork,
)
from keras_seq.models.assembled_seq2seq import check_initial_state
from keras_seq.models.captioner import check_attention_penalty
from keras_seq.models.pointer import (
    ShiftRight,
    network_arguments,
    recurrent_layer,
)
from keras_seq.models.pointer import check_initial_state as check_pointer_state
from keras_seq.models.transformer_seq2seq import decoder_arguments


def _shapes(state):
    """The shape of what a `state` port gives: one tensor's, or a list of final states'."""
    if isinstance(state, list):  # the final states of the recurrent blocks it reads
        return [tensor.shape for tensor in state]
    return None if state is None else state.shape


class _Seq2SeqDecoder(keras.layers.Layer):
    """What the two decoders of token sequences share: the task's target sizes in their
    config, and the model they assemble (`model_class`) over the graph's encoder."""

    model_class = None

    def assemble(self, task, encoder, name="graph"):
        """The model that trains: `model_class` over `encoder` (source ids → the ports)."""
        return self.model_class(
            task.inputs.vocab_size,
            self.target_vocab_size,
            encoder,
            name=name,
            **self.model_arguments(),
        )

    def get_config(self):
        return {
            **super().get_config(),
            "target_vocab_size": self.target_vocab_size,
            "target_length": self.target_length,
            **self.model_arguments(),
        }


@keras.saving.register_keras_serializable(package="keras_seq")
class DecoderBlock(_Seq2SeqDecoder):
    """The decoder half of `AssembledSeq2Seq` as one block: shapes and weights, not a pass.

    Called on the encoder's `memory` `(batch, S, d_enc)` and optionally its
    `state` `(batch, units)`, it gives the decoder outputs `o_t`,
    `(batch, target_length, output_dim)`: `units` features, or
    `units + d_enc` with Bahdanau attention (`RecurrentDecoder`'s equations).

    Args:
        target_vocab_size: Target token ids (the task's).
        target_length: Target steps (the task's).
        cell: The decoder's cell: `simple`, `gru`, `lstm` or `cec_lstm`.
        units: The decoder's state size.
        num_layers: Stacked decoder layers.
        attention: None (the fixed vector: needs `state`), `bahdanau`,
            `luong_dot`, `luong_general` or `luong_concat`.
        attention_units: Hidden size of the additive scores.
        input_feeding: Luong's input feeding.
        embedding_dim: Size of the target token embeddings.
        dropout: Dropout on the target embeddings and the decoder outputs.
    """

    model_class = AssembledSeq2Seq

    def __init__(
        self,
        target_vocab_size,
        target_length,
        cell="lstm",
        units=64,
        num_layers=1,
        attention=None,
        attention_units=None,
        input_feeding=False,
        embedding_dim=64,
        dropout=0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.target_vocab_size = int(target_vocab_size)
        self.target_length = int(target_length)
        self.embedding_dim = int(embedding_dim)
        self.dropout = argument_checks.rate("dropout", dropout)
        self.decoder = RecurrentDecoder(
            units,
            cell=cell,
            num_layers=num_layers,
            attention=attention,
            attention_units=attention_units,
            input_feeding=input_feeding,
            name="decoder",
        )
        self.target_embedding = keras.layers.Embedding(
            self.target_vocab_size, self.embedding_dim, name="target_embedding"
        )
        self.supports_masking = True  # the source mask is the model's (source != PAD)

    def build(self, memory_shape, state_shape=None):
        decoder = self.decoder
        if decoder.attention is None and state_shape is None:
            raise ValueError(
                "without attention the decoder reads the source only through its initial "
                "state: connect the encoder's recurrent block (or its summary, e.g. a "
                "FinalStatePooling block) to the state port, or choose an attention"
            )
        if state_shape is not None:
            check_initial_state(state_shape, decoder.cell, decoder.units, decoder.num_layers)
        if len(memory_shape) != 3:
            raise ValueError(
                f"memory must be the encoder states (batch, S, d_enc), got {tuple(memory_shape)}"
            )
        self.target_embedding.build((None, None))
        attended = tuple(memory_shape) if decoder.attention is not None else None
        decoder.build((None, None, self.embedding_dim), attended)

    def compute_output_spec(self, memory, state=None):
        if not self.built:  # Keras builds before asking when called; a direct ask builds here
            self.build(memory.shape, _shapes(state))
        shape = (memory.shape[0], self.target_length, self.decoder.output_dim)
        return keras.KerasTensor(shape, dtype=self.compute_dtype)

    def compute_mask(self, memory, state=None, mask=None):
        return None

    def call(self, memory, state=None):
        raise NotImplementedError(
            "DecoderBlock gives a graph's shapes and weights; the model that runs is "
            "keras_seq.models.AssembledSeq2Seq (GraphBuilder.build makes it)"
        )

    @property
    def reads_memory(self) -> bool:
        """Whether the model reads the `memory` port: only through an attention."""
        return self.decoder.attention is not None

    def model_arguments(self) -> dict:
        """`AssembledSeq2Seq`'s decoder arguments for this block."""
        decoder = self.decoder
        return {
            "cell": decoder.cell,
            "units": decoder.units,
            "num_layers": decoder.num_layers,
            "attention": decoder.attention,
            "attention_units": decoder.attention_units,
            "input_feeding": decoder.input_feeding,
            "embedding_dim": self.embedding_dim,
            "dropout": self.dropout,
        }


@keras.saving.register_keras_serializable(package="keras_seq")
class TransformerDecoderStack(_Seq2SeqDecoder):
    """The decoder half of `TransformerSeq2Seq` as one block: shapes and weights, not a pass.

    Called on the encoder's `memory` `(batch, S, d_enc)`, it gives the last
    decoder block's outputs, `(batch, target_length, embedding_dim)`.

    Args:
        target_vocab_size: Target token ids (the task's).
        target_length: Target steps (the task's); at most `max_length`.
        num_layers: Decoder blocks.
        embedding_dim: `d_model`: the target embeddings' and the blocks' width.
        num_heads: Attention heads; must divide `embedding_dim`.
        ff_dim: Inner size of the feed-forward networks.
        norm_first: Pre-LN blocks, and a final `LayerNormalization`.
        max_length: The longest target decoding can write (each block's
            key/value cache holds this many positions).
        positions: `sinusoidal` or `learned`.
        dropout: Dropout after the positions and inside every block.
    """

    model_class = AssembledTransformerSeq2Seq

    def __init__(
        self,
        target_vocab_size,
        target_length,
        num_layers=1,
        embedding_dim=64,
        num_heads=4,
        ff_dim=128,
        norm_first=False,
        max_length=128,
        positions="sinusoidal",
        dropout=0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.target_vocab_size = int(target_vocab_size)
        self.target_length = int(target_length)
        arguments = decoder_arguments(
            num_layers, embedding_dim, num_heads, ff_dim, norm_first, max_length, positions
        )
        for name, value in arguments.items():
            setattr(self, name, value)
        self.dropout = argument_checks.rate("dropout", dropout)
        if self.target_length > self.max_length:
            raise ValueError(
                f"max_length: expected at least {self.target_length}, the task's target "
                f"length (decoding writes up to max_length positions), got {self.max_length}"
            )
        self.supports_masking = True  # the source mask is the model's (source != PAD)

    def build(self, memory_shape):
        if len(memory_shape) != 3:
            raise ValueError(
                f"memory must be the encoder states (batch, S, d_enc), got {tuple(memory_shape)}"
            )
        # The weights `AssembledTransformerSeq2Seq` makes for its decoder half.
        self.target_embedding = keras.layers.Embedding(
            self.target_vocab_size, self.embedding_dim, name="target_embedding"
        )
        self.target_embedding.build((None, None))
        features = (None, None, self.embedding_dim)
        if self.positions == "learned":
            self.target_position_embedding = LearnedPositionalEmbedding(
                self.max_length, name="target_position_embedding"
            )
        else:
            self.target_position_embedding = SinusoidalPositionalEncoding(name="position_encoding")
        self.target_position_embedding.build(features)
        self.decoder_blocks = []
        for index in range(self.num_layers):
            block = TransformerDecoderBlock(
                num_heads=self.num_heads,
                ff_dim=self.ff_dim,
                dropout=self.dropout,
                norm_first=self.norm_first,
                name=f"decoder_block_{index}",
            )
            block.build(features, tuple(memory_shape))
            self.decoder_blocks.append(block)
        if self.norm_first:
            self.decoder_layer_norm = keras.layers.LayerNormalization(
                epsilon=1e-5, name="decoder_layer_norm"
            )
            self.decoder_layer_norm.build(features)
        self.built = True

    def compute_output_spec(self, memory):
        if not self.built:  # Keras builds before asking when called; a direct ask builds here
            self.build(memory.shape)
        shape = (memory.shape[0], self.target_length, self.embedding_dim)
        return keras.KerasTensor(shape, dtype=self.compute_dtype)

    def compute_mask(self, memory, mask=None):
        return None

    def call(self, memory):
        raise NotImplementedError(
            "TransformerDecoderStack gives a graph's shapes and weights; the model that runs "
            "is keras_seq.models.AssembledTransformerSeq2Seq (its assemble makes it)"
        )

    reads_memory = True  # every block cross-attends to it

    def decoding_floats(self, source_length):
        """Floats per example decoding holds at once: every block's key/value cache."""
        cache = memory.decoder_cache(
            self.max_length, self.embedding_dim, self.num_heads, source_length
        )
        return self.num_layers * cache

    def model_arguments(self) -> dict:
        """`AssembledTransformerSeq2Seq`'s decoder arguments for this block."""
        names = ("num_layers", "embedding_dim", "num_heads", "ff_dim", "norm_first")
        names += ("max_length", "positions", "dropout")
        return {name: getattr(self, name) for name in names}


@keras.saving.register_keras_serializable(package="keras_seq")
class CaptionDecoderBlock(_Seq2SeqDecoder):
    """The decoder of `AssembledShowAttendTell` as one block: shapes and weights, not a pass.

    Called on the image encoder's feature map `memory` `(batch, rows, columns, D)`,
    whose `L = rows · columns` cells are the regions, it gives the decoder outputs
    `[h_t; ẑ_t]`, `(batch, target_length, units + D)` (Bahdanau attention over the
    regions from `h_{t−1}`; the initial state from the mean region).

    Args:
        target_vocab_size: Caption token ids (the task's).
        target_length: Caption steps (the task's).
        region_positions: Add a learned embedding of each region's place.
        cell: The decoder's cell: `lstm` (the paper's), `gru`, `simple` or `cec_lstm`.
        units: The decoder's state size.
        attention_units: Hidden size of the additive scores; None for `units`.
        embedding_dim: Size of the word embeddings.
        attention_penalty: λ of the doubly stochastic regularisation; 0 turns it off.
        dropout: Dropout on the word embeddings and the decoder outputs.
    """

    model_class = AssembledShowAttendTell

    def __init__(
        self,
        target_vocab_size,
        target_length,
        region_positions=True,
        cell="lstm",
        units=64,
        attention_units=None,
        embedding_dim=64,
        attention_penalty=0.0,
        dropout=0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.target_vocab_size = int(target_vocab_size)
        self.target_length = int(target_length)
        self.region_positions = argument_checks.boolean("region_positions", region_positions)
        self.embedding_dim = argument_checks.positive_int(
            "embedding_dim", embedding_dim, argument_checks.MAX_UNITS
        )
        self.attention_penalty = check_attention_penalty(attention_penalty)
        self.dropout = argument_checks.rate("dropout", dropout)
        self.decoder = RecurrentDecoder(
            units, cell=cell, attention="bahdanau", attention_units=attention_units, name="decoder"
        )

    def build(self, memory_shape):
        if len(memory_shape) != 4 or None in memory_shape[1:]:
            raise ValueError(
                "memory must be the image encoder's feature map (batch, rows, columns, D) of "
                f"a known size, each cell a region, got {tuple(memory_shape)}"
            )
        rows, columns, features = (int(d) for d in memory_shape[1:])
        regions = (None, rows * columns, features)
        # The weights `AssembledShowAttendTell` makes besides its encoder and projection.
        if self.region_positions:
            self.position_embedding = LearnedPositionalEmbedding(
                rows * columns, name="region_positions"
            )
            self.position_embedding.build(regions)
        units = self.decoder.units
        self.initial_states = []
        for name in ("initial_h", "initial_c")[: states_per_layer(self.decoder.cell)]:
            layer = keras.layers.Dense(units, activation="tanh", name=name)
            layer.build((None, features))
            self.initial_states.append(layer)
        self.target_embedding = keras.layers.Embedding(
            self.target_vocab_size, self.embedding_dim, name="target_embedding"
        )
        self.target_embedding.build((None, None))
        self.decoder.build((None, None, self.embedding_dim), regions)
        self.built = True

    def compute_output_spec(self, memory):
        if not self.built:  # Keras builds before asking when called; a direct ask builds here
            self.build(memory.shape)
        shape = (memory.shape[0], self.target_length, self.decoder.output_dim)
        return keras.KerasTensor(shape, dtype=self.compute_dtype)

    def compute_mask(self, memory, mask=None):
        return None

    def call(self, memory):
        raise NotImplementedError(
            "CaptionDecoderBlock gives a graph's shapes and weights; the model that runs is "
            "keras_seq.models.AssembledShowAttendTell (its assemble makes it)"
        )

    reads_memory = True  # the attention reads the regions

    def model_arguments(self) -> dict:
        """`AssembledShowAttendTell`'s arguments for this block (its encoder aside)."""
        decoder = self.decoder
        return {
            "region_positions": self.region_positions,
            "cell": decoder.cell,
            "units": decoder.units,
            "attention_units": decoder.attention_units,
            "embedding_dim": self.embedding_dim,
            "attention_penalty": self.attention_penalty,
            "dropout": self.dropout,
        }

    def assemble(self, task, encoder, name="graph"):
        """The model that trains: `AssembledShowAttendTell` over `encoder` (the feature map)."""
        encoder = keras.Model(encoder.inputs, encoder.output["memory"], name=encoder.name)
        return AssembledShowAttendTell(
            self.target_vocab_size, encoder, name=name, **self.model_arguments()
        )


@keras.saving.register_keras_serializable(package="keras_seq")
class PointerDecoderBlock(keras.layers.Layer):
    """The decoder of `PointerNetwork` as one block: shapes and weights, not a pass.

    Called on the encoder's states `memory` `(batch, n, d)` (and its final state at
    `state`), it gives each output step's distribution over the `n` input positions,
    `(batch, target_length, n)`: the decoder RNN fed the input element pointed at one
    step earlier (a learned start vector first), and `PointerAttention` over `memory`.

    Args:
        input_features: Features of each input element (the task's).
        target_length: Output steps (the task's).
        units: Width of the decoder and the attention.
        cell: `lstm`, `gru` or `cec_lstm`: the decoder's.
        exclude_chosen: Positions chosen at earlier steps get probability 0.
    """

    def __init__(
        self, input_features, target_length, units=32, cell="lstm", exclude_chosen=True, **kwargs
    ):
        super().__init__(**kwargs)
        for name, value in network_arguments(input_features, units, cell, exclude_chosen).items():
            setattr(self, name, value)
        self.target_length = argument_checks.positive_int("target_length", target_length)

    def build(self, memory_shape, state_shape=None):
        if len(memory_shape) != 3:
            raise ValueError(
                f"memory must be the encoder states (batch, n, d), got {tuple(memory_shape)}"
            )
        if state_shape is not None:
            check_pointer_state(state_shape, self.cell, self.units)
        # The weights `PointerNetwork` makes besides its encoder.
        self.decoder = recurrent_layer(self.cell, self.units, "decoder")
        self.decoder.build((None, None, self.input_features))
        self.decoder_inputs = ShiftRight(name="decoder_inputs")
        self.decoder_inputs.build((None, None, self.input_features))
        self.pointer = PointerAttention(self.units, name="pointer")
        self.pointer.build((None, None, self.units), tuple(memory_shape))
        self.built = True

    def compute_output_spec(self, memory, state=None):
        if not self.built:  # Keras builds before asking when called; a direct ask builds here
            self.build(memory.shape, _shapes(state))
        shape = (memory.shape[0], self.target_length, memory.shape[1])
        return keras.KerasTensor(shape, dtype="float32")

    def compute_mask(self, memory, state=None, mask=None):
        return None

    def call(self, memory, state=None):
        raise NotImplementedError(
            "PointerDecoderBlock gives a graph's shapes and weights; the model that runs is "
            "keras_seq.models.PointerNetwork over the graph's encoder (its assemble makes it)"
        )

    reads_memory = True  # the attention points over it

    def model_arguments(self) -> dict:
        """`PointerNetwork`'s arguments for this block (its encoder aside)."""
        return {"units": self.units, "cell": self.cell, "exclude_chosen": self.exclude_chosen}

    def assemble(self, task, encoder, name="graph"):
        """The model that trains: `PointerNetwork` over `encoder` (`memory`, `state`)."""
        return PointerNetwork(
            self.input_features, encoder=encoder, name=name, **self.model_arguments()
        )

    def get_config(self):
        return {
            **super().get_config(),
            "input_features": self.input_features,
            "target_length": self.target_length,
            **self.model_arguments(),
        }
