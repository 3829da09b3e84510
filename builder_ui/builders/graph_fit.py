"""What `model.fit` would refuse of a graph on its first batch, found symbolically before any run.

The walk (`graph_shapes.walk`) calls each block's layer on `keras.KerasTensor`s,
and a layer that defines `compute_output_shape` answers from that alone, without
running its `call`: `MultiHeadAttention` after a `Flatten` reports `(None, 80)`
and fails only when `model.fit` runs it (an `IndexError` in its `Softmax`). Nor
does the walk compare the Output with the targets: an `Input → Output` graph on
the 8×8 digits gives `(None, 8, 8, 10)` for labels of shape `(None,)`.
`fit_problems` runs what one training step runs, still with no data and no
weights:

    the walk's layers ─▶ each node's `call` on placeholders, as training calls it
                         (`training=True`, masks carried from node to node)
                      ─▶ the Output's shape against the task's targets, for the loss
                      ─▶ the loss on a placeholder of the targets

inside the backend's symbolic call (a scratch TensorFlow graph, `jax.eval_shape`,
or PyTorch's meta device: `_symbolic_call`) and `graph_shapes.unallocated`, so a
weight read is an initializer's symbolic output and nothing is allocated. The
targets' placeholder has the shape and dtype of the task's `TargetSpec`: no data
is made. Where PyTorch's meta device cannot run a layer (a `.item()` in its
call), the calls go unchecked rather than refused; the Output is still checked.
A graph with a decoder block (token-sequence or pointer targets) is checked up
to it: the decoder and the Output are the model's own (`AssembledSeq2Seq`,
`AssembledTransformerSeq2Seq`, `PointerNetwork`), trained with teacher forcing.

Each problem is a `graph_structure.NodeProblem` at its block: the node whose layer
raised, in the layer's own words, or the Output whose shape the loss cannot
compare with the targets. Outcomes are kept by graph and task (`CACHE_SIZE`),
since the canvas asks again after every change.
"""

from __future__ import annotations

import collections
import json
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import keras

from builder_ui.builders import graph_blocks, graph_shapes, graph_structure
from builder_ui.builders.graph_blocks import DECODERS, OUTPUT, decoded_kind
from builder_ui.builders.graph_structure import NodeProblem, node_label

CACHE_SIZE = 64  # graphs whose outcome is kept (see the module docstring)
_CALLED_IN = re.compile(r"Exception encountered when calling (\w+)\.call\(\)")


class _Refused(Exception):
    """Ends the trace at the first node whose call raised; its problem is already recorded."""


class _Unknown(Exception):
    """Ends the trace without a verdict: PyTorch's meta device cannot run a layer's call."""


def expected_output(targets: Any) -> tuple[int, ...] | None:
    """The Output's shape per example that the graph's loss compares with the targets.

    `sparse_categorical_crossentropy` takes one probability per class for each
    label: `(num_classes,)` for a class label. `mean_squared_error` and
    `binary_crossentropy` take the target's own shape: `(output_dim,)`, or the
    future frames' `(T_out, H, W, C)`. None for targets the graph does not
    predict itself (token sequences: the decoder's output).
    """
    if targets.kind == "classification":
        return (int(targets.num_classes),)
    if targets.kind == "regression":
        return (int(targets.output_dim),)
    if targets.kind == "frames":
        return tuple(int(side) for side in targets.shape)
    return None


def loss_name(loss: Any) -> str:
    """`"sparse_categorical_crossentropy"`, or a loss object's `name`."""
    return loss if isinstance(loss, str) else getattr(loss, "name", type(loss).__name__)


def fit_problems(
    nodes: Sequence[Mapping[str, Any]], task: Any, walk: graph_shapes.Walk, loss: Any
) -> list[NodeProblem]:
    """What `model.fit` would refuse of a walked graph on one batch (see the module docstring).

    Args:
        nodes: The graph's nodes, as the walk read them.
        task: Anything with the task's `name`, `inputs` and `targets` specs.
        walk: The symbolic walk of `nodes` on `task`; a walk with problems is
            not traced again (its problems are the ones to fix first).
        loss: What `model.compile` gets as `loss` (a name or a Keras loss);
            None for a translating graph, whose loss is its decoder's.

    Returns:
        The problems, at most one: the first node whose call raised, or the Output.
    """
    if walk.problems or walk.input_id is None:
        return []
    key = _key(nodes, task, loss)
    found = _OUTCOMES.get(key)
    if found is None:
        found = tuple(_trace(nodes, task, walk, loss))
        _OUTCOMES.put(key, found)
    return list(found)


