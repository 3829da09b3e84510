"""Python source that rebuilds a Keras model's architecture, layer by layer, with literal arguments.

    model ─▶ get_config() ─▶ one constructor call per layer, with only the
                             arguments that differ from the layer's defaults
                          ─▶ the calls wired as in the functional graph
                          ─▶ a script with `build_model()`

For a functional model (what `keras.Model(inputs, outputs)` makes) every
layer becomes a line such as

    lstm_0 = keras.layers.LSTM(16, name="lstm_0")(sequence)

and the model is `keras.Model(inputs, outputs, name=...)`. A `keras.Sequential`
becomes a list of layers. Any other model (a subclass of `keras.Model` such
as `keras_seq.models.PointerNetwork` or `Seq2Seq`, whose `get_config` holds
its constructor's arguments) becomes one constructor call and
`build_from_config`, as Keras does when it loads a `.keras` file.

Each constructor call is checked as it is written: the layer it makes must
have exactly the original layer's config (the build state aside). When the
short call cannot reproduce it, the layer is written as
`Class.from_config({...the whole config...})`, which always can. The finished
script is then run here and its model compared with the original (parameter
count and every layer's config); a script that does not rebuild the same model
is never returned (`SourceError`).

The script assumes Keras's default dtype policy (float32) when it runs: layers
that trained under another policy carry it as their `dtype` argument.
"""

from __future__ import annotations

import builtins
import copy
import importlib
import inspect
import json
import keyword
import math
import pprint
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import keras
from keras.src.models.functional import Functional

# The longest line written before a call is split over several lines.
LINE_WIDTH = 99
INDENT = "    "
FUNCTION_NAME = "build_model"

# Keras namespaces searched, in order, for the public name of a Keras class.
_KERAS_NAMESPACES = (
    "layers",
    "initializers",
    "regularizers",
    "constraints",
    "optimizers",
    "losses",
    "metrics",
    "dtype_policies",
)
# keras_seq namespaces searched for the public name of a keras_seq class.
_KERAS_SEQ_NAMESPACES = ("layers", "models")
# Keys of a layer's config that describe its build state, not its architecture.
_BUILD_KEYS = frozenset({"build_config", "compile_config"})
_RESERVED = frozenset({"keras", "keras_seq", "model", "inputs", "outputs", FUNCTION_NAME})


class SourceError(RuntimeError):
    """The model cannot be written as Python source that rebuilds it exactly."""


class _CannotWrite(Exception):
    """A value or layer the short form cannot express; the caller falls back."""


# --- Formatting -------------------------------------------------------------------------------


@dataclass
class Call:
    """A call expression `func(arg, ..., key=value)` that formats itself within a line width."""

    func: str
    args: list[Any] = field(default_factory=list)
    kwargs: list[tuple[str, Any]] = field(default_factory=list)

    def format(self, indent: str = "", first_line_used: int = 0) -> str:
        """The call as text; parts go one per line when the call does not fit on one."""
        parts = [_text(arg, indent + INDENT) for arg in self.args]
        parts += [f"{key}={_text(value, indent + INDENT)}" for key, value in self.kwargs]
        flat = f"{self.func}({', '.join(parts)})"
        if "\n" not in flat and first_line_used + len(flat) <= LINE_WIDTH:
            return flat
        inner = indent + INDENT
        parts = [_text(arg, inner, len(inner)) for arg in self.args]
        parts += [
            f"{key}={_text(value, inner, len(inner) + len(key) + 1)}" for key, value in self.kwargs
        ]
        body = "".join(f"{inner}{part},\n" for part in parts)
        return f"{self.func}(\n{body}{indent})"


@dataclass
class Literal:
    """A literal Python value (a config dict, a list), formatted with `pprint` when long."""

    value: Any

    def format(self, indent: str = "", first_line_used: int = 0) -> str:
        width = max(40, LINE_WIDTH - len(indent))
        text = pprint.pformat(self.value, width=width, sort_dicts=False)
        return text.replace("\n", "\n" + indent)


