"""A `.keras` file as graph nodes: "Open a .keras file as a graph" on the Build tab's canvas.

    model.keras ─▶ config.json read and checked (classes, size) ─▶ `keras.saving.load_model`
                (`safe_mode=True`, `compile=False`) ─▶ the functional graph walked from
                its output ─▶ `[{id, layer, params, inputs}, ...]` (`graph`'s nodes)

`keras_file_as_nodes(path)` gives the nodes of a `model: {type: graph}` spec
(`builder_ui.builders.graph`) for a functional `keras.Model` (or a
`keras.Sequential`, its layers one after another) made of layers the canvas has
blocks for (`graph_blocks`). The mapping:

- the model's one `InputLayer` is the `Input` node (its shape and dtype are the task's);
- a layer whose class is exactly a block's layer class is that block (`Dense` → `Dense`,
  `keras_seq.layers.CECLSTM` → `CECLSTM`, ...); a `Bidirectional` around a recurrent
  block's layer is that block with `bidirectional: true` (and its `merge_mode`);
- `params` are the layer's `get_config()` restricted to the block's parameters
  (`graph_blocks.parameters`), leaving out those equal to their defaults; an initializer
  that is not the default is written as Keras serializes it (`{class_name, config}`);
- `inputs` wire the layer's call, port by port: a one-input layer's `x`, `Add` and
  `Concatenate` a list on `x`, the attention layers' `query`, `value` (and `key`), a
  `TransformerDecoderBlock`'s `x` and `context`, in the order and by the names of the
  layer's `call`. The masks Keras passes along by itself (`mask_zero`) are not wiring;
- the node's `id` is the layer's name made a node id (lower case, `[a-z0-9_]`, starting
  with a letter, at most 64 characters, made unique with `_2`, `_3`, ...).

The head: the model's last layer (the one its single output comes from) must be a head
the `Output` block is (`graph_shapes._head`): a `Dense` with a softmax (classes) or no
activation (values), or an `Activation("sigmoid")` (next frames). It becomes the `Output`
node; its number of units and its other settings are then the task's, so the graph
counts as many weights as the file when the task has as many classes (or values) as the
file's head has units. A model that ends in anything else is refused: the graph's Output
would be a layer the file does not have.

Only the architecture comes across: the weights stay in the file (the graph trains from
scratch), and so do the layers' `trainable` flags and dtype policies.

Refused, with a `SpecError` naming the file and the layer (its name and class), before
anything is written: a file that is not a `.keras` zip (or has no `config.json`), one
larger than `max_bytes` (the app's upload limit) or unpacking to more than
`UNPACKED_FACTOR` times it, a model that is not functional (a subclassed `keras.Model`),
one with several inputs or outputs, a layer or a `keras.ops` operation the canvas has no
block for, a layer called more than once (shared weights), a layer whose second output
(an RNN's state) is read, a constructor argument no block sets at a value of its own
(`return_state`, `stateful`, `lora_rank`), a layer called with a tensor or a setting its
block does not pass (`use_causal_mask=True`), a parameter that is no JSON value (a
regularizer object), and more than `graph_params.MAX_NODES` nodes.
"""

from __future__ import annotations

import inspect
import json
import math
import re
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import keras
from keras.src.models.functional import Functional

import keras_seq.layers  # noqa: F401 - its layers register themselves as serializable
from builder_ui.builders import graph_blocks
from builder_ui.builders.graph_params import MAX_NODES
from builder_ui.specs import SpecError

SUFFIX = ".keras"
# The app's upload limit (`builder_ui.app.uploads.MAX_UPLOAD_BYTES`); the app passes its own.
MAX_FILE_BYTES = 10 * 1024 * 1024
# What the archive may unpack to, as a multiple of the file's limit (a `.keras` file is
# stored, not compressed: it unpacks to about its own size).
UNPACKED_FACTOR = 4
CONFIG_MEMBER = "config.json"
MAX_ID_LENGTH = 64
# How many operations deep a mask is compared with the one its layer's input carries.
MAX_MASK_DEPTH = 16
_OPS_MODULE = "keras.src.ops"
_FUNCTIONAL, _SEQUENTIAL = "Functional", "Sequential"
# Call arguments Keras records that are no tensor and change nothing when left at these values.
_HARMLESS = (None, False)
# Config keys that are no constructor argument a block could set, and that the graph leaves
# to the app (the name is the node's id).
_IGNORED_CONFIG = frozenset({"name", "dtype", "trainable"})
# The heads the canvas's Output is (`graph_shapes._head`), by layer class: a softmax over the
# classes or a linear regressor, or a sigmoid per pixel (next frames).
_HEADS = {"Dense": ("softmax", "linear"), "Activation": ("sigmoid",)}


