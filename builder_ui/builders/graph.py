"""`graph`: a model assembled from blocks wired port to port (the Build tab's canvas).

    model:
      type: graph
      nodes:
        - {id: tokens, layer: Input}
        - {id: embedding, layer: Embedding, params: {output_dim: 16}, inputs: {x: tokens}}
        - {id: encoder, layer: LSTM, params: {units: 32}, inputs: {x: embedding}}
        - {id: head, layer: Output, inputs: {x: encoder}}

A graph may also group nodes, and repeat a group (`graph_groups`): the builders expand it
before anything else, copy k of a member `m` being a node `m_k`, each copy reading the
previous one's exit through its `x` port:

      groups:
        - {id: encoders, nodes: [encoder], repeat: 3, collapsed: false}

Each node is one block of the catalog (`graph_blocks`): a Keras or keras_seq
layer named by the node's `id`, made with the node's `params` (the layer's own
constructor arguments) and called on the nodes its `inputs` name, port by port.
`Input` is the task's input and `Output` the task's head (a float32 softmax over
the classes, or a linear regressor). On a translation task (token-sequence
targets) one decoder block, the whole decoder (`graph_decoder`), feeds the
Output: a `RecurrentDecoder`, and the model built is
`keras_seq.models.AssembledSeq2Seq`, or a `TransformerDecoder`, and it is
`keras_seq.models.AssembledTransformerSeq2Seq`.

Validation comes in two steps, as for every model type. The structure (ids,
blocks, ports, references, cycles, nodes that lead nowhere) is the pydantic
model's (`graph_params.GraphParams`), without Keras, so `load_spec` refuses a
miswired graph with the path of the field (`model.nodes[3].inputs.query`). The
parameters and shapes need the layers and the task: `GraphBuilder.check` walks the
graph symbolically (`graph_shapes.walk`), then runs what `model.fit` runs on one batch,
still symbolically (`graph_fit.fit_problems`: each layer's `call` as training calls it,
the Output against the task's targets for the compiled loss), so `prepare` refuses what
a layer or the loss would refuse, in its own words, at the node's path.

The same walk builds, checks and estimates the model types that are short forms of a
graph (`sequence_classifier`, `sequence_regressor`, `vision_transformer`, `seq2seq`,
`show_attend_tell`, `pointer_network`, `conv_lstm`: `short_forms` writes them out as
nodes): `ShortFormBuilder` is their base. Both builders are light classes here; their
Keras side, from the checks to the model and how it trains and is scored, is
`graph_model`, imported at a model's first check, estimate or build (after the process
has chosen its Keras backend).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from builder_ui.builders import graph_blocks, short_forms
from builder_ui.builders.base import ModelBuilder
from builder_ui.builders.graph_params import GraphParams, expanded_nodes
from builder_ui.builders.registry import register_model


def _keras_side():
    """`graph_model`: the Keras side of the builders here, loaded by a model's first check,
    estimate or build, so that loading a spec and choosing a Keras backend come first."""
    from builder_ui.builders import graph_model  # Keras loads with it (the backend is fixed)

    return graph_model


class _BuiltAsGraph(ModelBuilder):
    """How a model built by the graph's walk trains and is scored: as its decoder block's
    model type when one writes the task's targets (`graph_model.trainer`: teacher-forced
    translation, captions, pointers), else as `ModelBuilder` says (one softmax or value)."""

    def fit_data(self, params, task):
        return _keras_side().trainer(task, super()).fit_data(params, task)

    def compile_args(self, params, task):
        return _keras_side().trainer(task, super()).compile_args(params, task)

    def monitor_metric(self, params, task):
        return _keras_side().trainer(task, super()).monitor_metric(params, task)

    def evaluate(self, model, params, prepared):
        return _keras_side().trainer(prepared.task, super()).evaluate(model, params, prepared)


@register_model("graph")
class GraphBuilder(_BuiltAsGraph):
    """Builds a graph: a functional `keras.Model`, or for a translating task a seq2seq model.

    A task whose targets are token sequences (`toy_translation`, `parallel_text`)
    needs one decoder block feeding the Output (`graph_decoder`): the nodes before
    it become the encoder, a functional model from the source ids to the block's
    ports (`memory`, and `state` for a `RecurrentDecoder`), under the block's model
    (`AssembledSeq2Seq`, `AssembledTransformerSeq2Seq`), which trains, decodes and
    is scored (BLEU, exact match) like every seq2seq.
    """

    params = GraphParams
    input_kinds = ("tokens", "numeric", "image", "frames")
    target_kinds = ("classification", "regression", "sequence", "pointer", "frames")
    description = "Blocks wired port to port on the canvas: any layers, from Input to Output."

    def check(self, params, task):
        """The layers' refusals of their parameters and inputs, and what `model.fit` would
        refuse on one batch (`graph_fit`), as `(field, message)` at each node's path."""
        expansion = expanded_nodes(params)
        problems = map(expansion.original, _keras_side().check_nodes(expansion.nodes, task))
        return [(problem.path, problem.message) for problem in problems]

    def estimate(self, params, task):
        """Each node's weights and kept activations, from its layer built symbolically
        (`graph_model.estimate_nodes`); None for a graph with problems (`check` reports them)."""
        expansion = expanded_nodes(params)
        # A group's copy is sized by its member's fields.
        index = {
            node["id"]: at for node, (at, _) in zip(expansion.nodes, expansion.origin, strict=True)
        }

        def field_of(node_id: str, param: str | None = None) -> str:
            return f"model.nodes[{index[node_id]}].params" + (f".{param}" if param else "")

        return _keras_side().estimate_nodes(expansion.nodes, task, field_of)

    def build(self, params, task):
        """A functional `keras.Model` whose layers are named by node id (see the class)."""
        expansion = expanded_nodes(params)
        return _keras_side().build_nodes(expansion.nodes, task, locate=expansion.original)


