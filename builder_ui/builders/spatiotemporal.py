"""`conv_lstm`: next-frame prediction with a ConvLSTM (Shi et al. 2015), or its flat baseline.

    layout conv:  frames ─▶ L × ConvLSTM2D ─▶ [H_T of every layer] ─▶ Conv2D ─▶ future frames
    layout flat:  frames ─▶ flatten each ─▶ LSTM ─▶ Dense ─▶ future frames

Built by `keras_seq.models.conv_lstm_predictor` and `frame_lstm_predictor`.
One model type with a `layout` field rather than two types, because the
comparison the paper makes is at an equal budget: `layout: flat` is the
frame-flattening LSTM (the FC-LSTM of Srivastava et al. 2015) whose `units`
are by default `keras_seq.models.matched_units` of the ConvLSTM the same
fields describe. So a sweep over `model.layout: [conv, flat]` trains the two
at the same parameter count on the same data; `units` sets the flat LSTM's
size by hand instead.

Trained with per-pixel binary cross-entropy (the outputs are sigmoids; Shi et
al. used cross-entropy on Moving MNIST), with the mean squared error as the
metric.

Spec example:

    task: {type: moving_shapes, n: 1000}
    model: {type: conv_lstm, filters: 16, num_layers: 2, kernel_size: 3}
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from builder_ui.builders import memory
from builder_ui.builders.base import ModelBuilder
from builder_ui.builders.fields import Layers, Units
from builder_ui.builders.registry import register_model
from builder_ui.specs import ModelParams

# Mirrors keras_seq.models.next_frame.MAX_KERNEL_SIZE (checked by a test).
MAX_KERNEL_SIZE = 15
LOSS = "binary_crossentropy"
METRIC = "mean_squared_error"


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
class ConvLSTM(ModelBuilder):
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

    def estimate(self, params, task):
        """The layers `build` makes, counted from the fields (see `memory.Part`)."""
        length, height, width, channels = task.inputs.shape
        future = task.targets.length
        pixels, outputs = height * width, future * channels
        if params.layout == "flat":
            units = self.units(params, task)
            field = "model.units" if params.units is not None else "model.filters"
            flat = pixels * channels
            return [
                memory.Part("flatten_frames", field, 0, length * flat),
                memory.Part(
                    "lstm",
                    field,
                    memory.recurrent_cell("lstm", flat, units),
                    memory.recurrent_activations("lstm", length, units),
                ),
                memory.Part("frame_head", field, memory.dense(units, future * flat), future * flat),
                memory.Part("frames_split", field, 0, future * flat),
            ]
        f, k = params.filters, params.kernel_size
        parts, maps = [], channels
        for index in range(params.num_layers):
            weights = 4 * f * (k * k * (maps + f) + 1)  # four gate blocks, [X_t; H_{t−1}] * W
            # Per pixel and step, like an LSTM's units: the four gates, the cell and the output.
            parts.append(
                memory.Part(f"conv_lstm_{index}", "model.filters", weights, length * pixels * f * 6)
            )
            maps = f
        head = params.head_kernel_size**2 * params.num_layers * f * outputs + outputs
        return [
            *parts,
            memory.Part("final_states", "model.filters", 0, pixels * params.num_layers * f),
            memory.Part("frame_head", "model.head_kernel_size", head, pixels * outputs),
            memory.Part("frames_time_major", "model.filters", 0, 2 * pixels * outputs),
        ]

    def build(self, params, task):
        # Keras loads on first use, not on import (specs and the app start without it).
        from keras_seq.models import conv_lstm_predictor, frame_lstm_predictor

        if params.layout == "flat":
            return frame_lstm_predictor(
                task.inputs, task.targets.length, units=self.units(params, task)
            )
        return conv_lstm_predictor(task.inputs, task.targets.length, **self._conv_fields(params))

    def compile_args(self, params, task):
        return {"loss": LOSS, "metrics": [METRIC]}