def _refuse(name: str, message: str) -> SpecError:
    return SpecError(f"{name}: {message}")


def keras_file_as_nodes(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> list[dict[str, Any]]:
    """The nodes of the graph a `.keras` file's functional model is (see the module docstring).

    Args:
        path: The `.keras` file.
        max_bytes: The largest file read (the app's upload limit).

    Returns:
        `{id, layer, params, inputs}` per node, the `Input` first and the `Output` last,
        each node after the nodes it reads; `params` and `inputs` left out when empty.

    Raises:
        SpecError: what cannot be represented, naming the file and the layer.
    """
    path = Path(path)
    name = path.name or str(path)
    config = _read_config(path, name, max_bytes)
    _check_config(config, name)
    model = _load(path, name)
    return _Walker(model, name).nodes()


# The file, before Keras reads it ---------------------------------------------------------------


def _read_config(path: Path, name: str, max_bytes: int) -> dict[str, Any]:
    """The archive's `config.json`, once its size and the archive's are known to be bounded."""
    if path.suffix != SUFFIX:
        raise _refuse(name, f"expected a {SUFFIX} file, got {path.suffix or 'no suffix'!r}")
    if not path.is_file():
        raise _refuse(name, "the file did not arrive; try again")
    size = path.stat().st_size
    if size > max_bytes:
        raise _refuse(
            name, f"{size:,} bytes is more than a .keras file may have ({max_bytes:,} bytes)"
        )
    not_keras = f"not a {SUFFIX} file (a zip archive of {CONFIG_MEMBER} and the weights)"
    limit = UNPACKED_FACTOR * max_bytes
    try:
        with zipfile.ZipFile(path) as archive:
            unpacked = sum(member.file_size for member in archive.infolist())
            present = CONFIG_MEMBER in archive.namelist()
            text = archive.read(CONFIG_MEMBER) if present and unpacked <= limit else b""
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError):
        raise _refuse(name, not_keras) from None
    if unpacked > limit:
        raise _refuse(name, f"it unpacks to {unpacked:,} bytes, more than {limit:,}")
    if not present:
        raise _refuse(name, f"{not_keras}: it has no {CONFIG_MEMBER}")
    try:
        config = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise _refuse(name, f"its {CONFIG_MEMBER} is not JSON") from None
    if not isinstance(config, dict):
        raise _refuse(name, f"its {CONFIG_MEMBER} is not a Keras model's")
    return config


def _entry_name(entry: Mapping[str, Any]) -> str:
    config = entry.get("config")
    found = entry.get("name") or (config.get("name") if isinstance(config, Mapping) else None)
    return str(found) if found else "?"


def _check_config(config: Mapping[str, Any], name: str) -> None:
    """Refuse, from the config alone, what Keras need not be asked to load: a model that is
    not functional, a layer class with no block (a `Lambda`, a custom layer), too many layers."""
    model_class = config.get("class_name")
    body = config.get("config") if isinstance(config.get("config"), Mapping) else {}
    model_name = body.get("name", "?")
    if model_class not in (_FUNCTIONAL, _SEQUENTIAL):
        raise _refuse(name, _not_functional(model_name, model_class))
    entries = body.get("layers")
    if not isinstance(entries, list):
        raise _refuse(name, f"its {CONFIG_MEMBER} lists no layers")
    known = _known_class_names()
    layers = 0
    for entry in entries:
        if not isinstance(entry, Mapping):
            raise _refuse(name, f"its {CONFIG_MEMBER} lists a layer that is not a mapping")
        if str(entry.get("module", "")).startswith(_OPS_MODULE):
            continue  # a keras.ops operation: the walk says whether it is on the way
        layers += 1
        class_name = entry.get("class_name")
        body = entry.get("config") if isinstance(entry.get("config"), Mapping) else {}
        inner = body.get("layer") if class_name == "Bidirectional" else None
        if class_name not in known:
            raise _refuse(name, _no_block(_entry_name(entry), class_name))
        if isinstance(inner, Mapping) and inner.get("class_name") not in known:
            raise _refuse(
                name, _no_block(_entry_name(entry), f"Bidirectional of {inner.get('class_name')}")
            )
    if layers > MAX_NODES:
        raise _refuse(name, f"{layers} layers are more than a graph may have ({MAX_NODES} nodes)")


