"""`conv_lstm`: next-frame prediction with a ConvLSTM (Shi et al. 2015), or its flat baseline.

    layout conv:  frames ─▶ L × ConvLSTM2D ─▶ [H_T of every layer] ─▶ Conv2D ─▶ future frames
    layout flat:  frames ─▶ flatten each ─▶ LSTM ─▶ Dense ─▶ future frames

A short form of a graph (`short_forms._next_frame_nodes`): the layers of
`keras_seq.models.conv_lstm_predictor` and `frame_lstm_predictor`, named as
they name them, built, checked and counted by the graph builder's walk
(`graph.ShortFormBuilder`), so it opens on the canvas as the model it trains.
One model type with a `layout` field rather than two types, because the
comparison the paper makes is at an equal budget: `layout: flat` is the
frame-flattening LSTM (the FC-LSTM of Srivastava et al. 2015) whose `units`
are by default `keras_seq.models.matched_units` of the ConvLSTM the same
fields describe. So a sweep over `model.layout: [conv, flat]` trains the two
at the same parameter count on the same data; `units` sets the flat LSTM's
size by hand instead.

Trained with per-pixel binary cross-entropy (the outputs are sigmoids; Shi et
al. used cross-entropy on Moving MNIST), with the mean squared error as the
metric, as every model of future frames (`ModelBuilder.compile_args`).

Spec example:

    task: {type: moving_shapes, n: 1000}
    model: {type: conv_lstm, filters: 16, num_layers: 2, kernel_size: 3}
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from builder_ui.builders import short_forms
from builder_ui.builders.fields import Layers, Units
from builder_ui.builders.graph import ShortFormBuilder
from builder_ui.builders.registry import register_model
from builder_ui.specs import ModelParams

# Mirrors keras_seq.models.next_frame.MAX_KERNEL_SIZE (checked by a test).
MAX_KERNEL_SIZE = 15


def _odd(value: int) -> int:
    if value % 2 == 0:
        raise ValueError(f"expected an odd kernel side (a kernel with a centre), got {value}")
    return value


Kernel = Annotated[int, Field(ge=1, le=MAX_KERNEL_SIZE), AfterValidator(_odd)]


class ConvLSTMParams(ModelParams):
    """The next-frame predictor's fields.

    Args:
        layout: `conv`, the ConvLSTM; or `flat`, an LSTM over flattened
            frames with as many weights as that ConvLSTM (the paper's
            comparison).
        filters: Maps of every ConvLSTM layer's states (for `flat`: of the
            ConvLSTM whose size it matches).
        num_layers: Stacked ConvLSTM layers.
        kernel_size: Side of the ConvLSTM's input-to-state and state-to-state
            kernels, odd.
        head_kernel_size: Side of the output convolution's kernel, odd.
        units: The flat LSTM's cells; null matches the ConvLSTM's parameter
            count (`flat` only).
    """

    type: Literal["conv_lstm"] = "conv_lstm"
    layout: Annotated[
        Literal["conv", "flat"],
        Field(description="ConvLSTM, or an LSTM over flattened frames of equal size."),
    ] = "conv"
    filters: Units = 16
    num_layers: Layers = 2
    kernel_size: Kernel = 3
    head_kernel_size: Kernel = 3
    units: Units | None = None

    @model_validator(mode="after")
    def _units_for_flat(self) -> ConvLSTMParams:
        if self.units is not None and self.layout != "flat":
            raise ValueError(
                f"units: only for layout flat (a ConvLSTM's size is its filters), got "
                f"{self.units} with layout {self.layout}"
            )
        return self


@register_model("conv_lstm")
class ConvLSTM(ShortFormBuilder):
    params = ConvLSTMParams
    input_kinds = ("frames",)
    target_kinds = ("frames",)
    description = "ConvLSTM (Shi et al. 2015): predict the next frames; layout flat: its FC-LSTM."

    def units(self, params, task) -> int:
        """The flat layout's LSTM cells: `units`, or matched to the ConvLSTM of the fields."""
        if params.units is not None:
            return params.units
        # Keras loads on first use, not on import (the task's data loaded it already).
        from keras_seq.models import conv_lstm_parameters, matched_units

        frames = task.targets.length
        budget = conv_lstm_parameters(task.inputs.shape, frames, **self._conv_fields(params))
        return matched_units(budget, task.inputs.shape, frames)

    @staticmethod
    def _conv_fields(params):
        return {
            "filters": params.filters,
            "num_layers": params.num_layers,
            "kernel_size": params.kernel_size,
            "head_kernel_size": params.head_kernel_size,
        }

    def expansion(self, params, task):
        """The graph of `short_forms` (`_next_frame_nodes`), the flat layout's `units`
        matched first when not given (their refusals then name `model.filters`)."""
        if params.layout != "flat" or params.units is not None:
            return short_forms.expand_short_form(params, task)
        filled = params.model_copy(update={"units": self.units(params, task)})
        expansion = short_forms.expand_short_form(filled, task)
        fields = {node_id: "model.filters" for node_id in expansion.fields}
        return short_forms.Expansion(expansion.nodes, fields)
