"""A built model as people read it: a layer table with output shapes and a layer-graph diagram.

`describe(model)` lists the layers of a Keras model with their type, output
shape, parameter count and the layers they read from. For a functional model
(every `sequence_classifier`, the ViT, the pointer network) that is the real
graph: each layer's inbound nodes name its parents. A subclassed model (the
`Seq2Seq` encoder–decoder) records no graph, so its direct sublayers are listed
in the order they were created, without shapes.

`diagram_html(layers)` draws the graph as boxes and arrows in plain HTML and
CSS (no Graphviz, which `keras.utils.plot_model` would need): one box per
layer, top to bottom in topological order, an arrow between consecutive
layers, and "from …" on a box whose inputs are not just the box above it.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import keras
from keras.src.models.functional import Functional


@dataclass(frozen=True)
class LayerInfo:
    """One layer of a model.

    Attributes:
        name: The layer's name.
        type: Its class name.
        output_shape: E.g. `"(None, 20, 32)"`; `""` when the model records no graph.
        params: Its parameter count.
        inputs: Names of the layers it reads (empty for an input).
    """

    name: str
    type: str
    output_shape: str
    params: int
    inputs: tuple[str, ...] = ()


def _shape(operation: Any) -> str:
    try:
        output = operation.output
    except (AttributeError, ValueError):
        return ""
    shapes = [tuple(t.shape) for t in _flatten(output)]
    if len(shapes) == 1:
        return str(shapes[0])
    return ", ".join(str(s) for s in shapes)


def _flatten(structure: Any) -> list[Any]:
    return list(keras.tree.flatten(structure))


def _params(layer: Any) -> int:
    try:
        return int(layer.count_params()) if layer.built else 0
    except ValueError:
        return 0


def is_graph(model: Any) -> bool:
    """Whether the model records its layer graph (a functional or sequential model)."""
    return isinstance(model, Functional)


def describe(model: Any) -> list[LayerInfo]:
    """The layers of a built model, in topological order (see the module docstring)."""
    if is_graph(model):
        layers = []
        for operation in model.operations:
            parents: list[str] = []
            for node in getattr(operation, "_inbound_nodes", []):
                for parent in node.parent_nodes:
                    name = parent.operation.name
                    if name not in parents:
                        parents.append(name)
            layers.append(
                LayerInfo(
                    operation.name,
                    type(operation).__name__,
                    _shape(operation),
                    _params(operation),
                    tuple(parents),
                )
            )
        return layers
    return [
        LayerInfo(layer.name, type(layer).__name__, "", _params(layer)) for layer in model.layers
    ]


def table(layers: list[LayerInfo]) -> list[list[Any]]:
    """Rows for a results table: layer, type, output shape, parameters, inputs."""
    return [
        [info.name, info.type, info.output_shape or "—", info.params, ", ".join(info.inputs)]
        for info in layers
    ]


TABLE_HEADERS = ("layer", "type", "output shape", "parameters", "inputs")

_STYLE = """
<style>
.ks-graph{display:flex;flex-direction:column;align-items:center;gap:0;font-family:
 ui-monospace,monospace;font-size:13px;padding:8px}
.ks-box{border:1px solid #6b7280;border-radius:6px;padding:4px 10px;min-width:260px;
 text-align:center;background:var(--block-background-fill,#fff)}
.ks-box .ks-name{font-weight:600}
.ks-box .ks-type{color:#2563eb}
.ks-box .ks-meta{color:#6b7280;font-size:12px}
.ks-box .ks-from{color:#b45309;font-size:12px}
.ks-arrow{color:#6b7280;line-height:18px}
.ks-input{background:#ecfdf5}
.ks-note{color:#6b7280;font-size:12px;margin-bottom:6px}
</style>
"""


def diagram_html(layers: list[LayerInfo], *, graph: bool = True, title: str = "") -> str:
    """The layer graph as HTML boxes and arrows (see the module docstring)."""
    parts = [_STYLE, '<div class="ks-graph" id="ks-layer-graph">']
    if title:
        parts.append(f'<div class="ks-note">{html.escape(title)}</div>')
    if not graph:
        parts.append(
            '<div class="ks-note">Subclassed model: its sublayers in the order they were '
            "created (it records no layer graph).</div>"
        )
    previous = None
    for index, info in enumerate(layers):
        if index:
            parts.append('<div class="ks-arrow">↓</div>')
        extra = ""
        if graph and info.inputs and list(info.inputs) != [previous]:
            extra = f'<div class="ks-from">from {html.escape(", ".join(info.inputs))}</div>'
        kind = " ks-input" if graph and not info.inputs else ""
        meta = " · ".join(
            part
            for part in (info.output_shape, f"{info.params:,} params" if info.params else "")
            if part
        )
        parts.append(
            f'<div class="ks-box{kind}" data-layer="{html.escape(info.name)}">'
            f'<span class="ks-name">{html.escape(info.name)}</span> '
            f'<span class="ks-type">{html.escape(info.type)}</span>'
            f'<div class="ks-meta">{html.escape(meta)}</div>{extra}</div>'
        )
        previous = info.name
    parts.append("</div>")
    return "".join(parts)