def _not_functional(model_name: Any, model_class: Any) -> str:
    return (
        f"the model {model_name!r} ({model_class}) is not a functional model: only a "
        "keras.Model built with the functional API (or a keras.Sequential) opens as a graph"
    )


def _no_block(layer_name: Any, class_name: Any) -> str:
    return f"layer {layer_name!r} ({class_name}) has no block on the canvas"


def _load(path: Path, name: str) -> Any:
    """The model, loaded as the app loads every saved model (`safe_mode=True`)."""
    try:
        return keras.saving.load_model(path, compile=False, safe_mode=True)
    except Exception as error:  # whatever Keras raises for a file it cannot read
        words = " ".join(str(error).split())[:300] or type(error).__name__
        raise _refuse(name, f"Keras could not load it: {words}") from None


# The layers ------------------------------------------------------------------------------------


def _catalog() -> dict[type, graph_blocks.Block]:
    """Each block's layer class → the block (not Input, Output or the composite decoders)."""
    found: dict[type, graph_blocks.Block] = {}
    for item in graph_blocks.blocks():
        if not item.target or item.name in graph_blocks.DECODERS:
            continue
        found.setdefault(item.layer_class(), item)
    return found


def _known_class_names() -> set[str]:
    return {cls.__name__ for cls in _catalog()} | {"InputLayer", "Bidirectional", *_HEADS}


def node_id(layer_name: str, taken: set[str]) -> str:
    """A layer's name as a node id (`^[a-z][a-z0-9_]{0,63}$`), unique among `taken`."""
    base = re.sub(r"[^a-z0-9_]", "_", layer_name.lower())
    if not re.match(r"[a-z]", base):
        base = f"layer_{base}"
    base = base[:MAX_ID_LENGTH]
    found, count = base, 1
    while found in taken:
        count += 1
        suffix = f"_{count}"
        found = base[: MAX_ID_LENGTH - len(suffix)] + suffix
    taken.add(found)
    return found


def _json_value(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, (bool, int, str))


def _same(value: Any, default: Any) -> bool:
    """Whether a config value is a default (a tuple and a list alike, True and 1 not)."""
    if isinstance(default, tuple):
        default = list(default)
    if isinstance(value, tuple):
        value = list(value)
    return isinstance(value, bool) == isinstance(default, bool) and value == default


