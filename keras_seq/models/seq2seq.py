"""Sequence-to-sequence models: an encoder reads the source, a decoder writes the target.

    RNN:
    source ─▶ [reverse within length] ─▶ embedding ─▶ encoder RNN × L ─┬─▶ h_1 … h_S (memory)
                                                        final states ───┤
    target ─▶ shift right (START first) ─▶ embedding ─▶ RecurrentDecoder ◀┘ ─▶ softmax

    Transformer:
    source ─▶ embedding·√d + positions ─▶ encoder block × N ─▶ memory
    target ─▶ shift right ─▶ embedding·√d + positions ─▶ decoder block × N ─▶ softmax

`seq2seq(...)` builds a `Seq2Seq`, a registered `keras.Model` subclass. It is
a subclass rather than a functional graph because it has three entry points
that share its layers: `call` (the teacher-forced pass that `fit` trains),
and `encode` / `decode_step`, the inference contract that greedy decoding
and beam search (`keras_seq.models.decoding`) run in a compiled loop.

Training input is `{"source": x, "target": y}` with `y` the target as a task
stores it (token ids, one END, PAD = 0 to the right). The model shifts `y`
right itself, so the decoder reads `START, y_1 … y_{T−1}` and predicts
`y_1 … y_T` (teacher forcing), and returns `(batch, T, target_vocab_size)`
probabilities. Padding is never counted: compile with
`compile_for(model, task.targets)` (or `MaskedSparseCategoricalCrossentropy`
and `MaskedTokenAccuracy`), then `model.fit({"source": x, "target": y}, y)`.

Inference:

    state = model.encode(source)                        # dict of batch-first tensors
    log_probs, state, attention = model.decode_step(tokens, state)

`tokens` is the previous output token `(batch,)` (START at the first step).
The step gives exactly the probabilities of the teacher-forced pass when fed
the same tokens (tested to 1e-5). Everything is `keras.ops`, with no Python
branching on tensor values, so both run inside `tf.function` and `jax.jit`.

Design choices, each a documented departure or a choice the papers leave open:

- The decoder's initial state is the encoder's final state, layer by layer
  (Sutskever et al. 2014), with and without attention.
- `bidirectional=True` gives each direction `units // 2` units, so that the
  concatenated states `[h→_j; h←_j]` have `units` features, as the decoder
  does; the decoder starts from `[h→_S; h←_1]` (both directions' final
  states; Bahdanau et al. start from `tanh(W_s h←_1)`). `units` must be even.
- The RNN readout is a linear layer and a softmax over `o_t` (no maxout).
- Dropout (`dropout`) acts on the embeddings, between encoder layers and on
  the decoder outputs, never inside the decoder's loop.
- The Transformer multiplies its embeddings by `√d_model` (Vaswani et al.
  2017, Section 3.4), and ends each stack with a `LayerNormalization` when
  `norm_first=True` (pre-LN).
- The Transformer's `decode_step` runs each decoder block on the new
  position only (`TransformerDecoderBlock.decode_step`): the self-attention
  keys and values of earlier positions come from a per-block cache of
  `max_length` positions, and the encoder output's cross-attention keys and
  values are projected once, in `encode`. A step then costs the same at
  every position, apart from attention over the cache. `max_length` bounds
  the target length that `decode_step` can produce (`max_decode_length`).
"""

from __future__ import annotations

import math

import keras
from keras import ops

from keras_seq import validation
from keras_seq.layers import (
    LearnedPositionalEmbedding,
    ReverseWithinLength,
    SinusoidalPositionalEncoding,
    TransformerDecoderBlock,
    TransformerEncoderBlock,
)
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

_REGISTER = keras.saving.register_keras_serializable(package="keras_seq")

ARCHITECTURES = ("rnn", "transformer")
POSITIONS = ("sinusoidal", "learned")

# The reserved ids of `keras_seq.tasks.Vocabulary`, the same in every vocabulary.
PAD_ID, START_ID = 0, 1

