"""An ONNX file of a trained model or of its decode loop (`write_onnx`), for onnxruntime.

What goes in is `runtime_files`' (a forward pass, or the whole decode loop).

ONNX: `tf2onnx.convert.from_function` on the traced call, opset 18, which is
what Keras's `model.export(format="onnx")` does on TensorFlow, with two
differences that it does not allow: opset 18 rather than tf2onnx's default 15
(ONNX's `BitwiseAnd` begins at 18), and conversions of our own (`CUSTOM_OPS`)
for two TensorFlow operators tf2onnx has none for and one it converts wrongly:

- `Erfc`, from the exact GELU (`keras.activations.gelu(x, approximate=False)`
  is `x/2 · erfc(−x/√2)`) in the Vision Transformer's feed-forward layers:
  `erfc(x) = 1 − erf(x)`. Where erfc is tiny (x > 4) the difference loses its
  relative precision but not its absolute one, about 1e-7, so the GELU moves
  by about `|x| · 1e-7` at most: far inside the exports' 1e-4.
- `Bitcast` float32 → int32 feeding `BitwiseAnd(·, INT32_MIN)`: the sign-bit
  test of Keras's float `ops.argmax` (it ranks −0.0 below +0.0,
  `keras/src/backend/tensorflow/numpy.py`, `signbit`), in the decode loop.
  ONNX's `BitCast` begins at opset 26, which tf2onnx cannot write; the
  sign bit itself is computed instead, `x < 0 or (x = 0 and 1/x < 0)`, as
  INT32_MIN or 0, which the `BitwiseAnd` passes on unchanged. Any other
  `Bitcast` is refused.
- `Select` and `SelectV2` (`keras.ops.where`): tf2onnx writes a float
  selection as arithmetic, `cast(c)·x + cast(¬c)·y`, unless it sees an
  infinity among constant inputs; but `0 · ±inf` is NaN, and beam search
  selects between scores that are −inf (the beams not yet alive, the
  candidates a finished beam cannot take): the converted beam search
  returned NaN scores and zero ids. Here every selection is ONNX's `Where`,
  exact for any values (tf2onnx's own handler, told the inputs may be
  infinite).

Every operator left in the file must be an ONNX operator of that opset, or
the export is refused with their names (tf2onnx itself only logs them).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx
import tensorflow as tf
import tf2onnx
from onnx import TensorProto
from tf2onnx import utils
from tf2onnx.onnx_opset.controlflow import Select

from builder_ui.results.runtime_files import (
    INT32_MIN,
    ConversionError,
    _decoder,
    _forward,
    _input_specs,
    _source_spec,
    _strategy,
    check_exportable,
)

# The ONNX operator set of every file written here: the newest tf2onnx writes,
# and the first with BitwiseAnd.
ONNX_OPSET = 18
# The metadata key of a translator's vocabularies in its ONNX file (`Translator.vocabularies_json`).
VOCABULARIES_KEY = "keras_seq.vocabularies"
# The metadata key of how its decode loop decodes (`Translator.decoding_json`).
DECODING_KEY = "keras_seq.decoding"


def write_onnx(
    model: Any,
    path: str | os.PathLike,
    *,
    decode_length: int | None = None,
    decoding: Any = None,
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Write `model` (or its decode loop) as an ONNX file; see the module docstring.

    Args:
        model: A Keras model, or an encoder–decoder (`encode`, `decode_step`).
        path: The file to write.
        decode_length: An encoder–decoder's most output tokens, END
            included: its decode loop is written. None: `model`'s forward pass.
        decoding: With `decode_length`: `keras_seq.models.Beam(...)` or
            `Greedy()`; None (default) is `Beam()`, beam search of width 4
            with length penalty 0.6. `Sample` is refused.
        metadata: Goes into the file's `metadata_props` (onnxruntime:
            `session.get_modelmeta().custom_metadata_map`); a translator's
            export keeps its vocabularies (`VOCABULARIES_KEY`) and its
            decoding (`DECODING_KEY`) there.

    Raises:
        ConversionError: An operator without an ONNX conversion (named).
    """
    strategy = _strategy(model, decode_length, decoding)
    if decode_length is None:
        signature = [_input_specs(model, None)]
        function = tf.function(_forward(model), input_signature=signature)
    else:
        signature = [_source_spec(None)]
        serve = _decoder(model, decode_length, strategy)
        function = tf.function(serve, input_signature=signature)
    with _tf2onnx_reasons() as reasons:
        proto, _ = tf2onnx.convert.from_function(
            function, signature, opset=ONNX_OPSET, custom_op_handlers=CUSTOM_OPS
        )
    unknown = sorted(_unknown_operators(proto.graph))
    if unknown:
        why = "".join(f"; {reason}" for reason in reasons)
        raise ConversionError(
            f"tf2onnx has no ONNX (opset {ONNX_OPSET}) conversion for the TensorFlow "
            f"operator(s) {', '.join(unknown)}{why}"
        )
    for key, value in (metadata or {}).items():
        proto.metadata_props.add(key=key, value=value)
    onnx.checker.check_model(proto)
    onnx.save_model(proto, os.fspath(path))