class _Walker:
    """The model's graph, walked from its output back to its input."""

    def __init__(self, model: Any, name: str):
        self.keras = keras
        self.model = model
        self.name = name
        self.catalog = _catalog()
        self.taken: set[str] = set()
        self.ids: dict[int, str] = {}  # id(layer) → node id
        self.calls: dict[int, int] = {}  # id(layer) → the node index of its one call
        self.found: list[dict[str, Any]] = []

    def refuse(self, message: str) -> SpecError:
        return _refuse(self.name, message)

    def nodes(self) -> list[dict[str, Any]]:
        # The class `keras.Model(inputs, outputs)` makes (not public; a subclass is refused).

        keras = self.keras
        model = self.model
        if type(model) is keras.Sequential:
            self._sequential()
        elif type(model) is Functional:
            self._functional()
        else:
            raise self.refuse(_not_functional(model.name, type(model).__name__))
        if len(self.found) > MAX_NODES:
            raise self.refuse(
                f"{len(self.found)} nodes are more than a graph may have ({MAX_NODES})"
            )
        return self.found

    # The model's shape

    def _functional(self) -> None:
        model = self.model
        tree = self.keras.tree
        inputs, outputs = tree.flatten(model.inputs), tree.flatten(model.outputs)
        if len(inputs) != 1:
            names = ", ".join(repr(t._keras_history.operation.name) for t in inputs)
            raise self.refuse(
                f"the model has {len(inputs)} inputs ({names}); a graph has one Input, the task's"
            )
        if len(outputs) != 1:
            raise self.refuse(
                f"the model has {len(outputs)} outputs; a graph has one Output, the task's head"
            )
        head, node_index, tensor_index = self._history(outputs[0])
        self._check_head(head, tensor_index)
        self._claim(head, node_index)
        arguments = head._inbound_nodes[node_index].arguments
        source = self._visit(self._single_input(head, arguments))
        self._add(head, graph_blocks.OUTPUT, {}, {"x": source})

    def _sequential(self) -> None:
        layers = list(self.model.layers)
        if not layers:
            raise self.refuse("the model has no layers")
        source = node_id("inputs", self.taken)
        self.found.append({"id": source, "layer": graph_blocks.INPUT})
        for index, layer in enumerate(layers):
            if id(layer) in self.ids:
                raise self.refuse(self._shared(layer))
            if index == len(layers) - 1:
                self._check_head(layer, 0)
                self._add(layer, graph_blocks.OUTPUT, {}, {"x": source})
                continue
            item, params = self._block(layer)
            if item.ports != ("x",) or item.variadic or item.optional_ports:
                raise self.refuse(
                    f"layer {layer.name!r} ({type(layer).__name__}) reads "
                    f"{', '.join(item.all_ports)}: not a layer of a Sequential chain"
                )
            source = self._add(layer, item.name, params, {"x": source})

    def _check_head(self, layer: Any, tensor_index: int) -> None:
        """Refuse a last layer that is not a head the Output block is (`_HEADS`)."""
        layers = self.keras.layers
        head = type(layer) in (layers.Dense, layers.Activation)
        activation = layer.get_config().get("activation") if head else None
        if not head or activation not in _HEADS[type(layer).__name__] or tensor_index:
            what = type(layer).__name__ + (f", activation {activation}" if head else "")
            raise self.refuse(
                f"the model's last layer {layer.name!r} ({what}) is not a head the canvas has: "
                "the graph's Output is a Dense with a softmax over the classes or no activation "
                "(values), or a sigmoid Activation (frames); end the model with one"
            )

    # One layer

    def _history(self, tensor: Any) -> tuple[Any, int, int]:
        history = getattr(tensor, "_keras_history", None)
        if history is None:
            raise self.refuse(f"a value the model reads ({tensor!r}) comes from no layer")
        operation, node_index, tensor_index = history
        return operation, node_index, tensor_index

    def _claim(self, layer: Any, node_index: int) -> bool:
        """Whether the layer is new; refused when it was called already at another node."""
        seen = self.calls.get(id(layer))
        if seen is None:
            self.calls[id(layer)] = node_index
            return True
        if seen != node_index:
            raise self.refuse(self._shared(layer))
        return False

    def _shared(self, layer: Any) -> str:
        return (
            f"layer {layer.name!r} ({type(layer).__name__}) is called more than once (shared "
            "weights); a block is called once"
        )

    def _visit(self, tensor: Any) -> str:
        """The node id of the layer a tensor comes from, after the nodes that layer reads."""
        keras = self.keras
        operation, node_index, tensor_index = self._history(tensor)
        if not isinstance(operation, keras.layers.Layer):
            raise self.refuse(
                f"{operation.name!r} is a keras.ops operation ({type(operation).__name__}), not "
                "a layer: it has no block on the canvas"
            )
        if tensor_index:
            raise self.refuse(
                f"layer {operation.name!r} ({type(operation).__name__}) gives several outputs "
                f"and its output {tensor_index} is read: a block has one output"
            )
        if not self._claim(operation, node_index):
            return self.ids[id(operation)]
        if type(operation) is keras.layers.InputLayer:
            return self._add(operation, graph_blocks.INPUT, {}, {})
        item, params = self._block(operation)
        ports = self._ports(operation, item, operation._inbound_nodes[node_index].arguments)
        inputs: dict[str, Any] = {}
        for port, value in ports.items():
            if isinstance(value, list):
                inputs[port] = [self._visit(part) for part in value]
            else:
                inputs[port] = self._visit(value)
        return self._add(operation, item.name, params, inputs)

    def _add(self, layer: Any, block: str, params: dict[str, Any], inputs: dict[str, Any]) -> str:
        found = node_id(layer.name, self.taken)
        self.ids[id(layer)] = found
        node: dict[str, Any] = {"id": found, "layer": block}
        if params:
            node["params"] = params
        if inputs:
            node["inputs"] = inputs
        self.found.append(node)
        return found

    def _block(self, layer: Any) -> tuple[graph_blocks.Block, dict[str, Any]]:
        """The layer's block and its params (a `Bidirectional`: its layer's, and the wrapping)."""
        keras = self.keras
        label = f"layer {layer.name!r} ({type(layer).__name__})"
        if type(layer) is keras.layers.Bidirectional:
            inner = layer.forward_layer
            item = self.catalog.get(type(inner))
            if item is None or not item.recurrent:
                raise self.refuse(_no_block(layer.name, f"Bidirectional of {type(inner).__name__}"))
            forward = _without(inner.get_config(), "name", "go_backwards")
            backward = _without(layer.backward_layer.get_config(), "name", "go_backwards")
            if forward != backward:
                raise self.refuse(f"{label}: its backward layer is not its forward layer reversed")
            merge_mode = layer.get_config().get("merge_mode")
            if merge_mode is None:
                raise self.refuse(f"{label} gives both directions apart (merge_mode None)")
            params = self._params(inner, item, label)
            if params.get("zero_output_for_mask") == inner.return_sequences:
                del params["zero_output_for_mask"]  # Bidirectional sets it so itself
            params["bidirectional"] = True
            if merge_mode != "concat":
                params["merge_mode"] = merge_mode
            return item, params
        item = self.catalog.get(type(layer))
        if item is None:
            raise self.refuse(_no_block(layer.name, type(layer).__name__))
        return item, self._params(layer, item, label)

    def _params(self, layer: Any, item: graph_blocks.Block, label: str) -> dict[str, Any]:
        """The layer's config restricted to the block's parameters, defaults left out."""
        keras = self.keras
        config = layer.get_config()
        offered = {
            param.name: param
            for param in graph_blocks.parameters(item)
            if param.name not in ("bidirectional", "merge_mode")
        }
        signature = inspect.signature(type(layer)).parameters
        for key, value in config.items():
            # A constructor argument no block sets (`return_state`, `stateful`) at a value of
            # its own: the block's layer would not be this one.
            argument = signature.get(key)
            if key in offered or key in _IGNORED_CONFIG or argument is None:
                continue
            default = argument.default
            if default is not inspect.Parameter.empty and not _same(value, default):
                raise self.refuse(f"{label} has {key}={value!r}, which a block cannot set")
        params: dict[str, Any] = {}
        for key, param in offered.items():
            if key not in config:
                continue
            value = config[key]
            if isinstance(value, tuple):
                value = list(value)
            if isinstance(value, Mapping):
                if self._default_object(value, param.default):
                    continue
                if not key.endswith("_initializer"):
                    raise self.refuse(
                        f"{label}: its {key} ({value.get('class_name', 'an object')}) is no "
                        "value a block parameter takes"
                    )
                value = self._initializer(value, key, label)
            elif isinstance(value, list):
                if not all(_json_value(part) for part in value):
                    raise self.refuse(f"{label}: its {key} {value!r} is no value a block takes")
            elif not _json_value(value):
                raise self.refuse(f"{label}: its {key} {value!r} is no value a block takes")
            if _same(value, param.default) and not param.required:
                continue
            if value == "linear" and param.default is None and key.endswith("activation"):
                continue  # Keras writes no activation as "linear"
            if key == "data_format" and param.default is None:
                if value == keras.config.image_data_format():
                    continue  # Keras writes the default format it resolved
            params[key] = value
        return params

    def _default_object(self, value: Mapping[str, Any], default: Any) -> bool:
        """Whether a serialized initializer is the parameter's default (`"glorot_uniform"`)."""
        keras = self.keras
        if not isinstance(default, str):
            return False
        try:
            return value == keras.initializers.serialize(keras.initializers.get(default))
        except (ValueError, TypeError):
            return False

    def _initializer(self, value: Mapping[str, Any], key: str, label: str) -> dict[str, Any]:
        config = value.get("config") or {}
        class_name = value.get("class_name")
        valid = (
            isinstance(class_name, str)
            and isinstance(config, Mapping)
            and value.get("registered_name") in (None, class_name)
            and all(
                _json_value(part) or (isinstance(part, list) and all(_json_value(p) for p in part))
                for part in config.values()
            )
        )
        if not valid:
            raise self.refuse(f"{label}: its {key} ({class_name}) is no initializer a block takes")
        return {"class_name": class_name, "config": dict(config)}

    def _ports(self, layer: Any, item: graph_blocks.Block, arguments: Any) -> dict[str, Any]:
        """The tensors of the layer's call, by the block's port; refused: what no port takes."""
        label = f"layer {layer.name!r} ({type(layer).__name__})"
        names = [
            name
            for name, argument in inspect.signature(type(layer).call).parameters.items()
            if name != "self"
            and argument.kind not in (argument.VAR_POSITIONAL, argument.VAR_KEYWORD)
        ]
        if item.variadic:
            port_of = {names[0]: item.variadic[0]} if names else {}
        else:
            port_of = dict(zip(names, item.ports, strict=False))
            port_of.update({port: port for port in item.optional_ports if port in names})
        given = dict(zip(names, arguments.args, strict=False))
        if len(arguments.args) > len(names):
            raise self.refuse(f"{label} is called with more arguments than its block passes")
        given.update(arguments.kwargs)
        ports: dict[str, Any] = {}
        for name, value in given.items():
            if name in port_of and value is not None:
                ports[port_of[name]] = value
        tensors = [
            part
            for value in ports.values()
            for part in (value if isinstance(value, (list, tuple)) else [value])
        ]
        for name, value in given.items():
            if name in port_of:
                continue
            if self._implicit(value, tensors):
                continue
            if self._holds_tensor(value):
                raise self.refuse(
                    f"{label} reads a tensor through {name!r}, which its block has no port for"
                )
            raise self.refuse(
                f"{label} is called with {name}={value!r}, which its block does not pass"
            )
        for port in item.ports:
            if port not in ports:
                raise self.refuse(f"{label} is called without its {port!r} input")
        for port, value in ports.items():
            if port in item.variadic:
                if not isinstance(value, (list, tuple)) or not all(
                    self._is_tensor(part) for part in value
                ):
                    raise self.refuse(f"{label} is not called on a list of tensors")
                ports[port] = list(value)
            elif not self._is_tensor(value):
                raise self.refuse(f"{label}: its {port!r} input is not one tensor")
        return ports

    def _single_input(self, layer: Any, arguments: Any) -> Any:
        """The one input of the head (read as the Output block reads it: port `x`)."""
        return self._ports(layer, graph_blocks.block(graph_blocks.OUTPUT), arguments)["x"]

    def _is_tensor(self, value: Any) -> bool:
        return isinstance(value, self.keras.KerasTensor)

    def _holds_tensor(self, value: Any) -> bool:
        if isinstance(value, (list, tuple)):
            return any(self._holds_tensor(part) for part in value)
        if isinstance(value, Mapping):
            return any(self._holds_tensor(part) for part in value.values())
        return self._is_tensor(value)

    def _implicit(self, value: Any, tensors: list[Any]) -> bool:
        """Whether a call argument is one Keras passes by itself: a harmless default, or the
        masks of the inputs (`mask_zero`), which the graph's layers pass along the same way."""
        if isinstance(value, (list, tuple)):
            return all(self._implicit(part, tensors) for part in value)
        if any(value is harmless for harmless in _HARMLESS):
            return True
        if self._is_tensor(value):
            masks = [getattr(tensor, "_keras_mask", None) for tensor in tensors]
            return any(mask is not None and self._same_mask(value, mask) for mask in masks)
        return False

    def _same_mask(self, given: Any, carried: Any, depth: int = 0) -> bool:
        """Whether a mask a layer is called with is the one its input carries: the same tensor,
        or (in a loaded model, where Keras saved the mask's `keras.ops` operations and computes
        the mask again as it calls the layers) the same operations on the same tensors."""
        if given is carried:
            return True
        if depth > MAX_MASK_DEPTH or not (self._is_tensor(given) and self._is_tensor(carried)):
            return False
        (op_a, node_a, index_a), (op_b, node_b, index_b) = (
            self._history(given),
            self._history(carried),
        )
        if isinstance(op_a, self.keras.layers.Layer) or type(op_a) is not type(op_b):
            return False
        if index_a != index_b:
            return False
        args_a = op_a._inbound_nodes[node_a].arguments
        args_b = op_b._inbound_nodes[node_b].arguments
        return self._same_argument(
            (args_a.args, args_a.kwargs), (args_b.args, args_b.kwargs), depth + 1
        )

    def _same_argument(self, a: Any, b: Any, depth: int) -> bool:
        """Whether two arguments of operations are alike: tensors `_same_mask`, structures
        item by item, constants equal."""
        if self._is_tensor(a) or self._is_tensor(b):
            return self._same_mask(a, b, depth)
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            return len(a) == len(b) and all(
                self._same_argument(x, y, depth) for x, y in zip(a, b, strict=True)
            )
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            return a.keys() == b.keys() and all(
                self._same_argument(a[key], b[key], depth) for key in a
            )
        if type(a) is not type(b) or not isinstance(a, (type(None), bool, int, float, str)):
            return False
        return a == b


def _without(config: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {key: value for key, value in config.items() if key not in keys}
