"""The RNN encoder–decoder (Sutskever et al. 2014), with or without attention (Bahdanau, Luong).

    source ─▶ [reverse within length] ─▶ embedding ─▶ encoder RNN × L ─┬─▶ h_1 … h_S (memory)
                                                        final states ───┤
    target ─▶ shift right (START first) ─▶ embedding ─▶ RecurrentDecoder ◀┘ ─▶ softmax

Design choices, each a documented departure or a choice the papers leave open:

- The decoder's initial state is the encoder's final state, layer by layer
  (Sutskever et al. 2014), with and without attention.
- `bidirectional=True` gives each direction `units // 2` units, so that the
  concatenated states `[h→_j; h←_j]` have `units` features, as the decoder
  does; the decoder starts from `[h→_S; h←_1]` (both directions' final
  states; Bahdanau et al. start from `tanh(W_s h←_1)`). `units` must be even.
- The readout is a linear layer and a softmax over `o_t` (no maxout).
- Dropout (`dropout`) acts on the embeddings, between encoder layers and on
  the decoder outputs, never inside the decoder's loop.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_seq import argument_checks
from keras_seq.layers.cells import (
    cell_parameter_count,
    check_cell,
    make_rnn_layer,
    states_per_layer,
)
from keras_seq.layers.recurrent_decoder import (
    RecurrentDecoder,
    check_attention,
    check_input_feeding,
)
from keras_seq.models.seq2seq_base import MAX_LAYERS, PAD_ID, Seq2Seq

_REGISTER = keras.saving.register_keras_serializable(package="keras_seq")


@_REGISTER
class RNNSeq2Seq(Seq2Seq):
    """An RNN encoder reads the embedded source; a `RecurrentDecoder` writes the target.

    The encoder (`cell`, `num_layers`, `bidirectional`) reads the embedded
    source, and a `RecurrentDecoder` writes the target from the encoder's
    final state, reading the encoder states through `attention` (None,
    Bahdanau or Luong):

        p(y_t | y_{<t}, x) = softmax(W_o o_t + b_o)

    where `o_t` is the decoder's output at step `t` (see `RecurrentDecoder`
    for each attention's equations, and the module docstring for the design
    choices).

    Args:
        source_vocab_size: Source token ids, the 4 reserved ids included.
        target_vocab_size: Target token ids, the 4 reserved ids included.
        cell: `"simple"`, `"gru"`, `"lstm"` (default) or `"cec_lstm"` (the
            1997 LSTM), for encoder and decoder.
        units: The size of every recurrent state. Default 64.
        num_layers: Stacked encoder and decoder layers. Default 1.
        bidirectional: A bidirectional encoder (`units // 2` per direction).
            Default False.
        attention: None (default, the fixed vector), `"bahdanau"`,
            `"luong_dot"`, `"luong_general"` or `"luong_concat"`.
        attention_units: Hidden size of the additive scores (`"bahdanau"`,
            `"luong_concat"`). Default None: `units`.
        input_feeding: With Luong attention only: feed `h̃_{t−1}` to the
            next step. Default False.
        reverse_source: Reverse each source within its length before
            encoding (Sutskever et al. 2014). Default False.
        embedding_dim: Size of the token embeddings. Default 64.
        dropout: Dropout rate on the embeddings, between encoder layers and
            on the decoder outputs. Default 0.
        **kwargs: Model keywords (`name`, `trainable`, `dtype`), see `Seq2Seq`.

    Call arguments:
        inputs: A dict with `"source"` `(batch, S)` and `"target"` `(batch, T)`
            int ids, right-padded with PAD = 0.
        training: Whether dropout is applied.

    Returns:
        `(batch, T, target_vocab_size)` float32 probabilities.

    `encode(source)` returns `"source_mask"` bool `(batch, S)`; with
    attention, `"memory"` `(batch, S, units)`; with an attention that
    projects them (all but `"luong_dot"`), `"keys"` `(batch, S, k)`
    (`RecurrentDecoder.project_keys`); and the decoder states by
    `RecurrentDecoder.state_names` (`"h_0"`, `"c_0"`, …, and
    `"attentional"` with input feeding), each `(batch, units)`.
    `decode_step`'s attention is zeros without attention.

    Example:

    >>> model = RNNSeq2Seq(20, 30, units=16, attention="luong_general")
    >>> source = np.array([[5, 6, 7, 0]]); target = np.array([[8, 9, 2]])
    >>> tuple(model({"source": source, "target": target}).shape)
    (1, 3, 30)
    >>> state = model.encode(source)
    >>> log_probs, state, attention = model.decode_step(np.array([1]), state)
    >>> tuple(log_probs.shape), tuple(attention.shape)
    ((1, 30), (1, 4))

    References:
        - Sutskever, Vinyals & Le, "Sequence to Sequence Learning with Neural
          Networks", NeurIPS 2014.
        - Bahdanau, Cho & Bengio, "Neural Machine Translation by Jointly
          Learning to Align and Translate", ICLR 2015.
        - Luong, Pham & Manning, "Effective Approaches to Attention-based
          Neural Machine Translation", EMNLP 2015.
    """

    architecture = "rnn"

    def __init__(
        self,
        source_vocab_size,
        target_vocab_size,
        cell="lstm",
        units=64,
        num_layers=1,
        bidirectional=False,
        attention=None,
        attention_units=None,
        input_feeding=False,
        reverse_source=False,
        embedding_dim=64,
        dropout=0.0,
        **kwargs,
    ):
        self._set_decoder_arguments(
            cell, units, num_layers, attention, attention_units, input_feeding, embedding_dim
        )
        self.bidirectional = argument_checks.boolean("bidirectional", bidirectional)
        super().__init__(
            source_vocab_size,
            target_vocab_size,
            reverse_source=reverse_source,
            dropout=dropout,
            **kwargs,
        )

    # Validation and layers ---------------------------------------------------------

    def _set_decoder_arguments(
        self, cell, units, num_layers, attention, attention_units, input_feeding, embedding_dim
    ):
        """Checks and keeps the decoder's arguments (shared with `AssembledSeq2Seq`)."""
        self.cell = check_cell(cell)
        self.units = argument_checks.positive_int("units", units, argument_checks.MAX_UNITS)
        self.num_layers = argument_checks.positive_int("num_layers", num_layers, MAX_LAYERS)
        self.attention = check_attention(attention)
        if attention_units is not None:
            attention_units = argument_checks.positive_int(
                "attention_units", attention_units, argument_checks.MAX_UNITS
            )
            if self.attention not in ("bahdanau", "luong_concat"):
                raise argument_checks.invalid(
                    "attention_units",
                    "None unless `attention` is 'bahdanau' or 'luong_concat'",
                    attention_units,
                )
        self.attention_units = attention_units
        self.input_feeding = check_input_feeding(input_feeding, self.attention)
        self.embedding_dim = argument_checks.positive_int(
            "embedding_dim", embedding_dim, argument_checks.MAX_UNITS
        )

    def _make_decoder(self):
        """The `RecurrentDecoder` of the decoder's arguments."""
        return RecurrentDecoder(
            self.units,
            cell=self.cell,
            num_layers=self.num_layers,
            attention=self.attention,
            attention_units=self.attention_units,
            input_feeding=self.input_feeding,
            name="decoder",
            dtype=self.dtype_policy,
        )

    def _check_arguments(self):
        if self.bidirectional and self.units % 2:
            raise argument_checks.invalid(
                "units",
                "an even number with bidirectional=True (each direction has units // 2, so "
                "that the two together match the decoder)",
                self.units,
            )
        self._check_budgets(self.units)
        argument_checks.parameter_budget(
            "encoder",
            self.num_layers
            * cell_parameter_count(self.cell, max(self.embedding_dim, self.units), self.units),
        )

    def _make_layers(self):
        self.embedding_dropout = keras.layers.Dropout(
            self.dropout, name="embedding_dropout", dtype=self.dtype_policy
        )
        self.encoder_dropout = keras.layers.Dropout(
            self.dropout, name="encoder_dropout", dtype=self.dtype_policy
        )
        self.output_dropout = keras.layers.Dropout(
            self.dropout, name="output_dropout", dtype=self.dtype_policy
        )
        self.encoder_layers = []
        layer_units = self.units // 2 if self.bidirectional else self.units
        for index in range(self.num_layers):
            layer = make_rnn_layer(
                self.cell,
                layer_units,
                return_sequences=True,
                return_state=True,
                name=f"encoder_{index}",
                dtype=self.dtype_policy,
            )
            if self.bidirectional:
                layer = keras.layers.Bidirectional(
                    layer, name=f"encoder_{index}", dtype=self.dtype_policy
                )
            self.encoder_layers.append(layer)
        self.decoder = self._make_decoder()

    def _build_layers(self):
        tokens = (None, None)
        self.source_embedding.build(tokens)
        self.target_embedding.build(tokens)
        features = (None, None, self.embedding_dim)
        for layer in self.encoder_layers:
            layer.build(features)
            features = (None, None, self.units)
        memory = (None, None, self.units) if self.attention else None
        self.decoder.build((None, None, self.embedding_dim), memory)
        self.output_projection.build((None, None, self.decoder.output_dim))

    # The pass and the steps --------------------------------------------------------

    def _encode(self, source, training):
        """Returns the memory `h_1 … h_S`, the source mask and the decoder's initial states."""
        source, source_mask = self._prepare_source(source)
        x = self.embedding_dropout(self.source_embedding(source), training=training)
        per_layer = states_per_layer(self.cell)
        initial_states = []
        for index, layer in enumerate(self.encoder_layers):
            if index:
                x = self.encoder_dropout(x, training=training)
            x, *states = layer(x, mask=source_mask, training=training)  # (batch, S, units)
            if self.bidirectional:  # [h→_S; h←_1] (and the same for c)
                forward, backward = states[:per_layer], states[per_layer:]
                states = [
                    ops.concatenate([f, b], axis=-1) for f, b in zip(forward, backward, strict=True)
                ]
            initial_states.extend(states)
        return x, source_mask, initial_states

    def teacher_forced(self, source, target, training):
        memory, source_mask, initial_states = self._encode(source, training)
        target_mask = ops.not_equal(ops.cast(target, "int32"), PAD_ID)
        y = self.target_embedding(self.shift_right(target))
        y = self.embedding_dropout(y, training=training)
        outputs = self.decoder(
            y,
            memory if self.attention else None,
            initial_state=initial_states,
            decoder_sequence_mask=target_mask,
            encoder_sequence_mask=source_mask if self.attention else None,
            training=training,
        )  # (batch, T, output_dim)
        return self._probabilities(self.output_dropout(outputs, training=training))

    def initial_state(self, source):
        memory, source_mask, initial_states = self._encode(source, False)
        batch = ops.shape(source_mask)[0]
        state = {"source_mask": source_mask}
        if self.attention:
            state["memory"] = memory
            if self.attention != "luong_dot":  # the keys of the scores, projected once
                state["keys"] = self.decoder.project_keys(memory)
        names = self.decoder.state_names
        for name, tensor in zip(
            names, self.decoder.get_initial_state(batch, initial_states), strict=True
        ):
            state[name] = tensor
        return state

    def step(self, tokens, state):
        x = self.target_embedding(ops.cast(tokens, "int32"))  # (batch, embedding_dim)
        names = self.decoder.state_names
        outputs, new_states, weights = self.decoder.step(
            x,
            [state[name] for name in names],
            state.get("memory"),
            state["source_mask"] if self.attention else None,
            keys=state.get("keys"),
            training=False,
        )
        if weights is None:
            weights = ops.zeros(ops.shape(state["source_mask"]), dtype="float32")
        new_state = dict(state)
        new_state.update(zip(names, new_states, strict=True))
        return self._log_probabilities(outputs), new_state, ops.cast(weights, "float32")

    def get_config(self):
        return {
            **super().get_config(),
            "cell": self.cell,
            "units": self.units,
            "num_layers": self.num_layers,
            "bidirectional": self.bidirectional,
            "attention": self.attention,
            "attention_units": self.attention_units,
            "input_feeding": self.input_feeding,
            "embedding_dim": self.embedding_dim,
        }
