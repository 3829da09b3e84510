"""`pointer_network`: outputs that point at input positions (Vinyals et al. 2015).

Built by `keras_seq.models.pointer_network`. It trains with teacher forcing:
`model.fit` gets `{"sequence": x, "pointers": y}` and `y`, and learns each
step's distribution over the input positions. `evaluate` also decodes the
validation split greedily (`PointerNetwork.decode`, which feeds back its own
choices) and reports:

- `pointer_accuracy`: the fraction of output steps that point where the
  target does;
- `sequence_accuracy`: the fraction of sequences decoded exactly (for
  `sort_numbers`, sorted correctly).

Spec example:

    task: {type: sort_numbers, length: 5}
    model: {type: pointer_network, units: 32, cell: lstm}
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from builder_ui.builders import memory
from builder_ui.builders.base import ModelBuilder
from builder_ui.builders.fields import Units
from builder_ui.builders.registry import register_model
from builder_ui.specs import ModelParams

MAX_INPUT_FEATURES = 2**16  # keras_seq.models.pointer.MAX_INPUT_FEATURES
MAX_LAYER_PARAMS = 2**31


class PointerNetworkParams(ModelParams):
    """The pointer network's fields.

    Args:
        units: Width of the encoder, the decoder and the attention.
        cell: `lstm`, `gru` or `cec_lstm` (the 1997 LSTM).
        exclude_chosen: Positions chosen at earlier steps get probability 0
            (in training and decoding), so decoding gives a permutation.
    """

    type: Literal["pointer_network"] = "pointer_network"
    units: Units = 32
    cell: Literal["lstm", "gru", "cec_lstm"] = "lstm"
    exclude_chosen: bool = True


@register_model("pointer_network")
class PointerNetworkBuilder(ModelBuilder):
    params = PointerNetworkParams
    input_kinds = ("numeric",)
    target_kinds = ("pointer",)
    description = "Pointer network (Vinyals et al. 2015): attention over the inputs is the output."

    def check(self, params, task):
        features = task.inputs.features
        if features > MAX_INPUT_FEATURES:
            return [("", f"inputs of {features} features exceed {MAX_INPUT_FEATURES}")]
        weights = 4 * params.units * (features + params.units + 2)
        if weights > MAX_LAYER_PARAMS:
            return [("units", f"the encoder would hold {weights:,} weights, got {params.units}")]
        return []

    def estimate(self, params, task):
        """The layers `build` makes, counted from the fields (see `memory.Part`).

        `keras_seq.models.PointerNetwork`: an encoder and a decoder RNN over the
        input features, the decoder's learned start vector, and the additive
        pointer attention, `vᵀ tanh(W_1 e_j + W_2 d_i)`.
        """
        features, units, cell = task.inputs.features, params.units, params.cell
        n, m = task.inputs.length, task.targets.length
        rnn = memory.recurrent_cell(cell, features, units)
        return [
            memory.Part(
                "encoder", "model.units", rnn, memory.recurrent_activations(cell, n, units)
            ),
            memory.Part(
                "decoder", "model.units", rnn, memory.recurrent_activations(cell, m, units)
            ),
            memory.Part("decoder_inputs", "model.units", features, m * features),
            memory.Part("pointer", "model.units", 2 * units * units + units, m * n * (units + 2)),
        ]

    def build(self, params, task):
        # Keras loads on first use, not on import (specs and the app start without it).
        from keras_seq.models import pointer_network

        return pointer_network(
            task.inputs.features,
            units=params.units,
            cell=params.cell,
            exclude_chosen=params.exclude_chosen,
        )

    def fit_data(self, params, task):
        return (
            {"sequence": task.x_train, "pointers": task.y_train},
            task.y_train,
            {"sequence": task.x_val, "pointers": task.y_val},
            task.y_val,
        )

    def evaluate(self, model, params, prepared):
        metrics = prepared.keras_metrics(model)
        x_val, y_val = prepared.task.x_val, prepared.task.y_val
        batch = max(prepared.spec.train.batch_size, 256)
        decoded = np.concatenate(
            [model.decode(x_val[start : start + batch]) for start in range(0, len(x_val), batch)]
        )
        metrics["pointer_accuracy"] = float(np.mean(decoded == y_val))
        metrics["sequence_accuracy"] = float(np.mean(np.all(decoded == y_val, axis=1)))
        return metrics
