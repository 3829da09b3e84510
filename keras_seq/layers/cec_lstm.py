"""The 1997 LSTM with its constant error carousel, and its gated descendants.

One cell covers three papers, chosen by two arguments:

| `forget_gate` | `peephole` | cell                                          |
|---------------|------------|-----------------------------------------------|
| False         | False      | Hochreiter & Schmidhuber 1997                 |
| True          | False      | Gers, Schmidhuber & Cummins 2000 (= Keras LSTM)|
| any           | True       | Gers & Schmidhuber 2000, peephole connections |

and a third, `truncated_gradients`, reproduces the 1997 learning rule.
"""

from __future__ import annotations

import keras
from keras import activations, constraints, initializers, ops, regularizers

# The backend's fused LSTM, the function keras.layers.LSTM calls (cuDNN on a GPU); Keras
# exports it under no public name either.
from keras.src import backend as keras_backend

# Keras's RNN layer creates and resets per-sequence dropout masks only for
# cells that inherit this mixin, and exports it under no public name.
from keras.src.layers.rnn.dropout_rnn_cell import DropoutRNNCell

from keras_seq import argument_checks
from keras_seq.layers import torch_lstm

_REGISTER = keras.saving.register_keras_serializable(package="keras_seq")


@_REGISTER
class CECLSTMCell(DropoutRNNCell, keras.layers.Layer):
    """One step of the LSTM of Hochreiter & Schmidhuber (1997).

    A memory cell `c` sits on a linear self-connection of fixed weight 1.0, the
    *constant error carousel*: error that reaches `c_t` flows back to `c_{t-1}`
    unscaled. Multiplicative gates guard it: the input gate decides what is
    written, the output gate what is shown. With `z_* = x_t W_* + h_{t-1} U_* + b_*`:

        i_t = σ(z_i)                       input gate
        o_t = σ(z_o)                       output gate
        c_t = c_{t-1} + i_t ⊙ g(z_c)       the carousel (self-weight 1.0)
        h_t = o_t ⊙ h(c_t)

    `forget_gate=True` adds the gate of Gers, Schmidhuber & Cummins (2000),
    which lets the cell reset itself:

        f_t = σ(z_f)
        c_t = f_t ⊙ c_{t-1} + i_t ⊙ g(z_c)

    `peephole=True` adds the diagonal peephole weights of Gers & Schmidhuber
    (2000): the input and forget gates see `c_{t-1}`, the output gate sees `c_t`:

        i_t = σ(z_i + p_i ⊙ c_{t-1}),  f_t = σ(z_f + p_f ⊙ c_{t-1}),
        o_t = σ(z_o + p_o ⊙ c_t)

    `truncated_gradients=True` is the 1997 learning rule: error reaching the
    net inputs of the gates and of the cell input is not propagated back into
    `h_{t-1}` (nor, with peepholes, into the cell state they read), so earlier
    steps receive error only through the carousel. Without a forget gate,
    `∂c_T/∂c_0` is then exactly the identity. The forward pass is unchanged.

    Weights use the layout of `keras.layers.LSTMCell`: `kernel`
    `(input_dim, n·units)`, `recurrent_kernel` `(units, n·units)` and `bias`
    `(n·units,)`, gate blocks in the order i, f (only with the forget gate),
    c, o; `n` is 3 without and 4 with the forget gate. With
    `forget_gate=True, peephole=False` the cell is a drop-in for Keras's:
    `set_weights(keras_lstm_cell.get_weights())` reproduces its outputs. The
    peephole vectors `input_peephole`, `forget_peephole` and `output_peephole`
    (each `(units,)`) come after those three weights.

    Gate biases. The default initialisation follows the 1997 experiments,
    which started input and output gates negatively biased (the paper used
    values from −1 to −6): `input_gate_bias=-3.0`, `output_gate_bias=-2.0`.
    Without a forget gate nothing ever empties the cell, so an input gate that
    starts half open (bias 0) writes at every step and `c_t` drifts far into
    the saturated range of `h` within a few hundred steps; a closed input gate
    keeps the carousel clean until the network learns what to store, and a
    closed output gate keeps idle cells from disturbing the rest of the net
    (the paper's "abuse problem"). On `long_lag` at lag 200 (16 units, batch
    16) the cell solved the task in one epoch on 10 of 10 seeds with these
    biases and on 3 of 10 with zero biases. Pass
    `input_gate_bias=0.0, output_gate_bias=0.0` to start the way
    `keras.layers.LSTMCell` does; `forget_gate_bias=1.0` matches its
    `unit_forget_bias=True` (Jozefowicz et al. 2015).

    Keras's arguments. The cell also takes every argument of
    `keras.layers.LSTMCell` under Keras's name and with Keras's meaning, so
    `CECLSTMCell(forget_gate=True, **cfg)` is `keras.layers.LSTMCell(**cfg)`:
    `activation` sets both `cell_activation` and `output_activation` (Keras
    uses one function for g and h), `recurrent_activation` sets
    `gate_activation`, and `implementation` (1 or 2) is accepted and has no
    effect (both of Keras's implementations compute the same function; this
    cell always does one matrix product for all gates, like Keras's 2). Giving
    a Keras name and keras_seq's own name for the same thing is refused.

    The bias rule. When neither `bias_initializer` nor `unit_forget_bias` is
    given, the biases start at the 1997 values above, each overridable by
    `input_gate_bias`, `forget_gate_bias` and `output_gate_bias`. When either
    is given, the biases start as Keras's do: every block from
    `bias_initializer` (default zeros), and the forget gate's block at 1.0
    while `unit_forget_bias` is True (its default once the Keras rule applies).
    The two rules cannot be mixed: a gate-bias argument together with
    `bias_initializer` or `unit_forget_bias` is refused, and so is
    `unit_forget_bias=True` without a forget gate. A config written by
    `keras.layers.LSTM.get_config()` names both Keras arguments, so it starts
    exactly like Keras's layer.

    Args:
        units: Positive integer, the number of memory cells (and of outputs).
        forget_gate: Add the forget gate of Gers et al. (2000). Default False.
        peephole: Add diagonal peephole weights from the cell to the gates.
            Default False.
        truncated_gradients: Use the 1997 truncated gradient (see above).
            Default False.
        cell_activation: `g`, squashing the cell input. Default `"tanh"`. The
            1997 paper used a logistic sigmoid scaled to [−2, 2].
        output_activation: `h`, squashing the cell state before the output gate.
            Default `"tanh"`. The 1997 paper used a logistic sigmoid scaled to
            [−1, 1].
        gate_activation: The gate nonlinearity σ. Default `"sigmoid"`.
        use_bias: Whether the gates and the cell input have biases.
        kernel_initializer: Initializer for `kernel`.
        recurrent_initializer: Initializer for `recurrent_kernel`.
        peephole_initializer: Initializer for the peephole vectors.
        input_gate_bias: Initial bias of the input gate. Default (None) −3.0.
        forget_gate_bias: Initial bias of the forget gate. Default (None) 1.0.
        output_gate_bias: Initial bias of the output gate. Default (None) −2.0.
        kernel_regularizer, recurrent_regularizer, bias_regularizer, peephole_regularizer:
            Optional weight regularizers.
        kernel_constraint, recurrent_constraint, bias_constraint, peephole_constraint:
            Optional weight constraints.
        dropout: Fraction of the inputs to drop, one mask per sequence.
        recurrent_dropout: Fraction of `h_{t-1}` to drop, one mask per sequence
            (Gal & Ghahramani 2016).
        seed: Seed for the dropout masks.
        activation: Keras's name for `cell_activation` and `output_activation`
            together. Default None (use those).
        recurrent_activation: Keras's name for `gate_activation`. Default None.
        bias_initializer: Keras's bias initializer; giving it (or
            `unit_forget_bias`) selects Keras's bias rule (see above).
        unit_forget_bias: With Keras's rule, start the forget gate's bias at
            1.0. Default None (True once Keras's rule applies).
        implementation: 1 or 2, as for `keras.layers.LSTMCell`; no effect.

    Call arguments:
        inputs: `(batch, input_dim)`, the input at one step.
        states: `[h_{t-1}, c_{t-1}]`, each `(batch, units)`.
        training: Whether dropout is applied.

    Returns:
        `(h_t, [h_t, c_t])`.

    Example:

    >>> cell = CECLSTMCell(8)
    >>> layer = keras.layers.RNN(cell)
    >>> tuple(layer(np.zeros((2, 5, 3))).shape)
    (2, 8)

    References:
        - Hochreiter & Schmidhuber, "Long Short-Term Memory", Neural
          Computation 9(8), 1997.
        - Gers, Schmidhuber & Cummins, "Learning to Forget: Continual
          Prediction with LSTM", Neural Computation 12(10), 2000.
        - Gers & Schmidhuber, "Recurrent Nets that Time and Count", IJCNN 2000.
    """

    def __init__(
        self,
        units,
        forget_gate=False,
        peephole=False,
        truncated_gradients=False,
        cell_activation="tanh",
        output_activation="tanh",
        gate_activation="sigmoid",
        use_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        peephole_initializer="glorot_uniform",
        input_gate_bias=None,
        forget_gate_bias=None,
        output_gate_bias=None,
        kernel_regularizer=None,
        recurrent_regularizer=None,
        bias_regularizer=None,
        peephole_regularizer=None,
        kernel_constraint=None,
        recurrent_constraint=None,
        bias_constraint=None,
        peephole_constraint=None,
        dropout=0.0,
        recurrent_dropout=0.0,
        seed=None,
        activation=None,
        recurrent_activation=None,
        bias_initializer=None,
        unit_forget_bias=None,
        implementation=2,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = argument_checks.positive_int("units", units, argument_checks.MAX_UNITS)
        self.forget_gate = argument_checks.boolean("forget_gate", forget_gate)
        self.peephole = argument_checks.boolean("peephole", peephole)
        self.truncated_gradients = argument_checks.boolean(
            "truncated_gradients", truncated_gradients
        )
        self.use_bias = argument_checks.boolean("use_bias", use_bias)
        # Keras's `activation` is both g and h; its `recurrent_activation` is σ.
        self.activation = _alias("activation", activation, cell_activation, output_activation)
        self.recurrent_activation = _alias(
            "recurrent_activation", recurrent_activation, gate_activation, default="sigmoid"
        )
        self.cell_activation = activations.get(activation or cell_activation)
        self.output_activation = activations.get(activation or output_activation)
        self.gate_activation = activations.get(recurrent_activation or gate_activation)

        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.peephole_initializer = initializers.get(peephole_initializer)
        self.input_gate_bias = _optional_float("input_gate_bias", input_gate_bias)
        self.forget_gate_bias = _optional_float("forget_gate_bias", forget_gate_bias)
        self.output_gate_bias = _optional_float("output_gate_bias", output_gate_bias)
        self.unit_forget_bias = _keras_bias_rule(
            forget_gate=self.forget_gate,
            bias_initializer=bias_initializer,
            unit_forget_bias=unit_forget_bias,
            gate_biases={
                "input_gate_bias": self.input_gate_bias,
                "forget_gate_bias": self.forget_gate_bias,
                "output_gate_bias": self.output_gate_bias,
            },
        )
        self.bias_initializer = (
            None if bias_initializer is None else initializers.get(bias_initializer)
        )
        if implementation not in (1, 2):
            raise ValueError(
                f"`implementation` must be 1 or 2 (as for keras.layers.LSTM), got "
                f"{implementation!r}."
            )
        self.implementation = implementation

        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.peephole_regularizer = regularizers.get(peephole_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.recurrent_constraint = constraints.get(recurrent_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.peephole_constraint = constraints.get(peephole_constraint)

        self.dropout = argument_checks.rate("dropout", dropout)
        self.recurrent_dropout = argument_checks.rate("recurrent_dropout", recurrent_dropout)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed=seed)

        self.state_size = [self.units, self.units]
        self.output_size = self.units

    @property
    def gate_names(self):
        """The blocks of `kernel`, `recurrent_kernel` and `bias`, in order."""
        return ("i", "f", "c", "o") if self.forget_gate else ("i", "c", "o")

    def build(self, input_shape):
        if len(input_shape) != 2 or input_shape[-1] is None:
            raise ValueError(
                f"{type(self).__name__} expects one step of shape (batch, features) with "
                f"a known number of features, got shape {tuple(input_shape)}. "
                "Its RNN layer expects (batch, time, features)."
            )
        input_dim = int(input_shape[-1])
        n = len(self.gate_names)
        argument_checks.parameter_budget(
            self.name, n * self.units * (input_dim + self.units + 1) + 3 * self.units
        )
        self.kernel = self.add_weight(
            shape=(input_dim, n * self.units),
            name="kernel",
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        self.recurrent_kernel = self.add_weight(
            shape=(self.units, n * self.units),
            name="recurrent_kernel",
            initializer=self.recurrent_initializer,
            regularizer=self.recurrent_regularizer,
            constraint=self.recurrent_constraint,
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                shape=(n * self.units,),
                name="bias",
                initializer=self._gate_bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )
        if self.peephole:
            self.input_peephole = self._add_peephole("input_peephole")
            if self.forget_gate:
                self.forget_peephole = self._add_peephole("forget_peephole")
            self.output_peephole = self._add_peephole("output_peephole")
        self.built = True

    def _add_peephole(self, name):
        return self.add_weight(
            shape=(self.units,),
            name=name,
            initializer=self.peephole_initializer,
            regularizer=self.peephole_regularizer,
            constraint=self.peephole_constraint,
        )

    @property
    def keras_bias(self):
        """Whether the bias starts the way `keras.layers.LSTMCell`'s does (see the class)."""
        return self.bias_initializer is not None or self.unit_forget_bias is not None

    def _gate_bias_initializer(self, shape, dtype=None):
        if self.keras_bias:
            # Keras's rule: every block from `bias_initializer` (zeros by default), the
            # forget gate's block ones when `unit_forget_bias` (True by default).
            initializer = self.bias_initializer or initializers.Zeros()
            blocks = [
                ops.ones((self.units,), dtype=dtype)
                if gate == "f" and self.unit_forget_bias is not False
                else initializer((self.units,), dtype=dtype)
                for gate in self.gate_names
            ]
            return ops.concatenate(blocks)
        given = {
            "i": self.input_gate_bias,
            "f": self.forget_gate_bias,
            "o": self.output_gate_bias,
        }
        return ops.concatenate(
            [
                ops.full(
                    (self.units,),
                    _BIAS_1997[gate] if given.get(gate) is None else given[gate],
                    dtype=dtype,
                )
                for gate in self.gate_names
            ]
        )

    def call(self, inputs, states, training=False):
        h_tm1, c_tm1 = states[0], states[1]

        if training and self.dropout > 0.0:
            inputs = inputs * self.get_dropout_mask(inputs)
        if training and self.recurrent_dropout > 0.0:
            h_tm1 = h_tm1 * self.get_recurrent_dropout_mask(h_tm1)

        # The 1997 rule: no error flows from the gates and the cell input into
        # the previous step's output; it reaches the past only via the carousel.
        if self.truncated_gradients:
            h_tm1 = ops.stop_gradient(h_tm1)
            c_seen = ops.stop_gradient(c_tm1)
        else:
            c_seen = c_tm1

        z = ops.matmul(inputs, self.kernel) + ops.matmul(h_tm1, self.recurrent_kernel)
        if self.use_bias:
            z = ops.add(z, self.bias)
        # (batch, units) each, in the order of `gate_names`.
        if self.forget_gate:
            z_i, z_f, z_c, z_o = ops.split(z, 4, axis=-1)
        else:
            z_i, z_c, z_o = ops.split(z, 3, axis=-1)

        if self.peephole:
            z_i = z_i + self.input_peephole * c_seen
        i = self.gate_activation(z_i)
        cell_input = i * self.cell_activation(z_c)

        if self.forget_gate:
            if self.peephole:
                z_f = z_f + self.forget_peephole * c_seen
            c = self.gate_activation(z_f) * c_tm1 + cell_input
        else:
            c = c_tm1 + cell_input  # the constant error carousel

        if self.peephole:
            c_out = ops.stop_gradient(c) if self.truncated_gradients else c
            z_o = z_o + self.output_peephole * c_out
        h = self.gate_activation(z_o) * self.output_activation(c)
        return h, [h, c]

    def get_initial_state(self, batch_size=None):
        return [ops.zeros((batch_size, d), dtype=self.compute_dtype) for d in self.state_size]

    def fused_weights(self):
        """`(kernel, recurrent_kernel, bias)` in `keras.layers.LSTMCell`'s layout (i, f, c, o).

        With the forget gate these are the cell's own weights (a zero bias without
        `use_bias`). The 1997 cell gets a forget gate pinned open: zero weights into
        it and the bias `PINNED_FORGET_BIAS`, for which σ is exactly 1.0 in float32,
        bfloat16 and float16, so that `c_t = 1.0 · c_{t-1} + i_t ⊙ g(z_c)` is the
        carousel to the last bit. The pinned blocks are constants: no gradient
        reaches them, and nothing trains them.
        """
        units = self.units
        dtype = self.kernel.dtype
        blocks = len(self.gate_names)
        bias = self.bias if self.use_bias else ops.zeros((blocks * units,), dtype=dtype)
        if self.forget_gate:
            return self.kernel, self.recurrent_kernel, bias

        def open_forget_gate(weights, forget_block):
            z_i, z_c, z_o = ops.split(weights, 3, axis=-1)
            return ops.concatenate([z_i, forget_block, z_c, z_o], axis=-1)

        def zeros_like(weights):
            return ops.zeros((weights.shape[0], units), dtype=dtype)

        return (
            open_forget_gate(self.kernel, zeros_like(self.kernel)),
            open_forget_gate(self.recurrent_kernel, zeros_like(self.recurrent_kernel)),
            open_forget_gate(bias, ops.full((units,), PINNED_FORGET_BIAS, dtype=dtype)),
        )

    def get_config(self):
        config = {
            "units": self.units,
            "forget_gate": self.forget_gate,
            "peephole": self.peephole,
            "truncated_gradients": self.truncated_gradients,
            # Under Keras's names (`activation`, `recurrent_activation`) keras_seq's own
            # were left at their defaults; the config says so, as the constructor got them.
            "cell_activation": _own_activation(self.activation, self.cell_activation, "tanh"),
            "output_activation": _own_activation(self.activation, self.output_activation, "tanh"),
            "gate_activation": _own_activation(
                self.recurrent_activation, self.gate_activation, "sigmoid"
            ),
            "use_bias": self.use_bias,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
            "peephole_initializer": initializers.serialize(self.peephole_initializer),
            "input_gate_bias": self.input_gate_bias,
            "forget_gate_bias": self.forget_gate_bias,
            "output_gate_bias": self.output_gate_bias,
            "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
            "recurrent_regularizer": regularizers.serialize(self.recurrent_regularizer),
            "bias_regularizer": regularizers.serialize(self.bias_regularizer),
            "peephole_regularizer": regularizers.serialize(self.peephole_regularizer),
            "kernel_constraint": constraints.serialize(self.kernel_constraint),
            "recurrent_constraint": constraints.serialize(self.recurrent_constraint),
            "bias_constraint": constraints.serialize(self.bias_constraint),
            "peephole_constraint": constraints.serialize(self.peephole_constraint),
            "dropout": self.dropout,
            "recurrent_dropout": self.recurrent_dropout,
            "seed": self.seed,
            "activation": _serialize_activation(self.activation),
            "recurrent_activation": _serialize_activation(self.recurrent_activation),
            "bias_initializer": (
                None
                if self.bias_initializer is None
                else initializers.serialize(self.bias_initializer)
            ),
            "unit_forget_bias": self.unit_forget_bias,
            "implementation": self.implementation,
        }
        return {**super().get_config(), **config}


# σ(30) = 1 − 9.4e-14: 1.0 exactly once rounded to float32 (whose spacing below 1 is
# 6e-8), and in float16 and bfloat16, where e^-30 itself rounds away.
PINNED_FORGET_BIAS = 30.0

# The 1997 experiments' initial gate biases (see `CECLSTMCell`), used unless the
# gate-bias arguments or Keras's `bias_initializer`/`unit_forget_bias` are given.
_BIAS_1997 = {"i": -3.0, "f": 1.0, "c": 0.0, "o": -2.0}


def _optional_float(name, value):
    return None if value is None else argument_checks.finite_float(name, value)


def _alias(name, value, *own, default="tanh"):
    """Check a Keras activation name against keras_seq's own names for it; returns it.

    `activation` (Keras) sets `cell_activation` and `output_activation`;
    `recurrent_activation` sets `gate_activation`. Giving both spellings is
    refused unless keras_seq's are left at their defaults.
    """
    if value is None:
        return None
    activations.get(value)  # an unknown name fails here, naming it
    if any(activations.get(item) is not activations.get(default) for item in own):
        raise ValueError(
            f"`{name}` is Keras's name for an activation keras_seq also sets under its own "
            f"name; give one of them, got {name}={value!r} and "
            f"{', '.join(repr(item) for item in own)}."
        )
    return value


def _own_activation(keras_name, function, default):
    return default if keras_name is not None else activations.serialize(function)


def _serialize_activation(value):
    return None if value is None else activations.serialize(activations.get(value))


def _keras_bias_rule(*, forget_gate, bias_initializer, unit_forget_bias, gate_biases):
    """Validate `unit_forget_bias` and the choice between the two bias rules; returns it."""
    if unit_forget_bias is not None:
        unit_forget_bias = argument_checks.boolean("unit_forget_bias", unit_forget_bias)
        if unit_forget_bias and not forget_gate:
            raise ValueError(
                "`unit_forget_bias` sets the forget gate's bias, and this cell has none "
                "(forget_gate=False); got unit_forget_bias=True."
            )
    if bias_initializer is None and unit_forget_bias is None:
        return None
    given = {name: value for name, value in gate_biases.items() if value is not None}
    if given:
        name, value = next(iter(given.items()))
        raise ValueError(
            f"`{name}` and Keras's `bias_initializer`/`unit_forget_bias` both set the initial "
            f"biases; give one rule, got {name}={value!r} with "
            f"bias_initializer={bias_initializer!r}, unit_forget_bias={unit_forget_bias!r}."
        )
    return unit_forget_bias


@_REGISTER
class CECLSTM(keras.layers.RNN):
    """The 1997 LSTM (and its gated variants) over a whole sequence.

    A `keras.layers.RNN` over `CECLSTMCell`; see the cell for the equations,
    the variants (`forget_gate`, `peephole`, `truncated_gradients`) and the
    gate-bias initialisation. Everything a Keras RNN does works here:
    `return_sequences`, `return_state`, `go_backwards`, `stateful`, `unroll`,
    dropout, `initial_state`, masks (right- or left-padded), stacking and
    `keras.layers.Bidirectional`.

    Args:
        units: Positive integer, the number of memory cells.
        forget_gate, peephole, truncated_gradients: As for `CECLSTMCell`, and so
            are `cell_activation`, `output_activation`, `gate_activation`,
            `use_bias`, `kernel_initializer`, `recurrent_initializer`,
            `peephole_initializer`, `input_gate_bias`, `forget_gate_bias`,
            `output_gate_bias`, `*_regularizer`, `*_constraint`, `dropout`,
            `recurrent_dropout`, `seed`, and Keras's names `activation`,
            `recurrent_activation`, `bias_initializer`, `unit_forget_bias` and
            `implementation`: `CECLSTM(forget_gate=True, **cfg)` is
            `keras.layers.LSTM(**cfg)` (the cell gives the bias rule).
        activity_regularizer: Regularizer applied to the layer's output.
        return_sequences: Return the output at every step, not only the last.
        return_state: Also return the final `h` and `c`.
        go_backwards: Process the sequence backwards (and return the reversed
            output sequence).
        stateful: Carry the final states of one batch into the next.
        unroll: Unroll the loop (faster for short, fixed-length sequences).
        zero_output_for_mask: With `return_sequences`, emit zeros (rather than
            the last valid output) at masked steps.
        use_cudnn: As for `keras.layers.LSTM`: `"auto"` (default) runs on the
            backend's fused LSTM kernel (cuDNN on a GPU; PyTorch's own CPU kernel
            on the torch backend, `keras_seq.layers.torch_lstm`) when the cell
            allows it (see `fused_kernel_refusal`) and the backend can, else the cell's own
            loop; True demands the kernel (an error where it cannot run); False
            always runs the cell's own loop. The 1997 cell runs on the kernel
            with its forget gate pinned open (`CECLSTMCell.fused_weights`).

    Call arguments:
        inputs: `(batch, time, features)`.
        mask: Optional boolean `(batch, time)`; False steps leave the state
            unchanged.
        training: Whether dropout is applied.
        initial_state: Optional `[h_0, c_0]`, each `(batch, units)`.

    Returns:
        `(batch, units)`, or `(batch, time, units)` with `return_sequences`;
        followed by `h_T` and `c_T` with `return_state`.

    Example:

    >>> x = np.random.rand(4, 20, 3).astype("float32")
    >>> tuple(CECLSTM(8)(x).shape)  # Hochreiter & Schmidhuber 1997
    (4, 8)
    >>> tuple(CECLSTM(8, forget_gate=True, return_sequences=True)(x).shape)
    (4, 20, 8)

    References:
        - Hochreiter & Schmidhuber, "Long Short-Term Memory", 1997.
        - Gers, Schmidhuber & Cummins, "Learning to Forget", 2000.
        - Gers & Schmidhuber, "Recurrent Nets that Time and Count", 2000.
    """

    def __init__(
        self,
        units,
        forget_gate=False,
        peephole=False,
        truncated_gradients=False,
        cell_activation="tanh",
        output_activation="tanh",
        gate_activation="sigmoid",
        use_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        peephole_initializer="glorot_uniform",
        input_gate_bias=None,
        forget_gate_bias=None,
        output_gate_bias=None,
        kernel_regularizer=None,
        recurrent_regularizer=None,
        bias_regularizer=None,
        peephole_regularizer=None,
        kernel_constraint=None,
        recurrent_constraint=None,
        bias_constraint=None,
        peephole_constraint=None,
        dropout=0.0,
        recurrent_dropout=0.0,
        seed=None,
        activation=None,
        recurrent_activation=None,
        bias_initializer=None,
        unit_forget_bias=None,
        implementation=2,
        activity_regularizer=None,
        return_sequences=False,
        return_state=False,
        go_backwards=False,
        stateful=False,
        unroll=False,
        zero_output_for_mask=False,
        use_cudnn="auto",
        **kwargs,
    ):
        if use_cudnn not in ("auto", True, False):
            raise ValueError(
                f"`use_cudnn` must be 'auto', True or False, got use_cudnn={use_cudnn!r}."
            )
        cell = CECLSTMCell(
            units=units,
            forget_gate=forget_gate,
            peephole=peephole,
            truncated_gradients=truncated_gradients,
            cell_activation=cell_activation,
            output_activation=output_activation,
            gate_activation=gate_activation,
            use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            peephole_initializer=peephole_initializer,
            input_gate_bias=input_gate_bias,
            forget_gate_bias=forget_gate_bias,
            output_gate_bias=output_gate_bias,
            kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer,
            peephole_regularizer=peephole_regularizer,
            kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint,
            peephole_constraint=peephole_constraint,
            dropout=dropout,
            recurrent_dropout=recurrent_dropout,
            seed=seed,
            activation=activation,
            recurrent_activation=recurrent_activation,
            bias_initializer=bias_initializer,
            unit_forget_bias=unit_forget_bias,
            implementation=implementation,
            dtype=kwargs.get("dtype"),
            trainable=kwargs.get("trainable", True),
            name="cec_lstm_cell",
        )
        super().__init__(
            cell,
            return_sequences=argument_checks.boolean("return_sequences", return_sequences),
            return_state=argument_checks.boolean("return_state", return_state),
            go_backwards=argument_checks.boolean("go_backwards", go_backwards),
            stateful=argument_checks.boolean("stateful", stateful),
            unroll=argument_checks.boolean("unroll", unroll),
            zero_output_for_mask=argument_checks.boolean(
                "zero_output_for_mask", zero_output_for_mask
            ),
            activity_regularizer=activity_regularizer,
            **kwargs,
        )
        self.use_cudnn = use_cudnn
        self.input_spec = keras.layers.InputSpec(ndim=3)
        if use_cudnn is True and self.fused_kernel_refusal() is not None:
            raise ValueError(
                f"use_cudnn=True asks for the fused LSTM kernel, which this cell cannot run "
                f"on: {self.fused_kernel_refusal()}. Pass use_cudnn='auto' to run the cell's "
                "own loop."
            )
        if (
            use_cudnn is not False
            and self.fused_kernel_refusal() is None
            and keras.backend.backend() == "tensorflow"
            and keras_backend.cudnn_ok(
                self.cell.cell_activation, self.cell.gate_activation, self.unroll, True
            )
        ):
            self.supports_jit = False  # cuDNN's ops are not XLA's (as for keras.layers.LSTM)

    def fused_kernel_refusal(self):
        """Why the backend's fused LSTM kernel cannot compute this layer, or None if it can.

        The kernel (`keras.layers.LSTM`'s, cuDNN on a GPU) computes the cell of
        Gers et al. (2000) with tanh for g and h and a logistic σ, dropout on the
        inputs only. So it serves `forget_gate=True` and, with the forget gate
        pinned open (`CECLSTMCell.fused_weights`), the 1997 cell; not peepholes,
        truncated gradients, recurrent dropout, other activations, or
        `use_cudnn=False`. The backend may still decline at call time (no GPU,
        a mask cuDNN cannot take), and the layer then runs its own loop.
        """
        cell = self.cell
        reasons = [
            (self.use_cudnn is False, "use_cudnn=False"),
            (cell.peephole, "peephole connections"),
            (cell.truncated_gradients, "truncated gradients"),
            (cell.recurrent_dropout > 0, "recurrent dropout"),
            (
                cell.cell_activation is not activations.tanh
                or cell.output_activation is not activations.tanh
                or cell.gate_activation is not activations.sigmoid,
                "activations other than tanh (g, h) and sigmoid (gates)",
            ),
        ]
        found = [reason for refused, reason in reasons if refused]
        return ", ".join(found) if found else None

    def inner_loop(self, sequences, initial_state, mask, training=False):
        if keras.tree.is_nested(mask):
            mask = mask[0]
        if self.fused_kernel_refusal() is None:
            cell = self.cell
            inputs = sequences
            if training and cell.dropout:  # one mask per sequence, as the cell's loop draws
                drop = ops.expand_dims(cell.get_dropout_mask(sequences[:, 0, :]), axis=1)
                inputs = sequences * ops.broadcast_to(drop, ops.shape(sequences))
            kernel, recurrent_kernel, bias = cell.fused_weights()
            try:
                return _fused_lstm(
                    inputs,
                    initial_state[0],
                    initial_state[1],
                    mask,
                    kernel=kernel,
                    recurrent_kernel=recurrent_kernel,
                    bias=bias,
                    activation=cell.cell_activation,
                    recurrent_activation=cell.gate_activation,
                    return_sequences=self.return_sequences,
                    go_backwards=self.go_backwards,
                    unroll=self.unroll,
                    zero_output_for_mask=self.zero_output_for_mask,
                    final_cell_state=self.return_state or self.stateful,
                )
            except NotImplementedError:
                pass  # the backend declined (no GPU, a mask it cannot take)
        if self.use_cudnn is True:
            raise ValueError(
                "use_cudnn=True asks for the fused LSTM kernel, and this backend cannot run "
                "it here (it needs a GPU with cuDNN, and right-padded masks). Pass "
                "use_cudnn='auto' to fall back to the cell's own loop."
            )
        return super().inner_loop(sequences, initial_state, mask=mask, training=training)

    def build(self, sequences_shape, initial_state_shape=None):
        if len(sequences_shape) != 3:
            raise ValueError(
                f"{type(self).__name__} expects inputs of shape (batch, time, features), "
                f"got shape {tuple(sequences_shape)}."
            )
        super().build(sequences_shape, initial_state_shape)

    def call(self, sequences, initial_state=None, mask=None, training=False):
        return super().call(sequences, mask=mask, training=training, initial_state=initial_state)

    # The cell's arguments, read from the cell (as `keras.layers.LSTM` reads its own).
    @property
    def units(self):
        return self.cell.units

    @property
    def forget_gate(self):
        return self.cell.forget_gate

    @property
    def peephole(self):
        return self.cell.peephole

    @property
    def truncated_gradients(self):
        return self.cell.truncated_gradients

    @property
    def cell_activation(self):
        return self.cell.cell_activation

    @property
    def output_activation(self):
        return self.cell.output_activation

    @property
    def gate_activation(self):
        return self.cell.gate_activation

    @property
    def use_bias(self):
        return self.cell.use_bias

    @property
    def kernel_initializer(self):
        return self.cell.kernel_initializer

    @property
    def recurrent_initializer(self):
        return self.cell.recurrent_initializer

    @property
    def peephole_initializer(self):
        return self.cell.peephole_initializer

    @property
    def input_gate_bias(self):
        return self.cell.input_gate_bias

    @property
    def forget_gate_bias(self):
        return self.cell.forget_gate_bias

    @property
    def output_gate_bias(self):
        return self.cell.output_gate_bias

    @property
    def kernel_regularizer(self):
        return self.cell.kernel_regularizer

    @property
    def recurrent_regularizer(self):
        return self.cell.recurrent_regularizer

    @property
    def bias_regularizer(self):
        return self.cell.bias_regularizer

    @property
    def peephole_regularizer(self):
        return self.cell.peephole_regularizer

    @property
    def kernel_constraint(self):
        return self.cell.kernel_constraint

    @property
    def recurrent_constraint(self):
        return self.cell.recurrent_constraint

    @property
    def bias_constraint(self):
        return self.cell.bias_constraint

    @property
    def peephole_constraint(self):
        return self.cell.peephole_constraint

    @property
    def dropout(self):
        return self.cell.dropout

    @property
    def recurrent_dropout(self):
        return self.cell.recurrent_dropout

    @property
    def seed(self):
        return self.cell.seed

    @property
    def activation(self):
        return self.cell.activation

    @property
    def recurrent_activation(self):
        return self.cell.recurrent_activation

    @property
    def bias_initializer(self):
        return self.cell.bias_initializer

    @property
    def unit_forget_bias(self):
        return self.cell.unit_forget_bias

    @property
    def implementation(self):
        return self.cell.implementation

    def get_config(self):
        cell_config = self.cell.get_config()  # exactly the cell's constructor arguments
        config = {k: v for k, v in cell_config.items() if k not in ("name", "trainable", "dtype")}
        config["activity_regularizer"] = regularizers.serialize(self.activity_regularizer)
        config["use_cudnn"] = self.use_cudnn
        base_config = super().get_config()
        del base_config["cell"]
        return {**base_config, **config}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _fused_lstm(
    inputs,
    initial_state_h,
    initial_state_c,
    mask,
    *,
    zero_output_for_mask=False,
    final_cell_state=True,
    **kwargs,
):
    """The backend's fused LSTM (`keras.layers.LSTM`'s); raises NotImplementedError when it
    cannot run (TensorFlow and JAX without a GPU). On PyTorch on a CPU, where Keras's
    function is a Python loop, PyTorch's own CPU kernel runs instead when it can
    (`keras_seq.layers.torch_lstm`), given the layer's `zero_output_for_mask` and whether
    it reads the final cell state (Keras's function takes neither). A function of its
    own so tests can spy."""
    if keras.backend.backend() == "torch":
        native = torch_lstm.lstm(
            inputs,
            initial_state_h,
            initial_state_c,
            mask,
            kernel=kwargs["kernel"],
            recurrent_kernel=kwargs["recurrent_kernel"],
            bias=kwargs["bias"],
            return_sequences=kwargs["return_sequences"],
            go_backwards=kwargs["go_backwards"],
            unroll=kwargs["unroll"],
            zero_output_for_mask=zero_output_for_mask,
            final_cell_state=final_cell_state,
        )
        if native is not None:
            return native
    return keras_backend.lstm(inputs, initial_state_h, initial_state_c, mask, **kwargs)