@dataclass
class _ListExpression:
    """A list of expressions (the layers of a `keras.Sequential`)."""

    items: list[Any]

    def format(self, indent: str = "", first_line_used: int = 0) -> str:
        flat = "[" + ", ".join(_text(item, indent) for item in self.items) + "]"
        if "\n" not in flat and first_line_used + len(flat) <= LINE_WIDTH:
            return flat
        inner = indent + INDENT
        body = "".join(f"{inner}{_text(item, inner, len(inner))},\n" for item in self.items)
        return f"[\n{body}{indent}]"


def _text(value: Any, indent: str, used: int = 0) -> str:
    if isinstance(value, (Call, Literal, _ListExpression)):
        return value.format(indent, used)
    return str(value)


def python_literal(value: Any) -> str:
    """A Python expression for a config value: None, bools, numbers, strings, lists, dicts."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if hasattr(value, "item") and callable(value.item) and getattr(value, "shape", None) == ():
        value = value.item()  # a NumPy scalar
    if isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return 'float("nan")'
        if math.isinf(value):
            return 'float("inf")' if value > 0 else '-float("inf")'
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # double quotes; JSON escapes are valid Python
    if isinstance(value, tuple):
        items = ", ".join(python_literal(item) for item in value)
        return f"({items},)" if len(value) == 1 else f"({items})"
    if isinstance(value, list):
        return "[" + ", ".join(python_literal(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return (
            "{"
            + ", ".join(f"{python_literal(k)}: {python_literal(v)}" for k, v in value.items())
            + "}"
        )
    raise _CannotWrite(f"no literal for {type(value).__name__}")


# --- Comparing configs ------------------------------------------------------------------------


def normalized(config: Any) -> Any:
    """A config as plain JSON data, without build state: what two equal layers share."""

    def strip(value):
        if isinstance(value, Mapping):
            return {str(k): strip(v) for k, v in value.items() if k not in _BUILD_KEYS}
        if isinstance(value, (list, tuple)):
            return [strip(item) for item in value]
        if hasattr(value, "item") and callable(value.item) and getattr(value, "shape", None) == ():
            return value.item()
        return value

    return json.loads(json.dumps(strip(config), sort_keys=True, default=repr))


# --- The writer -------------------------------------------------------------------------------


def _is_serialized_object(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and {"class_name", "config"} <= set(value)
        and ("module" in value or "registered_name" in value)
    )


class _Writer:
    """Turns configs into calls, tracking the imports and names the script needs."""

    def __init__(self):
        self.keras = keras
        self.imports: dict[str, set[str]] = {}  # module -> names imported from it
        self.namespace: dict[str, Any] = {"keras": keras}
        self.names: set[str] = set(_RESERVED)

    # Class names ---------------------------------------------------------------------------

    def class_reference(self, cls: type) -> str:
        """How the script names `cls`: `keras.layers.LSTM`, or `CECLSTM` imported from keras_seq."""
        keras = self.keras
        name = cls.__name__
        if getattr(keras, name, None) is cls:
            return f"keras.{name}"
        for space in _KERAS_NAMESPACES:
            if getattr(getattr(keras, space, None), name, None) is cls:
                return f"keras.{space}.{name}"
        if cls.__module__.split(".")[0] == "keras_seq":
            for space in _KERAS_SEQ_NAMESPACES:
                module = importlib.import_module(f"keras_seq.{space}")
                if getattr(module, name, None) is cls:
                    return self._import(f"keras_seq.{space}", name, cls)
        if "." in cls.__qualname__ or cls.__module__ in ("__main__", "builtins"):
            raise _CannotWrite(f"{cls.__module__}.{cls.__qualname__} cannot be imported by name")
        return self._import(cls.__module__, name, cls)

    def _import(self, module: str, name: str, cls: type) -> str:
        if self.namespace.get(name, cls) is not cls or hasattr(builtins, name):
            raise _CannotWrite(f"two classes named {name}")
        self.imports.setdefault(module, set()).add(name)
        self.namespace[name] = cls
        self.names.add(name)
        return name

    def resolve(self, serialized: Mapping[str, Any]) -> type:
        """The class of a serialized Keras object (`{"module", "class_name", "config", ...}`)."""
        try:
            return type(self.keras.saving.deserialize_keras_object(dict(serialized)))
        except Exception as error:
            raise _CannotWrite(f"cannot deserialize {serialized.get('class_name')}") from error

    # Values and calls ----------------------------------------------------------------------

    def value(self, value: Any) -> Any:
        """A config value as an expression: nested layers and initializers as constructor calls."""
        if isinstance(value, _Name):
            return str(value)
        if _is_serialized_object(value):
            if value.get("class_name") == "DTypePolicy" and value.get("module") == "keras":
                return python_literal(value["config"]["name"])
            return self.call(self.resolve(value), value["config"])
        if isinstance(value, Mapping):
            items = [f"{python_literal(k)}: {_text(self.value(v), '')}" for k, v in value.items()]
            return "{" + ", ".join(items) + "}"
        if isinstance(value, list) and any(_is_serialized_object(item) for item in value):
            return "[" + ", ".join(_text(self.value(item), "") for item in value) + "]"
        return python_literal(value)

    def evaluate(self, expression: Any) -> Any:
        return eval(_text(expression, ""), dict(self.namespace))

    def call(
        self, cls: type, config: Mapping[str, Any], expected: Mapping[str, Any] | None = None
    ) -> Call:
        """The shortest constructor call that rebuilds an object with exactly `config`.

        Falls back to `cls.from_config({...})` when no shorter call does. `expected`
        is the config to rebuild when `config` names script variables (`_Name`).
        """
        target = normalized(config if expected is None else expected)
        for candidate in self._short_forms(cls, config):
            try:
                expression = self._short_call(cls, candidate)
                if normalized(self.evaluate(expression).get_config()) == target:
                    return expression
            except Exception:
                continue
        expression = Call(f"{self.class_reference(cls)}.from_config", [Literal(dict(config))])
        try:
            rebuilt = self.evaluate(expression)
        except Exception as error:
            raise _CannotWrite(f"{cls.__name__}.from_config fails: {error}") from error
        if normalized(rebuilt.get_config()) != target:
            raise _CannotWrite(f"{cls.__name__}.from_config does not give back its config")
        return expression

    def _short_forms(self, cls: type, config: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """Configs to write the call from; the first that rebuilds `config` wins."""
        forms = []
        keras = self.keras
        if issubclass(cls, keras.layers.Bidirectional) and _is_serialized_object(
            config.get("layer")
        ):
            # Bidirectional renames its layer `forward_<name>` and makes `backward_<name>`
            # itself: write the layer as it was given.
            layer = dict(config["layer"])
            layer["config"] = dict(layer["config"])
            layer["config"]["name"] = re.sub(r"^forward_", "", layer["config"].get("name", ""))
            simple = {k: v for k, v in config.items() if k != "backward_layer"}
            simple["layer"] = layer
            forms.append(simple)
        forms.append(config)
        return forms

    def _short_call(self, cls: type, config: Mapping[str, Any]) -> Call:
        reference = self.class_reference(cls)
        parameters = [
            p
            for p in list(inspect.signature(cls.__init__).parameters.values())[1:]
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]
        required = [p for p in parameters if p.default is p.empty]
        if any(p.name not in config for p in required):
            raise _CannotWrite("a required argument is not in the config")
        positional = [
            p.name for p in required if p.kind == p.POSITIONAL_OR_KEYWORD
        ]  # in signature order
        keyword_required = [p.name for p in required if p.name not in positional]
        args = [self.value(config[name]) for name in positional]
        kwargs = [(name, self.value(config[name])) for name in keyword_required]
        # What the class does with only the required arguments: write what differs. A class
        # whose defaults do not fit the required arguments (an encoder's width) gets them all.
        try:
            defaults = normalized(self.evaluate(Call(reference, args, kwargs)).get_config())
        except Exception:
            defaults = {}
        chosen = {p.name for p in required}
        for key, value in config.items():
            if key in chosen or key == "name":
                continue
            if key not in defaults or defaults[key] != normalized(value):
                kwargs.append((key, self.value(value)))
        if "name" in config:
            kwargs.append(("name", python_literal(config["name"])))
        return Call(reference, args, kwargs)

    # Variables -----------------------------------------------------------------------------

    def variable(self, name: str) -> str:
        """A fresh Python identifier made from a layer name."""
        base = re.sub(r"\W", "_", name) or "x"
        if base[0].isdigit():
            base = f"x_{base}"
        if keyword.iskeyword(base) or hasattr(builtins, base):
            base = f"{base}_"
        candidate, number = base, 1
        while candidate in self.names:
            number += 1
            candidate = f"{base}_{number}"
        self.names.add(candidate)
        return candidate

    def import_lines(self) -> list[str]:
        lines = ["import keras"]
        for module in sorted(self.imports):
            names = sorted(self.imports[module])
            line = f"from {module} import {', '.join(names)}"
            if len(line) > LINE_WIDTH:
                line = f"from {module} import (\n" + "".join(f"{INDENT}{n},\n" for n in names) + ")"
            lines.append(line)
        return lines


# --- Models -----------------------------------------------------------------------------------


def _is_functional(model: Any) -> bool:
    return type(model) is Functional


def _is_sequential(model: Any) -> bool:
    return type(model) is keras.Sequential


def _history(value: Any) -> tuple[str, int, int] | None:
    """`(layer, node, index)` of a serialized Keras tensor in a functional config, else None."""
    if isinstance(value, Mapping) and value.get("class_name") == "__keras_tensor__":
        layer, node, index = value["config"]["keras_history"]
        return layer, node, index
    return None


def _histories(value: Any) -> list[tuple[str, int, int]]:
    """Every serialized Keras tensor in a node's arguments."""
    found = _history(value)
    if found is not None:
        return [found]
    if isinstance(value, Mapping):
        return [h for item in value.values() for h in _histories(item)]
    if isinstance(value, (list, tuple)):
        return [h for item in value for h in _histories(item)]
    return []


