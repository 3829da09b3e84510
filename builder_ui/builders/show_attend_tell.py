"""`show_attend_tell`: an image captioner that attends over regions (Xu et al. 2015).

    image ─▶ CNN feature grid (or patches) ─▶ regions a_i ─▶ Bahdanau attention from h_{t−1}
          ─▶ LSTM decoder ─▶ one word per step

A short form of a graph (`short_forms`): the image encoder block by block (the
CNN's convolutions and poolings, or a patch embedding reshaped to its grid)
and one `CaptionDecoder` block reading the feature map, built, checked and
counted by the graph builder's walk (`graph.ShortFormBuilder`), so it opens on
the canvas as the model it trains: `keras_seq.models.AssembledShowAttendTell`,
the same weights and outputs as `keras_seq.models.ShowAttendTell`. For tasks
with image inputs and sequence targets (`shape_captions`); training and
scoring (BLEU, exact match, the gaze metrics) are `captioning`'s.

Spec example:

    task: {type: shape_captions, n: 3000}
    model: {type: show_attend_tell, filters: 32, units: 64, attention_penalty: 1.0}
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from builder_ui.builders.fields import Rate, Units
from builder_ui.builders.graph import ShortFormBuilder
from builder_ui.builders.registry import register_model
from builder_ui.specs import ModelParams

# Mirrors keras_seq.models.captioner.MAX_CONV_LAYERS (checked by a test).
MAX_CONV_LAYERS = 8


class ShowAttendTellParams(ModelParams):
    """The captioner's fields.

    Args:
        encoder: `cnn` (3×3 convolution, ReLU and 2×2 pooling per block) or
            `patches` (a ViT's patch embedding).
        filters: Features of each region.
        conv_layers: The CNN's blocks; the grid is the image over `2^k`.
        patch_size: The patch side, with `encoder: patches`.
        region_positions: Add a learned embedding of each region's place.
        cell: The decoder's cell (`lstm` is the paper's).
        units: The decoder's state size.
        attention_units: Width of the additive score; null for `units`.
        embedding_dim: Width of the word vectors.
        attention_penalty: λ of the doubly stochastic regularisation
            λ Σ_i (1 − Σ_t α_ti)²; 0 turns it off.
        dropout: Dropout on the word vectors and the decoder outputs.
    """

    type: Literal["show_attend_tell"] = "show_attend_tell"
    encoder: Literal["cnn", "patches"] = "cnn"
    filters: Units = 32
    conv_layers: Annotated[int, Field(ge=1, le=MAX_CONV_LAYERS)] = 2
    patch_size: Annotated[int, Field(ge=1, le=1024)] = 4
    region_positions: bool = True
    cell: Literal["simple", "gru", "lstm", "cec_lstm"] = "lstm"
    units: Units = 64
    attention_units: Units | None = None
    embedding_dim: Units = 32
    attention_penalty: Annotated[float, Field(ge=0, le=1e6, allow_inf_nan=False)] = 0.0
    dropout: Rate = 0.0


@register_model("show_attend_tell")
class ShowAttendTellBuilder(ShortFormBuilder):
    params = ShowAttendTellParams
    input_kinds = ("image",)
    target_kinds = ("sequence",)
    description = "Show, Attend and Tell (Xu et al. 2015): captions from attention over regions."

    def check(self, params, task):
        """The grid must tile the image exactly, then the graph's problems."""
        height, width = task.inputs.height, task.inputs.width
        cnn = params.encoder == "cnn"
        step = 2**params.conv_layers if cnn else params.patch_size
        if height % step or width % step:
            field = "conv_layers" if cnn else "patch_size"
            what = f"2^conv_layers = {step}" if cnn else f"patch_size {step}"
            return [
                (
                    field,
                    f"expected {what} to divide the image height {height} and width {width} "
                    f"(task {task.name!r}), got {getattr(params, field)}",
                )
            ]
        return super().check(params, task)  # the graph's (`ShortFormBuilder`)