@contextlib.contextmanager
def _tf2onnx_reasons():
    """Keep tf2onnx's log to itself; yield the reasons our handlers gave for refusing a node.

    `from_function` converts what it can and logs the rest, with a traceback
    for a handler that raised: that is not for the user's terminal (the
    refusal names the operators, and gives these reasons).
    """
    reasons: list[str] = []

    class Reasons(logging.Handler):
        def emit(self, record):
            error = record.exc_info[1] if record.exc_info else None
            if isinstance(error, ConversionError) and str(error) not in reasons:
                reasons.append(str(error))

    logger = logging.getLogger("tf2onnx")
    handler, propagate = Reasons(), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield reasons
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def _unknown_operators(graph: Any) -> set[str]:
    """Operators of `graph` (and of its loops' bodies) that are not ONNX operators of the opset."""
    unknown = set()
    for node in graph.node:
        if node.domain in ("", "ai.onnx"):
            try:
                onnx.defs.get_schema(node.op_type, ONNX_OPSET, node.domain)
            except onnx.defs.SchemaError:
                unknown.add(node.op_type)
        else:
            unknown.add(f"{node.domain}.{node.op_type}")
        for attribute in node.attribute:
            for subgraph in [attribute.g, *attribute.graphs]:
                unknown |= _unknown_operators(subgraph)
    return unknown


def _erfc(ctx, node, name, args):
    """`erfc(x) = 1 − erf(x)`: ONNX has Erf, not Erfc."""
    x = node.input[0]
    dtype = utils.map_onnx_to_numpy_type(ctx.get_dtype(x))
    erf = ctx.make_node("Erf", [x])
    one = ctx.make_const(utils.make_name(f"{name}_one"), np.array(1, dtype=dtype))
    node.type = "Sub"
    ctx.replace_inputs(node, [one.output[0], erf.output[0]])


def _sign_bit(ctx, node, name, args):
    """Keras's sign-bit test `Bitcast(x: float32) → int32` then `BitwiseAnd(·, INT32_MIN)`.

    The int32 made is INT32_MIN where `x`'s sign bit is set, `x < 0 or
    (x = 0 and 1/x < 0)` (1/−0.0 is −inf), else 0: the `BitwiseAnd` with
    INT32_MIN then gives what it gives on the reinterpreted bits. A NaN
    counts as positive whatever its sign bit.
    """
    x = node.input[0]
    if ctx.get_dtype(x) != TensorProto.FLOAT or ctx.get_dtype(node.output[0]) != TensorProto.INT32:
        raise ConversionError(
            f"Bitcast {name!r} is not float32 to int32; only Keras's sign-bit test converts"
        )
    for consumer in ctx.find_output_consumers(node.output[0]):
        others = [other for other in consumer.input if other != node.output[0]]
        constant = ctx.get_node_by_output(others[0]) if len(others) == 1 else None
        if (
            consumer.type != "BitwiseAnd"
            or constant is None
            or not constant.is_const()
            or not np.all(constant.get_tensor_value(as_list=False) == INT32_MIN)
        ):
            raise ConversionError(
                f"Bitcast {name!r} feeds {consumer.type} {consumer.name!r}, not the sign-bit "
                "test BitwiseAnd(·, INT32_MIN); ONNX opset 18 cannot reinterpret bits"
            )

    def constant(value, dtype):
        return ctx.make_const(utils.make_name(name), np.array(value, dtype=dtype)).output[0]

    def op(op_type, *inputs):
        return ctx.make_node(op_type, list(inputs)).output[0]

    zero = constant(0, np.float32)
    reciprocal = op("Div", constant(1, np.float32), x)  # −inf for −0.0, +inf for +0.0
    negative_zero = op("And", op("Equal", x, zero), op("Less", reciprocal, zero))
    sign = op("Or", op("Less", x, zero), negative_zero)
    node.type = "Where"
    for attribute in ("T", "type"):
        node.attr.pop(attribute, None)
    ctx.replace_inputs(node, [sign, constant(INT32_MIN, np.int32), constant(0, np.int32)])


def _where(ctx, node, name, args):
    """`Select`/`SelectV2` as ONNX `Where`, never as `cast(c)·x + cast(¬c)·y`.

    tf2onnx's own handler (opset 9 on) writes that product form for float
    selections, faster in onnxruntime, unless it finds an infinity or NaN
    among constant inputs (its `handles_nan`); but a selection between
    computed values can meet ±inf too, and `0 · ±inf = NaN` then poisons
    the result whichever branch is chosen. Beam search selects among scores
    that are −inf (its beams not yet alive, a finished beam's other
    tokens). Marked as handling infinities, the handler writes `Where`,
    which is exact for any value.
    """
    node.set_attr("handles_nan", True)  # read by the handler, dropped from the ONNX node
    Select.version_9(ctx, node)


# tf2onnx's custom handlers: TensorFlow operator → (handler, []).
CUSTOM_OPS = {
    "Erfc": (_erfc, []),
    "Bitcast": (_sign_bit, []),
    "Select": (_where, []),
    "SelectV2": (_where, []),
}


__all__ = [
    "CUSTOM_OPS",
    "DECODING_KEY",
    "ONNX_OPSET",
    "VOCABULARIES_KEY",
    "ConversionError",
    "check_exportable",
    "write_onnx",
]
