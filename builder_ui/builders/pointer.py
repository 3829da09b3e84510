"""`pointer_network`: outputs that point at input positions (Vinyals et al. 2015).

A short form of a graph (`short_forms`): the encoder's recurrent block and one
`PointerDecoder` block reading its states and its final state, built, checked
and counted by the graph builder's walk (`graph.ShortFormBuilder`), so it opens
on the canvas as the model it trains: `keras_seq.models.PointerNetwork`, the
same weights and outputs as `pointer_network(...)`. Training and scoring
(teacher forcing, pointer and sequence accuracy) are `pointing`'s.

Spec example:

    task: {type: sort_numbers, length: 5}
    model: {type: pointer_network, units: 32, cell: lstm}
"""

from __future__ import annotations

from typing import Literal

from builder_ui.builders.fields import Units
from builder_ui.builders.graph import ShortFormBuilder
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
class PointerNetworkBuilder(ShortFormBuilder):
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
        return super().check(params, task)  # the graph's (`ShortFormBuilder`)
