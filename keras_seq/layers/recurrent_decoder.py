"""The recurrent decoder of a sequence-to-sequence model, with or without attention.

Design: the layer owns its loop over time. Old Keras let a cell receive the
encoder states beside its input through `RNN(..., constants=...)`; Keras 3's
`keras.layers.RNN` has no `constants`, so an attention decoder cannot be a
cell wrapped in it. `RecurrentDecoder` instead holds ordinary Keras cells
(`SimpleRNNCell`, `GRUCell`, `LSTMCell` or keras_seq's `CECLSTMCell`), an
attention layer and the attentional projection, and

- `step(inputs, states, encoder_sequence, encoder_sequence_mask, keys)`
  computes one decoder step for a batch, the memory passed in at every call:
  this is what greedy and beam search call once per token. `keys` are the
  encoder-side half of the attention scores (`U_a h_j`, or `W_a h̄_s`),
  computed once per sentence by `project_keys`;
- `call(...)` runs that step over a whole teacher-forced sequence in the
  loop `keras.layers.RNN` itself runs (the backend's `rnn`: `jax.lax.scan` on
  JAX, a `tf.while_loop` with TensorArrays on TensorFlow), the memory held by
  the step function: one compiled loop, differentiable, also under XLA,
  with no Python work per step once traced. Where the attention does not
  feed back into the recurrence (no attention, or Luong attention without
  input feeding), the loop runs the cells only, and the attention for all
  steps is then one batched computation over the decoder states: the same
  numbers, computed faster.

`keras.ops.scan` would do on JAX, but on TensorFlow it builds a while loop
without `maximum_iterations`, which XLA cannot differentiate (a `fit` with
`jit_compile=True`, the default on GPUs, fails); hence the backend's loop.
Inside that loop the attention is computed from the attention layer's own
weights with elementwise products and rank-2 matrix products (see `_attend`),
since XLA cannot differentiate the `tensordot` of a rank-3 product there;
outside it (the batched path) the attention layer is called as it is. Both
are tested against NumPy versions of the papers' equations. Masking is done
in the step (masked steps keep their states and output zeros), not by the
loop.

No dropout is applied inside the loop (a random mask drawn inside a traced
loop would need a seed state carried through it); a model puts its dropout
on the decoder's inputs and outputs.
"""

from __future__ import annotations

import keras
from keras import ops

# The backend's RNN loop, which `keras.layers.RNN` runs; Keras exports it under
# no public name.
from keras.src import backend as keras_backend

from keras_seq import argument_checks
from keras_seq.layers import masks
from keras_seq.layers.attention_base import additive_score
from keras_seq.layers.bahdanau_attention import BahdanauAttention
from keras_seq.layers.cells import (
    cell_parameter_count,
    check_cell,
    make_cell,
    states_per_layer,
)
from keras_seq.layers.luong_attention import LuongAttention

ATTENTIONS = ("bahdanau", "luong_dot", "luong_general", "luong_concat")
LUONG_ATTENTIONS = ("luong_dot", "luong_general", "luong_concat")


def check_attention(value):
    """Returns `value` if it is None or one of `ATTENTIONS`, else raises."""
    if value is None:
        return None
    if not isinstance(value, str) or value not in ATTENTIONS:
        raise argument_checks.invalid(
            "attention", "None or one of " + ", ".join(repr(a) for a in ATTENTIONS), value
        )
    return value


def check_input_feeding(input_feeding, attention):
    """Input feeding (Luong et al. 2015, Section 3.3) exists only with a Luong attention."""
    input_feeding = argument_checks.boolean("input_feeding", input_feeding)
    if input_feeding and attention not in LUONG_ATTENTIONS:
        raise argument_checks.invalid(
            "input_feeding",
            "False unless `attention` is 'luong_dot', 'luong_general' or 'luong_concat' "
            f"(input feeding passes Luong's attentional vector on; attention={attention!r})",
            input_feeding,
        )
    return input_feeding


