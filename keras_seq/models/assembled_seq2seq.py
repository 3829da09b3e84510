"""`AssembledSeq2Seq`: any Keras encoder model, and a `RecurrentDecoder` that writes the target.

    source ─▶ [reverse within length] ─▶ encoder (any keras.Model) ─┬─▶ "memory" h_1 … h_S
                                                                     └─▶ "state"  s_0
    target ─▶ shift right (START first) ─▶ embedding ─▶ RecurrentDecoder ◀┘ ─▶ softmax

The decoder half of `keras_seq.models.RNNSeq2Seq`, over an encoder the user
assembles (the Build tab's graph, or any functional model of one's own): the
encoder maps `(batch, S)` source ids to a dict with `"memory"`, the encoder
states that the attention reads, `(batch, S, d_enc)`, and/or `"state"`, the
summary `(batch, units)` the decoder starts from (the fixed-length vector of
Sutskever et al. 2014 and Cho et al. 2014). Everything after the encoder is
`RNNSeq2Seq`'s: the same `RecurrentDecoder` (Bahdanau or Luong attention, or
none), teacher forcing, `encode` / `decode_step`, so greedy decoding, beam
search, `Translator` and its SavedModel work unchanged.

Design choices:

- `"state"` is one `(batch, units)` tensor, every decoder layer's `h_0` (an
  LSTM's memory `c` starting at zero), or a list of each decoder layer's own
  initial state, `h` (and `c` for an LSTM) per layer in order, which is how
  `RNNSeq2Seq` hands over its encoder layers' final states (the Build tab's
  decoder block reads them when its `state` port is wired to recurrent
  blocks). Without `"state"` the decoder starts at zero, which only an
  attention decoder can afford (without attention it would never see the
  source, so that is refused).
- The source mask is `source != PAD`, as for every `Seq2Seq`, whatever masks
  the encoder itself computes.
- Dropout (`dropout`) acts on the target embeddings and the decoder outputs;
  the encoder has its own.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_seq import argument_checks
from keras_seq.layers.cells import states_per_layer
from keras_seq.models.own_encoder import OwnEncoder
from keras_seq.models.rnn_seq2seq import RNNSeq2Seq
from keras_seq.models.seq2seq_base import Seq2Seq

_REGISTER = keras.saving.register_keras_serializable(package="keras_seq")


def check_initial_state(state_shape, cell, units, num_layers):
    """Refuses an encoder `"state"` that cannot start the decoder, naming what it needs.

    One `(batch, units)` shape is every decoder layer's `h_0` (an LSTM's `c_0` zero); a
    list of shapes is each decoder layer's own initial state in order, `h` (and `c` for
    an LSTM) per layer, as `RNNSeq2Seq` hands over its encoder layers' final states.
    """
    listed = isinstance(state_shape[0], (tuple, list))
    shapes = list(state_shape) if listed else [state_shape]
    wanted = num_layers * states_per_layer(cell) if listed else 1
    if len(shapes) != wanted:
        per_layer = "h and c" if states_per_layer(cell) == 2 else "h"
        raise argument_checks.invalid(
            "encoder",
            f"a 'state' of one (batch, {units}) tensor, or the initial state of each of the "
            f"{num_layers} decoder layer(s) ({per_layer} per layer for a {cell} decoder): "
            f"{num_layers * states_per_layer(cell)} tensors",
            f"{len(shapes)} tensors",
        )
    for shape in shapes:
        if tuple(shape[1:]) != (units,):
            raise argument_checks.invalid(
                "encoder",
                f"'state' of shape (batch, {units}): the decoder's units, since it becomes "
                "each decoder layer's initial state",
                tuple(shape),
            )


@_REGISTER
class AssembledSeq2Seq(OwnEncoder, RNNSeq2Seq):
    """A `RecurrentDecoder` over the outputs of an encoder model of one's own.

    As for every `Seq2Seq`,

        p(y_t | y_{<t}, x) = softmax(W_o o_t + b_o)

    with `o_t` the `RecurrentDecoder`'s output at step `t`, here reading
    `memory = encoder(x)["memory"]` through `attention` and starting from
    `s_0 = encoder(x)["state"]` (see the module docstring).

    Args:
        source_vocab_size: Source token ids, the 4 reserved ids included (the
            encoder embeds them itself).
        target_vocab_size: Target token ids, the 4 reserved ids included.
        encoder: A `keras.Model` from `(batch, S)` int ids to a dict with
            `"memory"` `(batch, S, d_enc)` and/or `"state"`: `(batch, units)`,
            or a list of `num_layers × (1, or 2 for an LSTM)` such tensors
            (see the module docstring). `"memory"` is needed with attention,
            `"state"` without.
        cell: `"simple"`, `"gru"`, `"lstm"` (default) or `"cec_lstm"`, the
            decoder's cell.
        units: The decoder's state size. Default 64.
        num_layers: Stacked decoder layers. Default 1.
        attention: None (default), `"bahdanau"`, `"luong_dot"`,
            `"luong_general"` or `"luong_concat"`.
        attention_units: Hidden size of the additive scores (`"bahdanau"`,
            `"luong_concat"`). Default None: `units`.
        input_feeding: With Luong attention only: feed `h̃_{t−1}` to the
            next step. Default False.
        embedding_dim: Size of the target token embeddings. Default 64.
        reverse_source: Reverse each source within its length before
            encoding (Sutskever et al. 2014). Default False.
        dropout: Dropout rate on the target embeddings and the decoder
            outputs. Default 0.
        **kwargs: Model keywords (`name`, `trainable`, `dtype`), see `Seq2Seq`.

    Call arguments, returns, `encode` and `decode_step`: as `RNNSeq2Seq`.

    Example:

    >>> source = keras.Input((None,), dtype="int32")
    >>> states = keras.layers.GRU(16, return_sequences=True)(
    ...     keras.layers.Embedding(20, 8, mask_zero=True)(source))
    >>> encoder = keras.Model(source, {"memory": states})
    >>> model = AssembledSeq2Seq(20, 30, encoder, cell="gru", units=16, attention="bahdanau")
    >>> ids = np.array([[5, 6, 7, 0]]); target = np.array([[8, 9, 2]])
    >>> tuple(model({"source": ids, "target": target}).shape)
    (1, 3, 30)

    References:
        - Sutskever, Vinyals & Le, "Sequence to Sequence Learning with Neural
          Networks", NeurIPS 2014.
        - Bahdanau, Cho & Bengio, "Neural Machine Translation by Jointly
          Learning to Align and Translate", ICLR 2015.
        - Luong, Pham & Manning, "Effective Approaches to Attention-based
          Neural Machine Translation", EMNLP 2015.
    """

    architecture = "assembled"

    def __init__(
        self,
        source_vocab_size,
        target_vocab_size,
        encoder,
        cell="lstm",
        units=64,
        num_layers=1,
        attention=None,
        attention_units=None,
        input_feeding=False,
        embedding_dim=64,
        reverse_source=False,
        dropout=0.0,
        **kwargs,
    ):
        self._take_encoder(encoder)
        self._set_decoder_arguments(
            cell, units, num_layers, attention, attention_units, input_feeding, embedding_dim
        )
        self.bidirectional = False  # RNNSeq2Seq's field; the encoder is the user's
        Seq2Seq.__init__(
            self,
            source_vocab_size,
            target_vocab_size,
            reverse_source=reverse_source,
            dropout=dropout,
            **kwargs,
        )

    # Validation and layers ---------------------------------------------------------

    def _check_arguments(self):
        reason = f"for attention={self.attention!r} to read" if self.attention else None
        outputs = self._check_encoder(reason)
        state = outputs.get("state")
        if self.attention is None and state is None:
            raise argument_checks.invalid(
                "encoder",
                "a 'state' output (batch, units): without attention the decoder reads the source "
                "only through its initial state",
                sorted(outputs),
            )
        if state is not None:
            shapes = [t.shape for t in state] if isinstance(state, (list, tuple)) else state.shape
            check_initial_state(shapes, self.cell, self.units, self.num_layers)
        argument_checks.parameter_budget(
            "target_embedding", self.target_vocab_size * self.embedding_dim
        )

    def _make_layers(self):
        self.encoder = self._given_encoder[0]
        self.embedding_dropout = keras.layers.Dropout(
            self.dropout, name="embedding_dropout", dtype=self.dtype_policy
        )
        self.output_dropout = keras.layers.Dropout(
            self.dropout, name="output_dropout", dtype=self.dtype_policy
        )
        self.decoder = self._make_decoder()

    def _build_layers(self):
        self.target_embedding.build((None, None))
        memory = self._encoder_specs().get("memory")
        memory_shape = tuple(memory.shape) if self.attention is not None else None
        self.decoder.build((None, None, self.embedding_dim), memory_shape)
        self.output_projection.build((None, None, self.decoder.output_dim))

    # The pass (the steps are RNNSeq2Seq's) -----------------------------------------

    def _encode(self, source, training):
        """The memory, the source mask and the decoder's initial layer states (or None)."""
        source, source_mask = self._prepare_source(source)
        outputs = self.encoder(source, training=training)
        state = outputs.get("state")
        initial_states = None
        if isinstance(state, (list, tuple)):  # each decoder layer's own initial state
            initial_states = list(state)
        elif state is not None:
            zeros = ops.zeros_like(state)
            per_layer = [state, zeros] if states_per_layer(self.cell) == 2 else [state]
            initial_states = per_layer * self.num_layers
        return outputs.get("memory"), source_mask, initial_states

    def get_config(self):
        return {
            **Seq2Seq.get_config(self),
            **self._encoder_config(),
            "cell": self.cell,
            "units": self.units,
            "num_layers": self.num_layers,
            "attention": self.attention,
            "attention_units": self.attention_units,
            "input_feeding": self.input_feeding,
            "embedding_dim": self.embedding_dim,
        }