def _live_class(model: Any, entry: Mapping[str, Any], writer: _Writer) -> type:
    """The class of a layer or operation of `model`'s config, from the model itself if it can."""
    name = entry.get("name") or entry.get("config", {}).get("name")
    for operation in getattr(model, "_operations", None) or model.layers:
        if operation.name == name and type(operation).__name__ == entry.get("class_name"):
            return type(operation)
    return writer.resolve(entry)


def _functional_body(writer: _Writer, model: Any, explicit_masks: bool) -> list[str]:
    """Lines of `build_model` for a functional model: inputs, one line per layer call.

    The arguments Keras fills in itself when a layer is called (`training=False`,
    the inputs' `mask`, even one computed by an operation such as the
    `not_equal` of an `Embedding` with `mask_zero=True`) are left to it, as
    when the model was first built, unless `explicit_masks`: then every
    argument Keras recorded is written out, operations as `keras.ops` calls.
    """
    config = model.get_config()
    entries = config["layers"]
    by_name = {entry["name"]: entry for entry in entries}
    classes = {entry["name"]: _live_class(model, entry, writer) for entry in entries}

    def is_operation(name: str) -> bool:
        return not issubclass(classes[name], keras.layers.Layer)

    def node_arguments(node: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        kwargs = dict(node.get("kwargs", {}))
        if not explicit_masks:
            # What Keras fills in itself when a layer is called: the inputs' mask and
            # training=False (outside of fit).
            mask = kwargs.get("mask", ...)
            if mask is None or (_history(mask) is not None and is_operation(_history(mask)[0])):
                kwargs.pop("mask")
            if kwargs.get("training", ...) in (None, False):
                kwargs.pop("training")
        return list(node.get("args", [])), kwargs

    # The layers the outputs need, walking back from them.
    needed: set[str] = set()
    stack = [h[0] for h in _tensor_histories(config["output_layers"])]
    while stack:
        name = stack.pop()
        if name in needed:
            continue
        needed.add(name)
        for node in by_name[name].get("inbound_nodes", []):
            stack += [h[0] for h in _histories(node_arguments(node))]
    needed |= {h[0] for h in _tensor_histories(config["input_layers"])}

    # (layer name, node index) -> variable; nodes whose outputs are structures.
    outputs: dict[tuple[str, int], str] = {}
    structured: set[tuple[str, int]] = set()
    for entry in entries:
        for node in entry.get("inbound_nodes", []):
            structured |= {(h[0], h[1]) for h in _histories(node) if h[2]}
    structured |= {(h[0], h[1]) for h in _tensor_histories(config["output_layers"]) if h[2]}
    for layer in model.layers:
        for index, node in enumerate(getattr(layer, "_inbound_nodes", [])):
            if len(getattr(node, "outputs", ())) > 1:
                structured.add((layer.name, index))

    def tensor(value):
        found = _history(value)
        if found is not None:
            layer, node, index = found
            name = outputs[(layer, node)]
            return f"{name}[{index}]" if (layer, node) in structured else name
        if isinstance(value, Mapping):
            return (
                "{" + ", ".join(f"{python_literal(k)}: {tensor(v)}" for k, v in value.items()) + "}"
            )
        if isinstance(value, list):
            return "[" + ", ".join(tensor(item) for item in value) + "]"
        if isinstance(value, tuple):
            return "()" if not value else "(" + ", ".join(map(tensor, value)) + ",)"
        return _text(writer.value(value), "")

    def call_arguments(node) -> list[str]:
        args, kwargs = node_arguments(node)
        return [tensor(arg) for arg in args] + [f"{k}={tensor(v)}" for k, v in kwargs.items()]

    lines = []
    for entry in entries:
        name = entry["name"]
        if name not in needed:
            continue
        cls = classes[name]
        nodes = entry.get("inbound_nodes", [])
        if issubclass(cls, keras.layers.InputLayer):
            variable = writer.variable(name)
            outputs[(name, 0)] = variable
            lines.append(f"{variable} = {_input_call(writer, entry['config']).format(INDENT)}")
            continue
        if is_operation(name):
            function = _operation_function(cls)
            options = [
                f"{key}={_text(writer.value(value), '')}"
                for key, value in entry["config"].items()
                if key != "name"
            ]
            for index, node in enumerate(nodes):
                variable = writer.variable(name if len(nodes) == 1 else f"{name}_{index}")
                outputs[(name, index)] = variable
                operation = Call(function, [*call_arguments(node), *options])
                lines.append(f"{variable} = {operation.format(INDENT, len(variable) + 7)}")
            continue
        layer_call = writer.call(cls, entry["config"])
        if len(nodes) == 1:
            variable = writer.variable(name)
            outputs[(name, 0)] = variable
            lines.append(_assign(variable, layer_call, call_arguments(nodes[0])))
            continue
        layer_variable = writer.variable(f"{name}_layer")
        lines.append(f"{layer_variable} = {layer_call.format(INDENT, len(layer_variable) + 7)}")
        for index, node in enumerate(nodes):
            variable = writer.variable(f"{name}_{index}")
            outputs[(name, index)] = variable
            layer_call = Call(layer_variable, call_arguments(node))
            lines.append(f"{variable} = {layer_call.format(INDENT, len(variable) + 7)}")
    inputs = _structure(config["input_layers"], outputs)
    model_outputs = _structure(config["output_layers"], outputs, structured)
    model_call = Call(
        "keras.Model", [inputs, model_outputs], [("name", python_literal(config["name"]))]
    )
    if config.get("trainable") is False:
        model_call.kwargs.append(("trainable", "False"))
    lines.append(f"return {model_call.format(INDENT, len(INDENT) + 7)}")
    return lines


def _operation_function(cls: type) -> str:
    """`keras.ops.not_equal` for the operation class `NotEqual`, if Keras has that function."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()
    if not callable(getattr(keras.ops, snake, None)):
        raise _CannotWrite(f"operation {cls.__name__} has no keras.ops function {snake}")
    return f"keras.ops.{snake}"


def _tensor_histories(value: Any) -> list[list]:
    """Every `[layer, node, index]` triple in a functional config's inputs or outputs."""
    if isinstance(value, (list, tuple)) and len(value) == 3 and isinstance(value[0], str):
        return [list(value)]
    if isinstance(value, Mapping):
        return [h for item in value.values() for h in _tensor_histories(item)]
    if isinstance(value, (list, tuple)):
        return [h for item in value for h in _tensor_histories(item)]
    return []


def _structure(value: Any, outputs: Mapping, structured: set | frozenset = frozenset()) -> str:
    """The script's expression for `input_layers` / `output_layers` of a functional config."""
    if isinstance(value, (list, tuple)) and len(value) == 3 and isinstance(value[0], str):
        layer, node, index = value
        name = outputs[(layer, node)]
        return f"{name}[{index}]" if (layer, node) in structured else name
    if isinstance(value, Mapping):
        items = ", ".join(
            f"{python_literal(k)}: {_structure(v, outputs, structured)}" for k, v in value.items()
        )
        return "{" + items + "}"
    items = [_structure(item, outputs, structured) for item in value]
    return items[0] if len(items) == 1 else "[" + ", ".join(items) + "]"


def _assign(variable: str, layer_call: Call, arguments: list[str]) -> str:
    """`variable = Layer(...)(arguments)`, split the way black would split it when too long."""
    prefix = len(INDENT) + len(variable) + 3
    head = layer_call.format(INDENT, prefix)
    call_args = ", ".join(arguments)
    if "\n" not in head:
        if prefix + len(head) + len(call_args) + 2 <= LINE_WIDTH:
            return f"{variable} = {head}({call_args})"
        inner = INDENT * 2
        if prefix + len(head) + 1 <= LINE_WIDTH and len(inner) + len(call_args) <= LINE_WIDTH:
            return f"{variable} = {head}(\n{inner}{call_args}\n{INDENT})"
        head = layer_call.format(INDENT, LINE_WIDTH)  # split the constructor's arguments
    return f"{variable} = {head}({call_args})"


def _input_call(writer: _Writer, config: Mapping[str, Any]) -> Call:
    batch_shape = config.get("batch_shape") or config.get("batch_input_shape")
    kwargs: list[tuple[str, Any]] = []
    args: list[Any] = []
    if batch_shape is not None and batch_shape[0] is None:
        args.append(python_literal(tuple(batch_shape[1:])))
    elif batch_shape is not None:
        kwargs.append(("batch_shape", python_literal(tuple(batch_shape))))
    if config.get("dtype") is not None:
        kwargs.append(("dtype", _text(writer.value(config["dtype"]), "")))
    for flag in ("sparse", "ragged", "optional"):
        if config.get(flag):
            kwargs.append((flag, "True"))
    kwargs.append(("name", python_literal(config["name"])))
    return Call("keras.Input", args, kwargs)


def _sequential_body(writer: _Writer, model: Any) -> list[str]:
    config = model.get_config()
    items = []
    for entry in config["layers"]:
        cls = _live_class(model, entry, writer)
        if entry["class_name"] == "InputLayer":
            items.append(_input_call(writer, entry["config"]))
        else:
            items.append(writer.call(cls, entry["config"]))
    call = Call(
        "keras.Sequential", [_ListExpression(items)], [("name", python_literal(model.name))]
    )
    return [f"return {call.format(INDENT, len(INDENT) + 7)}"]


class _Name(str):
    """A variable of the script standing for a config value (a nested model built above)."""


def _nested_models(writer: _Writer, model: Any, config: dict[str, Any]) -> list[str]:
    """Functional models among a subclass's constructor arguments, each built by a function.

    `AssembledSeq2Seq(..., encoder=...)` takes a functional encoder: it is written with
    the functional API in `build_<argument>()` inside `build_model`, and the constructor
    call names its result. The writer checks calls against a fresh copy of it.
    """
    lines = []
    for key, value in list(config.items()):
        part = getattr(model, key, None)
        if not (_is_serialized_object(value) and _is_functional(part)):
            continue
        function, variable = writer.variable(f"build_{key}"), writer.variable(key)
        body = _functional_body(writer, part, explicit_masks=False)
        lines.append(f"def {function}():")
        lines += [f"{INDENT}{line}" for line in body]
        lines += ["", f"{variable} = {function}()"]
        # A copy: deserializing empties the dict it is given.
        fresh = writer.keras.saving.deserialize_keras_object(copy.deepcopy(value))
        writer.namespace[variable] = fresh
        config[key] = _Name(variable)
    return lines


def _subclass_body(writer: _Writer, model: Any) -> list[str]:
    config = model.get_config()
    target = dict(config)
    lines = _nested_models(writer, model, config)
    call = writer.call(type(model), config, target)
    lines.append(f"model = {call.format(INDENT, len(INDENT) + 8)}")
    build_config = model.get_build_config() if model.built else None
    if build_config and build_config.get("input_shape") is not None:
        lines.append(f"model.build_from_config({Literal(build_config).format(INDENT)})")
    lines.append("return model")
    return lines


def model_body(model: Any, *, explicit_masks: bool = False) -> tuple[list[str], list[str]]:
    """`(import lines, lines of build_model's body)` that rebuild `model`'s architecture.

    Args:
        model: The model.
        explicit_masks: Functional models: write every argument Keras recorded
            for each call, instead of leaving those it fills in itself (see
            `_functional_body`).

    Raises:
        SourceError: Some layer cannot be written (a class defined in
            `__main__`, a config that does not rebuild the layer).
    """
    writer = _Writer()
    try:
        if _is_functional(model):
            body = _functional_body(writer, model, explicit_masks)
        elif _is_sequential(model):
            body = _sequential_body(writer, model)
        else:
            body = _subclass_body(writer, model)
    except _CannotWrite as error:
        raise SourceError(
            f"Cannot write {type(model).__name__} {model.name!r} as Python source: {error}."
        ) from None
    return writer.import_lines(), body


def model_source(model: Any, *, docstring: str = "", footer: str | None = None) -> str:
    """A standalone script whose `build_model()` rebuilds `model`'s architecture.

    Args:
        model: A built Keras model (functional, Sequential, or a registered
            subclass whose `get_config` holds its constructor arguments).
        docstring: The module docstring (what the script is, where it came from).
        footer: What runs under `if __name__ == "__main__":`; default: build
            the model and print its summary.

    Returns:
        The script's text. It imports `keras` and, for their layers,
        `keras_seq` modules, and nothing of builder_ui.

    Raises:
        SourceError: The model cannot be written, or the script does not
            rebuild it (checked by running it here).
    """
    if footer is None:
        footer = "model = build_model()\nmodel.summary()"
    error = None
    for explicit_masks in (False, True) if _is_functional(model) else (False,):
        imports, body = model_body(model, explicit_masks=explicit_masks)
        parts = []
        if docstring:
            parts.append(f'"""{docstring.strip()}\n"""\n')
        parts.append("\n".join(imports) + "\n\n")
        parts.append(
            f"\ndef {FUNCTION_NAME}():\n"
            f'{INDENT}"""Builds the model: same layers, same configs, fresh weights."""\n'
            + "".join(f"{INDENT}{line}\n" for line in body)
        )
        parts.append('\n\nif __name__ == "__main__":\n')
        parts.append("".join(f"{INDENT}{line}\n" for line in footer.splitlines()))
        source = "".join(parts)
        try:
            check_source(source, model)
        except SourceError as failure:
            error = failure
            continue
        return source
    raise error


def architecture(model: Any) -> dict[str, Any]:
    """What a rebuilt model must share with the original, as plain data.

    - `params`: the parameter count;
    - `layers`: the class and config of each of `model.layers`;
    - `sublayers`: the class and config of the layers nested in those,
      without their names (Keras numbers unnamed sublayers, such as
      `MultiHeadAttention`'s `dropout_3`, by how many it made before);
    - `graph` (functional models): every layer or operation in order with
      its config and the inputs of each call, tensors named by the position
      of the layer that made them, operations' own names left out.
    """

    def describe(layer, keep_name=True):
        # A nested functional model (an `AssembledSeq2Seq`'s encoder) by its graph, where
        # operations such as `not_equal_2` are not told apart by their numbered names.
        if _is_functional(layer):
            config = {"name": layer.name, "graph": _graph(layer)}
        else:
            config = normalized(layer.get_config())
        if not keep_name:
            config.pop("name", None)
        return {"class": f"{type(layer).__module__}.{type(layer).__qualname__}", "config": config}

    top = list(model.layers)
    nested = [
        layer
        for layer in getattr(model, "_flatten_layers", lambda **_: [])(
            include_self=False, recursive=True
        )
        if all(layer is not t for t in top)
    ]
    result = {
        "params": int(model.count_params()),
        "layers": [describe(layer) for layer in top],
        "sublayers": [describe(layer, keep_name=False) for layer in nested],
    }
    if _is_functional(model):
        result["graph"] = _graph(model)
    return result


def _graph(model: Any) -> dict[str, Any]:
    config = model.get_config()
    entries = config["layers"]
    position = {entry["name"]: index for index, entry in enumerate(entries)}

    def canonical(value):
        found = _history(value)
        if found is not None:
            layer, node, index = found
            return {
                "tensor": [position[layer], node, index],
                **{k: v for k, v in value["config"].items() if k != "keras_history"},
            }
        if (
            isinstance(value, (list, tuple))
            and len(value) == 3
            and value
            and (isinstance(value[0], str) and value[0] in position)
        ):
            return {"tensor": [position[value[0]], value[1], value[2]]}
        if isinstance(value, Mapping):
            return {k: canonical(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [canonical(item) for item in value]
        return value

    layers = []
    for entry in entries:
        layer_config = normalized(entry["config"])
        operation = entry.get("module", "").startswith("keras.src.ops")
        if operation:
            layer_config.pop("name", None)
        layers.append(
            {
                "class": entry["class_name"],
                "config": layer_config,
                "calls": normalized(canonical(entry.get("inbound_nodes", []))),
            }
        )
    return {
        "layers": layers,
        "inputs": normalized(canonical(config["input_layers"])),
        "outputs": normalized(canonical(config["output_layers"])),
    }


def check_source(source: str, model: Any) -> None:
    """Run the script's `build_model()` here and compare its model with `model`.

    Raises:
        SourceError: naming the first difference.
    """
    namespace: dict[str, Any] = {"__name__": "keras_seq_export_check"}
    try:
        exec(compile(source, "<exported model>", "exec"), namespace)
        rebuilt = namespace[FUNCTION_NAME]()
    except Exception as error:
        raise SourceError(
            f"The script written for {model.name!r} does not run: {type(error).__name__}: {error}"
        ) from error
    expected, got = architecture(model), architecture(rebuilt)
    what = f"The script written for {model.name!r}"
    if expected["params"] != got["params"]:
        raise SourceError(
            f"{what} builds {got['params']:,} parameters, the model has {expected['params']:,}."
        )
    for key in ("layers", "sublayers"):
        if len(expected[key]) != len(got[key]):
            raise SourceError(
                f"{what} builds {len(got[key])} {key}, the model has {len(expected[key])}."
            )
        for mine, theirs in zip(expected[key], got[key], strict=True):
            if mine != theirs:
                raise SourceError(
                    f"{what} builds {theirs['class']} {theirs['config'].get('name', '')!r} "
                    f"with another config than the model's {mine['config'].get('name', '')!r}."
                )
    if expected.get("graph") != got.get("graph"):
        raise SourceError(f"{what} connects its layers differently from the model.")
