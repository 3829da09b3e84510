"""`vision_transformer`: the ViT of Dosovitskiy et al. (2020) over a task's images.

    image ─▶ P×P patches ─▶ class token ─▶ + learned positions ─▶ N × pre-LN block
          ─▶ LayerNorm ─▶ class token ─▶ classifier

A short form of a graph of blocks: the builder builds, checks and estimates
the graph `short_forms.expand_short_form` writes out, the layers of
`keras_seq.models.vision_transformer` block for block (`graph.ShortFormBuilder`).
The image height and width must be multiples of `patch_size`; `prepare` checks
that against the task's images before anything is built.

Spec example:

    task: {type: digits}
    model: {type: vision_transformer, patch_size: 2, embedding_dim: 32, num_heads: 4}
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from builder_ui.builders.fields import Layers, Rate, Units
from builder_ui.builders.graph import ShortFormBuilder
from builder_ui.builders.registry import register_model
from builder_ui.specs import ModelParams


class VisionTransformerParams(ModelParams):
    """The ViT's fields.

    Args:
        patch_size: `P`, the side of a square patch in pixels; divides the
            image height and width.
        embedding_dim: `D`, the width of every token; a multiple of `num_heads`.
        num_heads: Attention heads per block.
        ff_dim: Inner size of each block's MLP (4·D in the paper).
        num_layers: Encoder blocks (the paper's depth).
        dropout: Dropout after the positions and inside every block.
    """

    type: Literal["vision_transformer"] = "vision_transformer"
    patch_size: Annotated[int, Field(ge=1, le=1024)] = 4
    embedding_dim: Units = 32
    num_heads: Units = 4
    ff_dim: Units = 64
    num_layers: Layers = 2
    dropout: Rate = 0.0

    @model_validator(mode="after")
    def _heads_divide_width(self) -> VisionTransformerParams:
        if self.embedding_dim % self.num_heads:
            raise ValueError(
                f"num_heads: expected a divisor of embedding_dim={self.embedding_dim} (each head "
                f"gets embedding_dim / num_heads features), got {self.num_heads}"
            )
        return self


@register_model("vision_transformer")
class VisionTransformer(ShortFormBuilder):
    params = VisionTransformerParams
    input_kinds = ("image",)
    target_kinds = ("classification",)
    description = "Vision Transformer (Dosovitskiy et al. 2020): patches, class token, encoder."

    def model_width(self, params):
        return params.embedding_dim

    def check(self, params, task):
        """Patches that tile the task's images, then the graph's own check (`ShortFormBuilder`)."""
        height, width = task.inputs.height, task.inputs.width
        if height % params.patch_size or width % params.patch_size:
            return [
                (
                    "patch_size",
                    f"expected a divisor of the image height {height} and width {width} "
                    f"(task {task.name!r}), got {params.patch_size}",
                )
            ]
        return super().check(params, task)
