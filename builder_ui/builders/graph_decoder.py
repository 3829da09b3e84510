"""The `RecurrentDecoder` block: a seq2seq graph's whole decoder as one composite block.

    Input ─▶ … encoder blocks … ─┬─▶ memory ─┐
                                 └─▶ state ──┴─▶ RecurrentDecoder ─▶ Output (softmax over words)

A graph whose task translates (its targets are token sequences) has exactly one
`RecurrentDecoder` block, and it feeds the `Output`. The block is the decoder
half of `keras_seq.models.AssembledSeq2Seq`: the target embedding, the shift
of the target to the right, and `keras_seq.layers.RecurrentDecoder` (its cell,
layers and Bahdanau or Luong attention), reading the encoder states at its
`memory` port through the attention and starting from its `state` port, the
encoder's summary `(batch, units)` (e.g. a `FinalStatePooling` block's). The
`Output` is that model's `output_projection` and softmax.

`DecoderBlock` is what the graph's walk calls for this block: it builds the
same sublayers as the model (so its parameter count and its refusals are the
model's) and gives the decoder outputs' shape, `(batch, T, output_dim)` with
`T` the task's target length, without running the decoder. The model trained
is `AssembledSeq2Seq`, built from the walk's encoder tensors
(`builder_ui.builders.graph.GraphBuilder.build`), which decodes greedily and
by beam search and translates text like every seq2seq model.
"""

from __future__ import annotations

import keras

from keras_seq import validation
from keras_seq.layers import RecurrentDecoder


@keras.saving.register_keras_serializable(package="keras_seq")
class DecoderBlock(keras.layers.Layer):
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
        self.dropout = validation.rate("dropout", dropout)
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
                "state: connect the encoder's summary (e.g. a FinalStatePooling block) to the "
                "state port, or choose an attention"
            )
        if state_shape is not None and tuple(state_shape[1:]) != (decoder.units,):
            raise ValueError(
                f"state must be (batch, {decoder.units}), the decoder's units (it becomes each "
                f"decoder layer's h_0), got {tuple(state_shape)}"
            )
        if len(memory_shape) != 3:
            raise ValueError(
                f"memory must be the encoder states (batch, S, d_enc), got {tuple(memory_shape)}"
            )
        self.target_embedding.build((None, None))
        attended = tuple(memory_shape) if decoder.attention is not None else None
        decoder.build((None, None, self.embedding_dim), attended)

    def compute_output_spec(self, memory, state=None):
        if not self.built:  # Keras builds before asking when called; a direct ask builds here
            self.build(memory.shape, None if state is None else state.shape)
        shape = (memory.shape[0], self.target_length, self.decoder.output_dim)
        return keras.KerasTensor(shape, dtype=self.compute_dtype)

    def compute_mask(self, memory, state=None, mask=None):
        return None

    def call(self, memory, state=None):
        raise NotImplementedError(
            "DecoderBlock gives a graph's shapes and weights; the model that runs is "
            "keras_seq.models.AssembledSeq2Seq (GraphBuilder.build makes it)"
        )

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

    def get_config(self):
        return {
            **super().get_config(),
            "target_vocab_size": self.target_vocab_size,
            "target_length": self.target_length,
            **self.model_arguments(),
        }