def _trace(
    nodes: Sequence[Mapping[str, Any]], task: Any, walk: graph_shapes.Walk, loss: Any
) -> list[NodeProblem]:
    decoded = decoded_kind(task) is not None  # the decoder's model writes the outputs
    skip = (
        {node["id"] for node in nodes if node["layer"] in (*DECODERS, OUTPUT)} if decoded else set()
    )
    order, _ = graph_structure.topological_order(nodes)
    order = [
        index
        for index in order
        if nodes[index]["id"] in walk.layers and nodes[index]["id"] not in skip
    ]
    if not order:
        return []
    problems: list[NodeProblem] = []

    def forward(x: Any, training: Any = None) -> tuple[Any, ...]:
        """Each node's call in turn, as the functional model's; the Output's (or last) output."""
        tensors = {walk.input_id: x}
        for index in order:
            node = nodes[index]
            item = graph_blocks.block(node["layer"])
            try:
                outputs = graph_shapes.call_block(item, walk.layers[node["id"]], node, tensors)
                # A layer a decoder reads the state of returns it too: its sequence first.
                tensors[node["id"]] = outputs[0] if node["id"] in walk.states else outputs
            except Exception as error:  # the layer's own refusal, whatever its type
                if _meta_device_limit(error):
                    raise _Unknown from None
                problems.append(_call_problem(index, node, item, walk, error))
                raise _Refused from None
        last = walk.output_id if walk.output_id in tensors else nodes[order[-1]]["id"]
        return (tensors[last],)

    variables = [v for layer in walk.layers.values() for v in layer.variables]

    def step(x: Any, y: Any) -> Any:
        problems.clear()  # a backend may trace twice (PyTorch, for the batch axis)
        # Each weight read as zeros of its shape, not as its initializer's output (an
        # orthogonal kernel's QR would be traced at every read): no value is computed anyway.
        zeros = [(v, keras.ops.zeros(v.shape, dtype=v.dtype)) for v in variables]
        # A Lambda layer's call sets `training=True` for every layer called inside it, as
        # `model.fit` does for the functional model's layers.
        with keras.StatelessScope(state_mapping=zeros):
            (output,) = keras.layers.Lambda(forward, name="training_step")(x, training=True)
        if loss is None:
            return output
        try:
            keras.losses.get(loss)(y, output)  # the loss `model.compile` looks up by name
            refusal = None
        except Exception as error:  # the loss's own words, whatever its type
            refusal = None if _meta_device_limit(error) else error
        problem = _output_problem(nodes, task, walk, loss, refusal)
        if problem is not None:
            problems.append(problem)
        return output

    inputs, targets = task.inputs, task.targets
    x = keras.KerasTensor((None, *inputs.shape), dtype=inputs.dtype)
    y = keras.KerasTensor((None, *targets.shape), dtype=targets.dtype)
    try:
        with graph_shapes.unallocated():
            _symbolic_call(step, x, y)
    except _Refused:
        pass
    except _Unknown:  # the Output's shape is still known from the walk
        found = None if loss is None else _output_problem(nodes, task, walk, loss, None)
        return [] if found is None else [found]
    except Exception as error:  # a refusal outside any node: Keras' own, for the whole step
        if not problems:
            problems.append(NodeProblem(None, None, "", graph_shapes.layer_words(error)))
    return problems


def _symbolic_call(step: Any, x: Any, y: Any) -> None:
    """`step(x, y)` on placeholders of `x` and `y`, as the backend traces without running.

    TensorFlow traces into a scratch graph and JAX into `jax.eval_shape`, through a
    layer called on them (`_TrainingStep`), with Keras' public API only. On PyTorch that
    symbolic call falls back to real tensors (every weight initialised for real) where the
    meta device fails; here the call runs on the meta device only, its batch axis 8, and a
    layer that the meta device cannot run ends the check without a verdict
    (`_meta_device_limit`).
    """
    if keras.backend.backend() != "torch":
        _TrainingStep(step)(x, y)  # a layer called on placeholders: traced, never run
        return
    import torch  # the backend in use: loaded already

    with torch.no_grad(), keras.device("meta"):
        step(*(keras.ops.ones([d or 8 for d in t.shape], dtype=t.dtype) for t in (x, y)))


