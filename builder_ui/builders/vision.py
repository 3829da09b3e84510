"""`vision_transformer`: the ViT of Dosovitskiy et al. (2020) over a task's images.

    image ─▶ P×P patches ─▶ class token ─▶ + learned positions ─▶ N × pre-LN block
          ─▶ LayerNorm ─▶ class token ─▶ classifier

Built by `keras_seq.models.vision_transformer`. The image height and width
must be multiples of `patch_size`; `prepare` checks that against the task's
images before anything is built.

Spec example:

    task: {type: digits}
    model: {type: vision_transformer, patch_size: 2, embedding_dim: 32, num_heads: 4}
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from builder_ui.builders import memory
from builder_ui.builders.base import ModelBuilder
from builder_ui.builders.registry import register_model
from builder_ui.builders.sequence import Layers, Rate, Units
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
class VisionTransformer(ModelBuilder):
    params = VisionTransformerParams
    input_kinds = ("image",)
    target_kinds = ("classification",)
    description = "Vision Transformer (Dosovitskiy et al. 2020): patches, class token, encoder."

    def model_width(self, params):
        return params.embedding_dim

    def check(self, params, task):
        height, width = task.inputs.height, task.inputs.width
        if height % params.patch_size or width % params.patch_size:
            return [
                (
                    "patch_size",
                    f"expected a divisor of the image height {height} and width {width} "
                    f"(task {task.name!r}), got {params.patch_size}",
                )
            ]
        return []

    def estimate(self, params, task):
        """The layers `build` makes, counted from the fields (see `memory.Part`)."""
        image, d, ff = task.inputs, params.embedding_dim, params.ff_dim
        field, size = "model.embedding_dim", params.patch_size
        tokens = (image.height // size) * (image.width // size) + 1  # the patches, class token
        patch = size * size * image.channels * d + d  # a Conv2D of P×P kernels, stride P
        parts = [
            memory.Part("patch_embedding", field, patch, tokens * d),
            memory.Part("class_token", field, d, tokens * d),
            memory.Part("position_embedding", field, tokens * d, tokens * d),
        ]
        block = memory.multi_head_attention(d) + 2 * memory.layer_norm(d)
        for index in range(params.num_layers):
            name = f"encoder_block_{index}"
            scores = memory.attention_scores(params.num_heads, tokens, tokens)
            parts += [
                memory.Part(name, field, block, memory.block_activations(tokens, d, 0)),
                memory.Part(name, "model.ff_dim", memory.feedforward(d, ff), 2 * tokens * ff),
                memory.Part(name, "model.num_heads", 0, scores),
            ]
        classes = task.targets.num_classes
        return [
            *parts,
            memory.Part("encoder_layer_norm", field, memory.layer_norm(d), tokens * d),
            memory.Part("classifier", field, memory.dense(d, classes), classes),
        ]

    def build(self, params, task):
        # Keras loads on first use, not on import (specs and the app start without it).
        from keras_seq.models import vision_transformer

        return vision_transformer(
            task.inputs,
            patch_size=params.patch_size,
            embedding_dim=params.embedding_dim,
            num_layers=params.num_layers,
            num_heads=params.num_heads,
            ff_dim=params.ff_dim,
            num_classes=task.targets.num_classes,
            dropout=params.dropout,
        )