# Most tokens a vocabulary may hold; each adds a row to an embedding and a
# column to the output layer.
MAX_VOCABULARY = 2**22

# The deepest stack of layers the builder accepts.
MAX_LAYERS = 64


def _vocab_size(name, value):
    return validation.int_in_range(name, value, 4, MAX_VOCABULARY)


@_REGISTER
class Seq2Seq(keras.Model):
    """An encoder–decoder that maps a source token sequence to a target token sequence.

    With `architecture="rnn"`, an RNN encoder (`cell`, `num_layers`,
    `bidirectional`) reads the embedded source, and a `RecurrentDecoder`
    writes the target from the encoder's final state, reading the encoder
    states through `attention` (None, Bahdanau or Luong). With
    `architecture="transformer"`, `num_layers` Transformer encoder and
    decoder blocks (Vaswani et al. 2017) do the same with self- and
    cross-attention. For every variant

        p(y_t | y_{<t}, x) = softmax(W_o o_t + b_o)

    where `o_t` is the decoder's output at step `t`. See the module
    docstring for the design choices and `seq2seq` for the builder.

    Args:
        source_vocab_size: Source token ids, the 4 reserved ids included.
        target_vocab_size: Target token ids, the 4 reserved ids included.
        architecture: `"rnn"` (default) or `"transformer"`.
        cell: RNN only: `"simple"`, `"gru"`, `"lstm"` (default) or
            `"cec_lstm"` (the 1997 LSTM), for encoder and decoder.
        units: RNN only: the size of every recurrent state. Default 64.
        num_layers: Stacked encoder and decoder layers (RNN layers or
            Transformer blocks). Default 1.
        bidirectional: RNN only: a bidirectional encoder (`units // 2` per
            direction). Default False.
        attention: RNN only: None (default, the fixed vector), `"bahdanau"`,
            `"luong_dot"`, `"luong_general"` or `"luong_concat"`.
        attention_units: Hidden size of the additive scores (`"bahdanau"`,
            `"luong_concat"`). Default None: `units`.
        input_feeding: RNN with Luong attention only: feed `h̃_{t−1}` to the
            next step. Default False.
        reverse_source: Reverse each source within its length before
            encoding (Sutskever et al. 2014), in `call` and in `encode`.
            Default False.
        embedding_dim: RNN only: size of the token embeddings. Default 64.
        embed_dim: Transformer only: `d_model`. Default 64.
        num_heads: Transformer only: attention heads; must divide
            `embed_dim`. Default 4.
        ff_dim: Transformer only: inner size of the feed-forward networks.
            Default 128.
        norm_first: Transformer only: pre-LN blocks. Default False (post-LN).
        max_length: Transformer only: the longest target `decode_step` can
            produce, and, with learned positions, the longest source and
            target. Default 128.
        positions: Transformer only: `"sinusoidal"` (default) or `"learned"`.
        dropout: Dropout rate (see the module docstring). Default 0.
        **kwargs: Model keywords (`name`, `trainable`, `dtype`). A `dtype`
            policy such as `"mixed_float16"` reaches every sublayer; the
            probabilities and `decode_step`'s log-probabilities and attention
            are float32 whatever the policy.

    Call arguments:
        inputs: A dict with `"source"`, `(batch, S)` int ids, and
            `"target"`, `(batch, T)` int ids (ids, END, PAD), right-padded
            with PAD = 0.
        training: Whether dropout is applied.

    Returns:
        `(batch, T, target_vocab_size)` float32 probabilities of each target
        token given the source and the target tokens before it.

    Example:

    >>> model = Seq2Seq(20, 30, units=16, attention="luong_general")
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
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017.
    """

    def __init__(
        self,
        source_vocab_size,
        target_vocab_size,
        architecture="rnn",
        cell="lstm",
        units=64,
        num_layers=1,
        bidirectional=False,
        attention=None,
        attention_units=None,
        input_feeding=False,
        reverse_source=False,
        embedding_dim=64,
        embed_dim=64,
        num_heads=4,
        ff_dim=128,
        norm_first=False,
        max_length=128,
        positions="sinusoidal",
        dropout=0.0,
        **kwargs,
    ):
        # === Validation, before any weight exists ===
        self.source_vocab_size = _vocab_size("source_vocab_size", source_vocab_size)
        self.target_vocab_size = _vocab_size("target_vocab_size", target_vocab_size)
        self.architecture = validation.one_of("architecture", architecture, ARCHITECTURES)
        self.cell = check_cell(cell)
        self.units = validation.positive_int("units", units, validation.MAX_UNITS)
        self.num_layers = validation.positive_int("num_layers", num_layers, MAX_LAYERS)
        self.bidirectional = validation.boolean("bidirectional", bidirectional)
        self.attention = check_attention(attention)
        if attention_units is not None:
            attention_units = validation.positive_int(
                "attention_units", attention_units, validation.MAX_UNITS
            )
        self.attention_units = attention_units
        self.input_feeding = check_input_feeding(input_feeding, self.attention)
        self.reverse_source = validation.boolean("reverse_source", reverse_source)
        self.embedding_dim = validation.positive_int(
            "embedding_dim", embedding_dim, validation.MAX_UNITS
        )
        self.embed_dim = validation.positive_int("embed_dim", embed_dim, validation.MAX_UNITS)
        self.num_heads = validation.positive_int("num_heads", num_heads, validation.MAX_UNITS)
        self.ff_dim = validation.positive_int("ff_dim", ff_dim, validation.MAX_UNITS)
        self.norm_first = validation.boolean("norm_first", norm_first)
        self.max_length = validation.positive_int("max_length", max_length, 2**20)
        self.positions = validation.one_of("positions", positions, POSITIONS)
        self.dropout = validation.rate("dropout", dropout)
        if self.architecture == "rnn":
            self._check_rnn_arguments()
        else:
            self._check_transformer_arguments()

        kwargs.setdefault("name", "seq2seq")
        super().__init__(**kwargs)

        # === Layers, named by their role ===
        if self.reverse_source:
            self.source_reversal = ReverseWithinLength(
                pad_value=PAD_ID, name="source_reversal", dtype=self.dtype_policy
            )
        if self.architecture == "rnn":
            self._make_rnn_layers()
        else:
            self._make_transformer_layers()
        self.output_projection = keras.layers.Dense(
            self.target_vocab_size, name="output_projection", dtype=self.dtype_policy
        )
        self._build_layers()

    # Validation ---------------------------------------------------------------

    def _check_rnn_arguments(self):
        if self.bidirectional and self.units % 2:
            raise validation.invalid(
                "units",
                "an even number with bidirectional=True (each direction has units // 2, so "
                "that the two together match the decoder)",
                self.units,
            )
        if self.attention_units is not None and self.attention not in ("bahdanau", "luong_concat"):
            raise validation.invalid(
                "attention_units",
                "None unless `attention` is 'bahdanau' or 'luong_concat'",
                self.attention_units,
            )
        for role, vocab in (("source", self.source_vocab_size), ("target", self.target_vocab_size)):
            validation.parameter_budget(f"{role}_embedding", vocab * self.embedding_dim)
        validation.parameter_budget("output_projection", (self.units + 1) * self.target_vocab_size)
        validation.parameter_budget(
            "encoder",
            self.num_layers
            * cell_parameter_count(self.cell, max(self.embedding_dim, self.units), self.units),
        )

    def _check_transformer_arguments(self):
        for name in ("attention", "attention_units"):
            if getattr(self, name) is not None:
                raise validation.invalid(
                    name,
                    "None with architecture='transformer' (it attends by design)",
                    getattr(self, name),
                )
        if self.bidirectional:
            raise validation.invalid(
                "bidirectional",
                "False with architecture='transformer' (its encoder already reads both ways)",
                self.bidirectional,
            )
        if self.embed_dim % self.num_heads:
            raise ValueError(
                f"Received an invalid value for argument `num_heads`, expected a divisor of "
                f"embed_dim={self.embed_dim} (each head gets embed_dim / num_heads features), "
                f"got {self.num_heads!r}."
            )
        for role, vocab in (("source", self.source_vocab_size), ("target", self.target_vocab_size)):
            validation.parameter_budget(f"{role}_embedding", vocab * self.embed_dim)
        validation.parameter_budget(
            "output_projection", (self.embed_dim + 1) * self.target_vocab_size
        )
        if self.positions == "learned":
            validation.parameter_budget("position_embedding", self.max_length * self.embed_dim)

    # Layers ---------------------------------------------------------------------

    def _make_rnn_layers(self):
        self.source_embedding = keras.layers.Embedding(
            self.source_vocab_size,
            self.embedding_dim,
            name="source_embedding",
            dtype=self.dtype_policy,
        )
        self.target_embedding = keras.layers.Embedding(
            self.target_vocab_size,
            self.embedding_dim,
            name="target_embedding",
            dtype=self.dtype_policy,
        )
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
        self.decoder = RecurrentDecoder(
            self.units,
            cell=self.cell,
            num_layers=self.num_layers,
            attention=self.attention,
            attention_units=self.attention_units,
            input_feeding=self.input_feeding,
            name="decoder",
            dtype=self.dtype_policy,
        )

    def _make_transformer_layers(self):
        self.source_embedding = keras.layers.Embedding(
            self.source_vocab_size, self.embed_dim, name="source_embedding", dtype=self.dtype_policy
        )
        self.target_embedding = keras.layers.Embedding(
            self.target_vocab_size, self.embed_dim, name="target_embedding", dtype=self.dtype_policy
        )
        if self.positions == "sinusoidal":  # no weights: one layer serves both sides
            self.position_encoding = SinusoidalPositionalEncoding(
                name="position_encoding", dtype=self.dtype_policy
            )
        else:
            self.source_position_embedding = LearnedPositionalEmbedding(
                self.max_length, name="source_position_embedding", dtype=self.dtype_policy
            )
            self.target_position_embedding = LearnedPositionalEmbedding(
                self.max_length, name="target_position_embedding", dtype=self.dtype_policy
            )
        self.embedding_dropout = keras.layers.Dropout(
            self.dropout, name="embedding_dropout", dtype=self.dtype_policy
        )
        block_args = {
            "num_heads": self.num_heads,
            "ff_dim": self.ff_dim,
            "dropout": self.dropout,
            "norm_first": self.norm_first,
        }
        self.encoder_blocks = [
            TransformerEncoderBlock(
                **block_args, name=f"encoder_block_{i}", dtype=self.dtype_policy
            )
            for i in range(self.num_layers)
        ]
        self.decoder_blocks = [
            TransformerDecoderBlock(
                **block_args, name=f"decoder_block_{i}", dtype=self.dtype_policy
            )
            for i in range(self.num_layers)
        ]
        if self.norm_first:
            self.encoder_layer_norm = keras.layers.LayerNormalization(
                epsilon=1e-5, name="encoder_layer_norm", dtype=self.dtype_policy
            )
            self.decoder_layer_norm = keras.layers.LayerNormalization(
                epsilon=1e-5, name="decoder_layer_norm", dtype=self.dtype_policy
            )

    def _build_layers(self):
        """Creates every weight now, so that a new or reloaded model is ready to use."""
        tokens = (None, None)
        if self.reverse_source:
            self.source_reversal.build(tokens)
        self.source_embedding.build(tokens)
        self.target_embedding.build(tokens)
        if self.architecture == "rnn":
            features = (None, None, self.embedding_dim)
            for layer in self.encoder_layers:
                layer.build(features)
                features = (None, None, self.units)
            memory = (None, None, self.units) if self.attention else None
            self.decoder.build((None, None, self.embedding_dim), memory)
            self.output_projection.build((None, None, self.decoder.output_dim))
        else:
            features = (None, None, self.embed_dim)
            self._positions("source").build(features)
            self._positions("target").build(features)
            for block in self.encoder_blocks:
                block.build(features)
            for block in self.decoder_blocks:
                block.build(features, features)
            if self.norm_first:
                self.encoder_layer_norm.build(features)
                self.decoder_layer_norm.build(features)
            self.output_projection.build(features)
        self.built = True

    # Shared pieces --------------------------------------------------------------

    @property
    def max_decode_length(self):
        """The most steps `decode_step` can take (Transformer: `max_length`); None if unbounded."""
        return self.max_length if self.architecture == "transformer" else None

    def _prepare_source(self, source):
        """The source ids as int32, reversed within length if asked, and their mask."""
        source = ops.cast(source, "int32")
        if self.reverse_source:
            source = self.source_reversal(source)
        return source, ops.not_equal(source, PAD_ID)

    @staticmethod
    def shift_right(target):
        """The decoder's input for `target`: START, then the target without its last token."""
        target = ops.cast(target, "int32")
        start = ops.full((ops.shape(target)[0], 1), START_ID, dtype="int32")
        return ops.concatenate([start, target[:, :-1]], axis=1)

    def _probabilities(self, outputs):
        logits = ops.cast(self.output_projection(outputs), "float32")
        return ops.softmax(logits, axis=-1)

    def _log_probabilities(self, outputs):
        logits = ops.cast(self.output_projection(outputs), "float32")
        return ops.log_softmax(logits, axis=-1)

    # RNN ----------------------------------------------------------------------------

    def _rnn_encode(self, source, training):
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

    def _rnn_call(self, source, target, training):
        memory, source_mask, initial_states = self._rnn_encode(source, training)
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

    def _rnn_initial_state(self, source):
        memory, source_mask, initial_states = self._rnn_encode(source, False)
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

    def _rnn_decode_step(self, tokens, state):
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

    # Transformer ----------------------------------------------------------------------

    def _positions(self, side):
        if self.positions == "sinusoidal":
            return self.position_encoding
        return getattr(self, f"{side}_position_embedding")

    def _embed(self, tokens, side, training):
        """`embedding(tokens) · √d_model + positions`, then dropout."""
        embedding = getattr(self, f"{side}_embedding")
        x = embedding(tokens) * ops.cast(math.sqrt(self.embed_dim), embedding.compute_dtype)
        return self.embedding_dropout(self._positions(side)(x), training=training)

    def _transformer_encode(self, source, training):
        source, source_mask = self._prepare_source(source)
        x = self._embed(source, "source", training)
        for block in self.encoder_blocks:
            x = block(x, mask=source_mask, training=training)
        if self.norm_first:
            x = self.encoder_layer_norm(x)
        return x, source_mask

    def _transformer_decode(self, tokens, mask, memory, source_mask, training):
        """The decoder stack over `tokens` `(batch, T)`: `(batch, T, d_model)`."""
        y = self._embed(tokens, "target", training)
        for block in self.decoder_blocks:
            y = block(
                y,
                memory,
                decoder_sequence_mask=mask,
                encoder_sequence_mask=source_mask,
                training=training,
            )
        if self.norm_first:
            y = self.decoder_layer_norm(y)
        return y

    def _transformer_call(self, source, target, training):
        memory, source_mask = self._transformer_encode(source, training)
        target_mask = ops.not_equal(ops.cast(target, "int32"), PAD_ID)
        y = self._transformer_decode(
            self.shift_right(target), target_mask, memory, source_mask, training
        )
        return self._probabilities(y)

    def _transformer_initial_state(self, source):
        memory, source_mask = self._transformer_encode(source, False)
        batch = ops.shape(source_mask)[0]
        state = {"source_mask": source_mask, "step": ops.zeros((batch,), dtype="int32")}
        for index, block in enumerate(self.decoder_blocks):
            # The encoder output enters each block only through its cross-attention keys and
            # values: projected once here, not at every step.
            state[f"cross_keys_{index}"], state[f"cross_values_{index}"] = (
                block.cross_attention_cache(memory)
            )
            state[f"self_keys_{index}"], state[f"self_values_{index}"] = (
                block.empty_self_attention_cache(batch, self.max_length)
            )
        return state

    def _transformer_decode_step(self, tokens, state):
        """One position through the decoder stack, with each block's key/value cache."""
        step = ops.minimum(state["step"], self.max_length - 1)  # (batch,)
        embedding = self.target_embedding
        x = embedding(ops.cast(tokens, "int32"))  # (batch, d_model)
        x = x * ops.cast(math.sqrt(self.embed_dim), embedding.compute_dtype)
        # What the positions layer adds at each position: its output for zeros.
        table = self._positions("target")(
            ops.zeros((1, self.max_length, self.embed_dim), dtype=embedding.compute_dtype)
        )[0]
        x = x + ops.take(table, step, axis=0)
        new_state = dict(state)
        cross = None
        for index, block in enumerate(self.decoder_blocks):
            x, (keys, values), cross = block.decode_step(
                x,
                step,
                (state[f"self_keys_{index}"], state[f"self_values_{index}"]),
                (state[f"cross_keys_{index}"], state[f"cross_values_{index}"]),
                state["source_mask"],
            )
            new_state[f"self_keys_{index}"], new_state[f"self_values_{index}"] = keys, values
        if self.norm_first:
            x = self.decoder_layer_norm(x)
        weights = ops.mean(ops.cast(cross, "float32"), axis=1)  # (batch, S), heads averaged
        new_state["step"] = state["step"] + 1
        return self._log_probabilities(x), new_state, weights

    # Public entry points ----------------------------------------------------------------

    def call(self, inputs, training=None):
        if not isinstance(inputs, dict) or set(inputs) != {"source", "target"}:
            raise ValueError(
                "Seq2Seq expects a dict {'source': (batch, S) ids, 'target': (batch, T) ids}, "
                f"got {type(inputs).__name__}"
                + (f" with keys {sorted(inputs)}." if isinstance(inputs, dict) else ".")
            )
        if self.architecture == "rnn":
            return self._rnn_call(inputs["source"], inputs["target"], training)
        return self._transformer_call(inputs["source"], inputs["target"], training)

    def encode(self, source):
        """Reads the source once and returns the decoder's state before its first step.

        Args:
            source: `(batch, S)` int token ids, right-padded with PAD = 0 (not
                reversed: `reverse_source` is applied here as in training).

        Returns:
            A dict of tensors, each with the batch as its first axis:
            `"source_mask"` bool `(batch, S)`; with attention, `"memory"`
            `(batch, S, units)`; with an attention
            that projects them (all but `"luong_dot"`), `"keys"` `(batch, S,
            k)` (`RecurrentDecoder.project_keys`); for an RNN, the decoder
            states by `RecurrentDecoder.state_names` (`"h_0"`, `"c_0"`, …,
            and `"attentional"` with input feeding), each `(batch, units)`;
            for a Transformer, `"step"` int32 `(batch,)` and, for each
            decoder block `i`, its cross-attention keys and values of the
            encoder output, `"cross_keys_i"` and `"cross_values_i"` `(batch,
            S, num_heads, d_k)`, and its self-attention cache
            (`TransformerDecoderBlock.decode_step`), `"self_keys_i"` and
            `"self_values_i"` `(batch, max_length, num_heads, d_k)`.
        """
        source = ops.convert_to_tensor(source)
        if self.architecture == "rnn":
            return self._rnn_initial_state(source)
        return self._transformer_initial_state(source)

    def decode_step(self, tokens, state):
        """One decoder step: the distribution of the next token given the previous one.

        Args:
            tokens: `(batch,)` int, the previous target token (START at the
                first step).
            state: The dict from `encode` or from the previous `decode_step`
                (rows may have been repeated or gathered, as beam search does).

        Returns:
            `(log_probs, state, attention)`: float32 `(batch,
            target_vocab_size)` log-probabilities of the next token, the new
            state (same keys, shapes and dtypes), and float32 `(batch, S)`
            attention weights over the source positions (in the order the
            model read them, so reversed with `reverse_source`; zeros without
            attention; the last decoder block's cross-attention averaged over
            heads for a Transformer).
        """
        tokens = ops.convert_to_tensor(tokens)
        if self.architecture == "rnn":
            return self._rnn_decode_step(tokens, state)
        return self._transformer_decode_step(tokens, state)

    def get_config(self):
        return {
            "source_vocab_size": self.source_vocab_size,
            "target_vocab_size": self.target_vocab_size,
            "architecture": self.architecture,
            "cell": self.cell,
            "units": self.units,
            "num_layers": self.num_layers,
            "bidirectional": self.bidirectional,
            "attention": self.attention,
            "attention_units": self.attention_units,
            "input_feeding": self.input_feeding,
            "reverse_source": self.reverse_source,
            "embedding_dim": self.embedding_dim,
            "embed_dim": self.embed_dim,
            "num_heads": self.num_heads,
            "ff_dim": self.ff_dim,
            "norm_first": self.norm_first,
            "max_length": self.max_length,
            "positions": self.positions,
            "dropout": self.dropout,
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def seq2seq(
    source_vocab_size,
    target_vocab_size,
    *,
    architecture="rnn",
    cell="lstm",
    units=64,
    num_layers=1,
    bidirectional=False,
    attention=None,
    attention_units=None,
    input_feeding=False,
    reverse_source=False,
    embedding_dim=64,
    embed_dim=64,
    num_heads=4,
    ff_dim=128,
    norm_first=False,
    max_length=128,
    positions="sinusoidal",
    dropout=0.0,
    name="seq2seq",
    dtype=None,
):
    """Builds an uncompiled `Seq2Seq` translator from source to target token ids.

    The arguments are those of `Seq2Seq` (see it for each), with the model's
    `name` and `dtype` policy (e.g. `"mixed_float16"`). Arguments of the
    other architecture keep their defaults and are ignored (`cell`, `units`,
    `bidirectional`, `attention`, `input_feeding` and `embedding_dim` are the
    RNN's; `embed_dim`, `num_heads`, `ff_dim`, `norm_first`, `max_length` and
    `positions` the Transformer's), except that a Transformer refuses
    `attention`, `attention_units` and `bidirectional`, which it cannot honour.

    Returns:
        A `Seq2Seq`. Compile it with `compile_for(model, task.targets)` and
        fit it on `{"source": task.x_train, "target": task.y_train}` against
        `task.y_train`; decode with `keras_seq.models.greedy_decode` or
        `beam_search`. It saves to and loads from `.keras` with
        `safe_mode=True`.

    Example:

    >>> model = seq2seq(100, 120, attention="bahdanau", units=32, bidirectional=True)
    >>> model.decoder.state_names
    ('h_0', 'c_0')
    >>> transformer = seq2seq(100, 120, architecture="transformer", num_layers=2)
    >>> transformer.max_decode_length
    128

    References:
        - Sutskever, Vinyals & Le, "Sequence to Sequence Learning with Neural
          Networks", NeurIPS 2014.
        - Bahdanau, Cho & Bengio, "Neural Machine Translation by Jointly
          Learning to Align and Translate", ICLR 2015.
        - Luong, Pham & Manning, "Effective Approaches to Attention-based
          Neural Machine Translation", EMNLP 2015.
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017.
    """
    return Seq2Seq(
        source_vocab_size,
        target_vocab_size,
        architecture=architecture,
        cell=cell,
        units=units,
        num_layers=num_layers,
        bidirectional=bidirectional,
        attention=attention,
        attention_units=attention_units,
        input_feeding=input_feeding,
        reverse_source=reverse_source,
        embedding_dim=embedding_dim,
        embed_dim=embed_dim,
        num_heads=num_heads,
        ff_dim=ff_dim,
        norm_first=norm_first,
        max_length=max_length,
        positions=positions,
        dropout=dropout,
        name=name,
        dtype=dtype,
    )