class _TrainingStep(keras.layers.Layer):
    """A layer whose call is the training step. Called on placeholders, Keras traces it
    symbolically (`Layer.compute_output_spec`: TensorFlow into a scratch graph, JAX through
    `jax.eval_shape`): its public way to."""

    def __init__(self, step: Any):
        super().__init__(name="training_step_check")
        self.step = step

    def call(self, x, y):
        return self.step(x, y)


def _meta_device_limit(error: BaseException) -> bool:
    """Whether PyTorch's meta device, not the layer, refused (`.item()` on a meta tensor)."""
    return keras.backend.backend() == "torch" and "meta" in str(error).lower()


def _call_problem(
    index: int, node: Mapping[str, Any], item: Any, walk: graph_shapes.Walk, error: BaseException
) -> NodeProblem:
    """A node whose layer raised when called as training calls it, in the layer's words."""
    ports = list(node.get("inputs", {}))
    where = f"inputs.{ports[0]}" if len(ports) == 1 else "inputs"
    given = graph_shapes.given_shapes(item, node, walk.tensors)
    words = graph_shapes.layer_words(error)
    inner = _CALLED_IN.search(re.sub(r"\x1b\[[0-9;]*m", "", str(error)))
    layer = walk.layers[node["id"]]
    if inner and inner.group(1) != type(layer).__name__:
        words += f" (raised in {inner.group(1)}.call())"
    return NodeProblem(
        index,
        node["id"],
        where,
        f"{node_label(node)} on {given}: the shapes pass, but its call fails as model.fit "
        f"runs it: {words}",
    )


def _output_problem(
    nodes: Sequence[Mapping[str, Any]],
    task: Any,
    walk: graph_shapes.Walk,
    loss: Any,
    refusal: BaseException | None,
) -> NodeProblem | None:
    """The Output, when its shape is not the one the loss compares with the task's targets."""
    output_id = walk.output_id
    if output_id is None:
        return None
    index = next(i for i, node in enumerate(nodes) if node["id"] == output_id)
    shape = tuple(walk.tensors[output_id].shape)
    expected = expected_output(task.targets)
    if refusal is None and (expected is None or tuple(shape[1:]) == expected):
        return None
    gives = graph_shapes.shape_text(shape)
    targets = graph_shapes.shape_text((None, *task.targets.shape))
    message = (
        f"{node_label(nodes[index])} gives {gives}, but task {task.name!r} has targets {targets}"
    )
    if expected is not None:
        wanted = graph_shapes.shape_text((None, *expected))
        message += f", which its loss, {loss_name(loss)}, compares with outputs {wanted}"
    if refusal is not None:
        message += f"; model.fit refuses it: {graph_shapes.layer_words(refusal)}"
    else:
        message += "; model.fit would not refuse it, but broadcast the targets against it and "
        message += "train on a wrong loss"
    if expected is not None and len(shape) > len(expected) + 1:
        message += (
            ". The Output needs one vector per example: before it, reduce the other axes "
            "with a pooling block (GlobalAveragePooling1D/2D, ClassTokenPooling), Flatten, "
            "or a recurrent layer without return_sequences"
        )
    return NodeProblem(index, output_id, "inputs.x", message)


def _key(nodes: Sequence[Mapping[str, Any]], task: Any, loss: Any) -> str:
    """The graph, the task's input and target specs and the loss, as one key."""
    inputs, targets = task.inputs, task.targets
    parts = (
        [{k: node.get(k) for k in ("id", "layer", "params", "inputs")} for node in nodes],
        task.name,
        (tuple(inputs.shape), str(inputs.dtype), getattr(inputs, "vocab_size", None)),
        (targets.kind, tuple(targets.shape), str(targets.dtype), expected_output(targets)),
        getattr(targets, "vocab_size", None),
        None if loss is None else loss_name(loss),
    )
    return json.dumps(parts, sort_keys=True, default=repr)


class _Outcomes:
    """The last `CACHE_SIZE` outcomes by `_key`, least recently used dropped first."""

    def __init__(self, size: int):
        self.size = size
        self.items: collections.OrderedDict[str, tuple[NodeProblem, ...]] = (
            collections.OrderedDict()
        )
        self.lock = threading.Lock()

    def get(self, key: str) -> tuple[NodeProblem, ...] | None:
        with self.lock:
            found = self.items.get(key)
            if found is not None:
                self.items.move_to_end(key)
            return found

    def put(self, key: str, outcome: tuple[NodeProblem, ...]) -> None:
        with self.lock:
            self.items[key] = outcome
            while len(self.items) > self.size:
                self.items.popitem(last=False)


_OUTCOMES = _Outcomes(CACHE_SIZE)