def _loop(step_function, inputs, mask, initial_states):
    """Runs `step_function(inputs_t, states) -> (outputs_t, new_states)` over time.

    `inputs` is `(batch, T, d)` and `mask` `(batch, T)`; `step_function`
    receives `(x_t, mask_t)`. The outputs come back stacked batch-major, in
    the structure `step_function` returns. This is the loop
    `keras.layers.RNN` itself runs (`lax.scan` on JAX, a `tf.while_loop` with
    `maximum_iterations` on TensorFlow, which XLA needs to differentiate it;
    `keras.ops.scan` sets no such bound).
    """
    # The loop takes one rank-3 input whose time axis may be unknown when
    # traced: the mask travels as a last feature of the inputs (0 or 1, exact
    # in any float dtype).
    packed = ops.concatenate([inputs, ops.cast(ops.expand_dims(mask, -1), inputs.dtype)], -1)

    def unpacked_step(step_inputs, states):
        x_t, mask_t = step_inputs[:, :-1], ops.cast(step_inputs[:, -1], "bool")
        return step_function((x_t, mask_t), list(states))

    _, outputs, _ = keras_backend.rnn(unpacked_step, packed, initial_states)
    return outputs


@keras.saving.register_keras_serializable(package="keras_seq")
class RecurrentDecoder(keras.layers.Layer):
    """A stack of recurrent cells that reads the encoder through attention, one step at a time.

    At decoder step `t` the input `x_t` is the embedding of the previous
    target token `y_{t−1}` (teacher forcing in `call`, the model's own choice
    in `step`). With `attention`:

    `None`, the encoder–decoder of Sutskever et al. (2014) and Cho et al.
    (2014): everything the decoder knows of the source is its initial state
    (the encoder's final state, the fixed-length vector):

        s_t = f(x_t, s_{t−1}),   output o_t = s_t

    `"bahdanau"` (Bahdanau, Cho & Bengio 2015): the previous state `s_{t−1}`
    queries the encoder states `h_j`; the context `c_t` is fed into the
    recurrence with the input, and the readout sees the new state and the
    context (the paper's `g(y_{t−1}, s_t, c_t)`, where `y_{t−1}` enters
    through `s_t`, without its maxout layer):

        e_tj = v_aᵀ tanh(W_a s_{t−1} + U_a h_j),   α_t = softmax(e_t)
        c_t = Σ_j α_tj h_j
        s_t = f([x_t; c_t], s_{t−1}),   o_t = [s_t; c_t]

    `"luong_dot"`, `"luong_general"`, `"luong_concat"` (Luong, Pham &
    Manning 2015): the new top state `h_t` attends, and the attentional
    vector `h̃_t` is the output:

        h_t = f(x_t, h_{t−1})             ([x_t; h̃_{t−1}] with input feeding)
        a_t = softmax(score(h_t, h̄_s)),  c_t = Σ_s a_ts h̄_s
        h̃_t = tanh(W_c [c_t; h_t]),       o_t = h̃_t

    with `h̃_0 = 0`. `W_c` has no bias, as in the paper. With
    `num_layers > 1` the cells are stacked: layer `l` reads layer `l − 1`'s
    new state, the attention query (`s_{t−1}` or `h_t`) is the top layer's
    `h` and the context enters the first layer. `f` is the cell named by
    `cell`; `s` is its output `h` (an LSTM also carries its memory `c`).

    The state of the decoder is a flat list, in the order of `state_names`:
    `h_0` (and `c_0`), `h_1` (and `c_1`), … for the layers, then
    `attentional` (`h̃_{t−1}`) with input feeding.

    Masks: decoder steps where `decoder_sequence_mask` is False leave every
    state unchanged and output zeros (so padding after a target sequence, or
    before it, changes nothing at the real steps); encoder steps where
    `encoder_sequence_mask` is False get attention weight exactly 0. Both
    default to the Keras masks of their inputs.

    Args:
        units: Positive integer, the size of every cell's state.
        cell: `"simple"` (Elman RNN), `"gru"`, `"lstm"` (`keras.layers`
            cells) or `"cec_lstm"` (the 1997 `CECLSTMCell`). Default `"lstm"`.
        num_layers: Number of stacked cells. Default 1.
        attention: None (default), `"bahdanau"`, `"luong_dot"`,
            `"luong_general"` or `"luong_concat"`.
        attention_units: Hidden size of the additive score network
            (`"bahdanau"` and `"luong_concat"` only). Default None: `units`.
        input_feeding: Feed `h̃_{t−1}` into the first layer with the input
            (Luong attentions only). Default False.

    Call arguments:
        decoder_sequence: `(batch, T, d_in)`, the (shifted, embedded) target.
        encoder_sequence: `(batch, S, d_enc)`, the encoder states `h_j`;
            required with attention, ignored (may be None) without.
        initial_state: Optional list of the layer states (`state_names`
            without `attentional`), each `(batch, units)`: the encoder's
            final state. Default zeros.
        decoder_sequence_mask: Optional boolean `(batch, T)`.
        encoder_sequence_mask: Optional boolean `(batch, S)`.
        return_attention_scores: Also return the weights `α` (zeros without
            attention).
        training: Unused (no dropout inside the loop, see the module).

    Returns:
        The outputs `o_t`, `(batch, T, output_dim)`: `units` features, or
        `units + d_enc` with Bahdanau attention; with
        `return_attention_scores=True` also the weights `(batch, T, S)`.

    Example:

    >>> decoder = RecurrentDecoder(8, cell="gru", attention="bahdanau")
    >>> target = np.random.rand(2, 4, 5).astype("float32")
    >>> memory = np.random.rand(2, 7, 6).astype("float32")
    >>> outputs, weights = decoder(target, memory, return_attention_scores=True)
    >>> tuple(outputs.shape), tuple(weights.shape)
    ((2, 4, 14), (2, 4, 7))
    >>> decoder.state_names
    ('h_0',)

    References:
        - Sutskever, Vinyals & Le, "Sequence to Sequence Learning with Neural
          Networks", NeurIPS 2014.
        - Cho et al., "Learning Phrase Representations using RNN
          Encoder-Decoder for Statistical Machine Translation", EMNLP 2014.
        - Bahdanau, Cho & Bengio, "Neural Machine Translation by Jointly
          Learning to Align and Translate", ICLR 2015, Section 3.1 and
          Appendix A.
        - Luong, Pham & Manning, "Effective Approaches to Attention-based
          Neural Machine Translation", EMNLP 2015, Sections 3 and 3.3.
    """

    def __init__(
        self,
        units,
        cell="lstm",
        num_layers=1,
        attention=None,
        attention_units=None,
        input_feeding=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = argument_checks.positive_int("units", units, argument_checks.MAX_UNITS)
        self.cell = check_cell(cell)
        self.num_layers = argument_checks.positive_int("num_layers", num_layers, 64)
        self.attention = check_attention(attention)
        if attention_units is not None:
            if self.attention not in ("bahdanau", "luong_concat"):
                raise argument_checks.invalid(
                    "attention_units",
                    "None unless `attention` is 'bahdanau' or 'luong_concat' (the additive "
                    f"scores, which have a hidden layer; attention={self.attention!r})",
                    attention_units,
                )
            attention_units = argument_checks.positive_int(
                "attention_units", attention_units, argument_checks.MAX_UNITS
            )
        self.attention_units = attention_units
        self.input_feeding = check_input_feeding(input_feeding, self.attention)
        self.supports_masking = True

    # Structure ---------------------------------------------------------------

    @property
    def state_names(self):
        """The names of the state tensors, in the order `step` takes and returns them."""
        names = []
        for layer in range(self.num_layers):
            names.append(f"h_{layer}")
            if states_per_layer(self.cell) == 2:
                names.append(f"c_{layer}")
        if self.input_feeding:
            names.append("attentional")
        return tuple(names)

    @property
    def num_layer_states(self):
        """How many of the states belong to the cells (the rest is `attentional`)."""
        return self.num_layers * states_per_layer(self.cell)

    @property
    def _luong(self):
        return self.attention in LUONG_ATTENTIONS

    @property
    def _attends_inside_loop(self):
        """Whether the attention feeds the recurrence, so it must run step by step."""
        return self.attention == "bahdanau" or self.input_feeding

    # Build -------------------------------------------------------------------

    def build(self, decoder_sequence_shape, encoder_sequence_shape=None, initial_state_shape=None):
        if len(decoder_sequence_shape) != 3 or decoder_sequence_shape[-1] is None:
            raise ValueError(
                f"{type(self).__name__} expects decoder_sequence of shape (batch, T, features) "
                f"with known features, got shape {tuple(decoder_sequence_shape)}."
            )
        input_dim = int(decoder_sequence_shape[-1])
        memory_dim = None
        if self.attention is not None:
            if encoder_sequence_shape is None:
                raise ValueError(
                    f"{type(self).__name__} with attention={self.attention!r} needs the encoder "
                    "states: call it as decoder(decoder_sequence, encoder_sequence)."
                )
            if len(encoder_sequence_shape) != 3 or encoder_sequence_shape[-1] is None:
                raise ValueError(
                    f"{type(self).__name__} expects encoder_sequence of shape (batch, S, d_enc) "
                    f"with known d_enc, got shape {tuple(encoder_sequence_shape)}."
                )
            memory_dim = int(encoder_sequence_shape[-1])
            if self.attention == "luong_dot" and memory_dim != self.units:
                raise ValueError(
                    f"{type(self).__name__}: attention='luong_dot' scores h_tᵀ h̄_s, so the "
                    f"encoder states need units={self.units} features, got d_enc={memory_dim}; "
                    "use 'luong_general' or 'luong_concat' for different sizes."
                )
        self.memory_dim = memory_dim

        first_input_dim = input_dim
        if self.attention == "bahdanau":
            first_input_dim += memory_dim  # [x_t; c_t]
        if self.input_feeding:
            first_input_dim += self.units  # [x_t; h̃_{t−1}]
        argument_checks.parameter_budget(
            self.name,
            cell_parameter_count(self.cell, first_input_dim, self.units)
            + (self.num_layers - 1) * cell_parameter_count(self.cell, self.units, self.units)
            + (0 if memory_dim is None else (memory_dim + 2 * self.units + 1) * self.units),
        )

        self.cells = []
        dim = first_input_dim
        for layer in range(self.num_layers):
            cell = make_cell(self.cell, self.units, f"cell_{layer}", dtype=self.dtype_policy)
            cell.build((None, dim))
            self.cells.append(cell)
            dim = self.units

        if self.attention == "bahdanau":
            self.attention_layer = BahdanauAttention(
                self.attention_units or self.units, name="attention", dtype=self.dtype_policy
            )
        elif self._luong:
            score = self.attention.removeprefix("luong_")
            units = (self.attention_units or self.units) if score == "concat" else None
            self.attention_layer = LuongAttention(
                score, units=units, name="attention", dtype=self.dtype_policy
            )
            # W_c of h̃_t = tanh(W_c [c_t; h_t]), no bias as in the paper.
            self.attentional_projection = keras.layers.Dense(
                self.units,
                activation="tanh",
                use_bias=False,
                name="attentional_projection",
                dtype=self.dtype_policy,
            )
            self.attentional_projection.build((None, memory_dim + self.units))
        if self.attention is not None:
            self.attention_layer.build((None, self.units), (None, None, memory_dim))
        self.built = True

    @property
    def output_dim(self):
        """Features of each output `o_t` (known once built)."""
        if self.attention == "bahdanau":
            return self.units + self.memory_dim
        return self.units

    # One step ----------------------------------------------------------------

    def get_initial_state(self, batch_size, initial_state=None):
        """The state before step 1: `initial_state` (or zeros) for the layers, `h̃_0 = 0`.

        Args:
            batch_size: Rows of the batch (an integer or a scalar tensor).
            initial_state: Optional list of the layer states, each
                `(batch, units)`, in the order of `state_names`.

        Returns:
            The list of state tensors, in the order of `state_names`.
        """
        zeros = ops.zeros((batch_size, self.units), dtype=self.compute_dtype)
        if initial_state is None:
            states = [zeros] * self.num_layer_states
        else:
            states = [ops.cast(s, self.compute_dtype) for s in initial_state]
            if len(states) != self.num_layer_states:
                layer_state_names = self.state_names[: self.num_layer_states]
                raise ValueError(
                    f"{type(self).__name__} expects an initial_state of "
                    f"{self.num_layer_states} tensors ({', '.join(layer_state_names)}), "
                    f"got {len(states)}."
                )
        if self.input_feeding:
            states = [*states, zeros]
        return states

    def _recur(self, x, layer_states, training):
        """Runs the stacked cells one step; returns the top `h` and the new layer states."""
        per_layer = states_per_layer(self.cell)
        new_states = []
        for layer, cell in enumerate(self.cells):
            state = list(layer_states[layer * per_layer : (layer + 1) * per_layer])
            x, state = cell(x, state, training=training)
            new_states.extend(state if isinstance(state, (list, tuple)) else [state])
        return x, new_states

    def _attentional(self, context, h):
        """Luong's `h̃_t = tanh(W_c [c_t; h_t])`."""
        return self.attentional_projection(ops.concatenate([context, h], axis=-1))

    def project_keys(self, encoder_sequence):
        """The part of the attention scores that depends on the encoder states only.

        Computed once per source sentence rather than once per decoder step
        (Bahdanau et al. 2015, Appendix A.1.2, note the same of `U_a h_j`):
        `U_a h_j` (`"bahdanau"`, `"luong_concat"`), `W_a h̄_s`
        (`"luong_general"`) or `h̄_s` itself (`"luong_dot"`).

        Args:
            encoder_sequence: `(batch, S, d_enc)`.

        Returns:
            The keys, `(batch, S, k)`, for `step`; None without attention.
        """
        if self.attention is None:
            return None
        memory = ops.cast(encoder_sequence, self.compute_dtype)
        if self.attention == "luong_dot":
            return memory
        return ops.matmul(memory, ops.cast(self.attention_layer.key_projection, memory.dtype))

    def _attend(self, query, keys, memory, memory_mask):
        """One query `(batch, d_q)` against the projected keys: `(c_t, α_t)`.

        The attention layer's own score function, with its weights, written
        with elementwise products and rank-2 matrix products only: inside a
        TensorFlow while loop, XLA cannot differentiate the `tensordot` that a
        `(batch, S, d) @ (d, k)` product becomes (its transposes' permutations
        are not compile-time constants there), which is also why the keys
        are projected before the loop.
        """
        if self.attention in ("bahdanau", "luong_concat"):
            layer = self.attention_layer
            projected_query = ops.matmul(query, ops.cast(layer.query_projection, query.dtype))
            scores = additive_score(  # (batch, S)
                ops.expand_dims(projected_query, 1), keys, layer.score_vector, in_loop=True
            )[:, 0, :]
        else:  # dot: h_tᵀ h̄_s;  general: h_tᵀ (W_a h̄_s)
            scores = ops.sum(ops.expand_dims(query, 1) * keys, axis=-1)  # (batch, S)
        weights = masks.masked_softmax(scores, memory_mask)  # (batch, S)
        context = ops.sum(ops.expand_dims(weights, -1) * memory, axis=1)  # (batch, d_enc)
        return context, weights

    def step(
        self,
        inputs,
        states,
        encoder_sequence=None,
        encoder_sequence_mask=None,
        keys=None,
        training=None,
    ):
        """One decoder step for a batch, the equations of the class docstring.

        The layer must be built (call it once, or `build` it). The encoder
        states are passed at every call, so the same method serves the
        training loop, greedy decoding and beam search.

        Args:
            inputs: `(batch, d_in)`, the embedding of the previous token.
            states: The list of state tensors, in the order of
                `state_names` (see `get_initial_state`).
            encoder_sequence: `(batch, S, d_enc)` (attention only).
            encoder_sequence_mask: Optional boolean `(batch, S)`.
            keys: Optional `project_keys(encoder_sequence)`, computed once per
                sentence; computed here when not given.
            training: Passed to the cells.

        Returns:
            `(outputs, new_states, weights)`: `o_t` `(batch, output_dim)`, the
            new state list, and `α_t` `(batch, S)` (None without attention).
        """
        x = ops.cast(inputs, self.compute_dtype)
        layer_states = list(states[: self.num_layer_states])
        memory = None if encoder_sequence is None else ops.cast(encoder_sequence, x.dtype)
        if self.attention is not None:
            if memory is None:
                raise ValueError(
                    f"{type(self).__name__}.step with attention={self.attention!r} needs "
                    "encoder_sequence."
                )
            keys = self.project_keys(memory) if keys is None else ops.cast(keys, x.dtype)
            if encoder_sequence_mask is not None:
                encoder_sequence_mask = ops.cast(encoder_sequence_mask, "bool")
        top_h = (self.num_layers - 1) * states_per_layer(self.cell)
        weights = None
        if self.attention == "bahdanau":
            # c_t from s_{t−1}, the top layer's previous output
            context, weights = self._attend(
                layer_states[top_h], keys, memory, encoder_sequence_mask
            )
            x = ops.concatenate([x, context], axis=-1)  # [x_t; c_t]
        elif self.input_feeding:
            x = ops.concatenate([x, states[-1]], axis=-1)  # [x_t; h̃_{t−1}]
        h, new_states = self._recur(x, layer_states, training)
        if self.attention == "bahdanau":
            outputs = ops.concatenate([h, context], axis=-1)  # [s_t; c_t]
        elif self._luong:
            context, weights = self._attend(h, keys, memory, encoder_sequence_mask)  # from h_t
            outputs = self._attentional(context, h)  # h̃_t
            if self.input_feeding:
                new_states.append(outputs)
        else:
            outputs = h
        return outputs, new_states, weights

    # The whole sequence ------------------------------------------------------

    def call(
        self,
        decoder_sequence,
        encoder_sequence=None,
        initial_state=None,
        decoder_sequence_mask=None,
        encoder_sequence_mask=None,
        return_attention_scores=False,
        training=None,
    ):
        x = ops.cast(decoder_sequence, self.compute_dtype)
        batch, time = ops.shape(x)[0], ops.shape(x)[1]
        memory = None if encoder_sequence is None else ops.cast(encoder_sequence, x.dtype)
        if self.attention is not None and memory is None:
            raise ValueError(
                f"{type(self).__name__} with attention={self.attention!r} needs encoder_sequence."
            )
        if decoder_sequence_mask is None:
            step_mask = ops.ones((batch, time), dtype="bool")
        else:
            step_mask = ops.cast(decoder_sequence_mask, "bool")
        states = self.get_initial_state(batch, initial_state)

        def hold(mask_t, new, old):  # masked steps keep the previous value
            return ops.where(ops.expand_dims(mask_t, -1), new, old)

        if self._attends_inside_loop:
            # The attention feeds the recurrence: the whole step inside the loop.
            keys = self.project_keys(memory)

            def attend_step(step_inputs, old_states):
                x_t, mask_t = step_inputs
                outputs, new_states, weights = self.step(
                    x_t, old_states, memory, encoder_sequence_mask, keys, training
                )
                new_states = [
                    hold(mask_t, n, o) for n, o in zip(new_states, old_states, strict=True)
                ]
                outputs = hold(mask_t, outputs, ops.zeros_like(outputs))
                weights = hold(mask_t, weights, ops.zeros_like(weights))
                return (outputs, weights), new_states

            # (batch, T, output_dim) and (batch, T, S)
            outputs, weights = _loop(attend_step, x, step_mask, states)
        else:
            # The recurrence does not read the attention: loop over the cells
            # only, then attend from all decoder states at once.
            def recur_step(step_inputs, old_states):
                x_t, mask_t = step_inputs
                h, new_states = self._recur(x_t, old_states, training)
                new_states = [
                    hold(mask_t, n, o) for n, o in zip(new_states, old_states, strict=True)
                ]
                return h, new_states

            hidden = _loop(recur_step, x, step_mask, states[: self.num_layer_states])
            if self._luong:  # (batch, T, units)
                context, weights = self.attention_layer(
                    hidden,
                    memory,
                    query_mask=step_mask,
                    value_mask=encoder_sequence_mask,
                    return_attention_scores=True,
                )
                outputs = self._attentional(context, hidden)  # (batch, T, units)
            else:
                outputs = hidden
                weights = None
                if return_attention_scores:
                    source_length = 0 if memory is None else ops.shape(memory)[1]
                    weights = ops.zeros((batch, time, source_length), dtype=x.dtype)
            outputs = ops.where(ops.expand_dims(step_mask, -1), outputs, ops.zeros_like(outputs))
        if return_attention_scores:
            return outputs, weights
        return outputs

    def compute_mask(self, decoder_sequence, previous_mask=None):
        return previous_mask

    def get_config(self):
        return {
            **super().get_config(),
            "units": self.units,
            "cell": self.cell,
            "num_layers": self.num_layers,
            "attention": self.attention,
            "attention_units": self.attention_units,
            "input_feeding": self.input_feeding,
        }