class ShortFormBuilder(_BuiltAsGraph):
    """A named model type that is a graph written in a few fields (`short_forms`).

    It builds, checks and estimates the graph `short_forms.expand_short_form` writes
    out, as `GraphBuilder` does for a graph written node by node, and trains and is scored
    as it does too; the model is named by the type (`sequence_classifier`). Refusals name
    the short form's fields (`model.encoder.units`), not the nodes. Subclasses check their
    own fields first.
    """

    def expansion(self, params: Any, task: Any) -> short_forms.Expansion:
        return short_forms.expand_short_form(params, task)

    def check(self, params, task):
        """The graph's problems (`graph_model.check_nodes`), a layer over keras_seq's size
        limit included, at the fields that set them."""
        expansion = self.expansion(params, task)
        problems = _keras_side().check_nodes(list(expansion.nodes), task)
        return [
            (expansion.field_of(problem.node_id).removeprefix("model").lstrip("."), problem.message)
            for problem in problems
        ]

    def estimate(self, params, task):
        """The expansion's nodes, counted from their layers built symbolically
        (`graph_model.estimate_nodes`), each at the field that sets its size."""
        expansion = self.expansion(params, task)
        return _keras_side().estimate_nodes(list(expansion.nodes), task, expansion.field_of)

    def build(self, params, task):
        nodes = list(self.expansion(params, task).nodes)
        return _keras_side().build_nodes(nodes, task, name=params.type)


def translates(spec: Mapping[str, Any]) -> bool:
    """Whether a spec document's model turns token sequences into token sequences.

    A `seq2seq` model, or a `graph` with a decoder block; read from the
    document alone (no task is loaded), for the views that translate or score BLEU.
    """
    model = spec.get("model") if isinstance(spec, Mapping) else None
    if isinstance(model, Mapping) and model.get("type") == "seq2seq":
        return True
    return decoder_block(spec) in graph_blocks.DECODERS_FOR["sequence"]


def decoder_block(spec: Mapping[str, Any]) -> str | None:
    """The decoder block of a spec document's `graph` model (`RecurrentDecoder`, …), or None.

    Read from the document alone (no task is loaded), for the views that show a
    translator's, captioner's or pointer network's outputs.
    """
    model = spec.get("model") if isinstance(spec, Mapping) else None
    nodes = (
        model.get("nodes") if isinstance(model, Mapping) and model.get("type") == "graph" else None
    )
    if not isinstance(nodes, list):
        return None
    layers = [node.get("layer") for node in nodes if isinstance(node, Mapping)]
    return next((layer for layer in layers if layer in graph_blocks.DECODERS), None)
