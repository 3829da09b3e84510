"""ONNX and LiteRT (TensorFlow Lite) files of a trained model, for runtimes without Keras.

    write_onnx(model, path)                       a model's forward pass, for onnxruntime
    write_onnx(seq2seq, path, decode_length=L)    an encoder–decoder's decode loop (beam search)
    write_onnx(seq2seq, path, decode_length=L, decoding=Greedy())        greedy, on request
    write_litert(model, path, batch_size=B)       the same, for the LiteRT interpreter
    write_litert(seq2seq, path, batch_size=B, decode_length=L, decoding=Beam(width=2))

What goes into the file:

- A model with one forward pass (sequence classifiers and regressors, the
  Vision Transformer, graph models, the pointer network's teacher-forced
  pass): its `call` with `training=False`. The inputs are named as the Keras
  inputs (`sequence`, `image`, ...; the pointer network's two are `sequence`
  and `pointers`), masks included: a padded token is masked in the file as in
  Keras, since the mask is computed from the ids inside the graph.
- An encoder–decoder (a model with `encode` and `decode_step`): its
  decoding as `decoding` says, `keras_seq.models.Beam()` (beam search of
  width 4 with length penalty 0.6, `beam_search`) unless told otherwise, or
  `Greedy()` (`greedy_decode`), the whole loop in the file (an ONNX `Loop`,
  a TFLite `WHILE`; beam search's top-k over the flattened `K × V`
  candidate scores, its gathers of each survivor's parent state and its
  selections convert to builtin operators of both formats). Input
  `source`, int32 `(batch, S)` ids right-padded with PAD (0); outputs `ids`
  int32 `(batch, decode_length)` (tokens, END, then PAD), `scores` float32
  `(batch,)` (the log-probability of each translation, not length-normalised)
  and `lengths` int32 `(batch,)` (tokens, END included): what
  `decoding.decode(model, source, decode_length)` gives in Keras. Text does
  not go in: ONNX has no string operators and LiteRT's builtin operators no
  tokeniser, so the SavedModel's `translate` signature has no counterpart;
  ids come from, and go back to
  text through, the run's vocabularies (`Vocabulary.encode` / `decode`).
  The ONNX file carries them in its metadata, under `VOCABULARIES_KEY`
  (the JSON of `Translator.vocabularies_json`): a subword vocabulary is a
  SentencePiece model there, so `sentencepiece` and `onnxruntime` alone
  translate text with it; and how it decodes under `DECODING_KEY`
  (`Translator.decoding_json`). A LiteRT file does not carry them.

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

LiteRT: TFLite's builtin operators only. TensorFlow's Flex delegate (the
`SELECT_TF_OPS` fallback) is linked by neither the interpreter of the
`tensorflow-cpu` wheel nor `ai-edge-litert`, so a file needing it would
not run; a model that needs it is refused with the operators named. The
batch size is fixed when the file is written (`batch_size`): Keras's
recurrent layers loop over a TensorList whose element shape
`(batch, units)` TFLite's builtin lowering needs to know. The other axes
stay as the model has them (a translator's source length stays free).
Models go through Keras's own `model.export(format="litert")` with those
settings. The decode loop goes through a SavedModel (Keras's
`ExportArchive`, as that export does) in which the sign-bit test above,
`BitwiseAnd(Bitcast(x), INT32_MIN) < 0`, becomes `Bitcast(x) < 0` (the same
truth value: the sign bit is set exactly when the int32 is negative), since
TFLite has `BITCAST` but no bitwise and; then `TFLiteConverter.from_saved_model`.

Both need the TensorFlow backend and a model in float32.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from builder_ui.engine.native_logs import without_startup_notices
from keras_seq.models import strategies

# The ONNX operator set of every file written here: the newest tf2onnx writes,
# and the first with BitwiseAnd.
ONNX_OPSET = 18
INT32_MIN = int(np.iinfo(np.int32).min)
# The metadata key of a translator's vocabularies in its ONNX file (`Translator.vocabularies_json`).
VOCABULARIES_KEY = "keras_seq.vocabularies"
# The metadata key of how its decode loop decodes (`Translator.decoding_json`).
DECODING_KEY = "keras_seq.decoding"


class ConversionError(ValueError):
    """A model that cannot be written in a format; the message says why."""


def check_exportable(format: str, precision: str | None) -> None:
    """Refuse, with the reason, what neither converter is given: another backend, not float32.

    Args:
        format: `"onnx"` or `"litert"`.
        precision: The dtype policy the model trained under (`"float32"`,
            `"mixed_float16"`, ...; None for float32).
    """
    label = "ONNX" if format == "onnx" else "LiteRT"
    if keras.backend.backend() != "tensorflow":
        raise ConversionError(
            f"the {label} export converts a TensorFlow graph, and the Keras backend is "
            f"{keras.backend.backend()!r}: run it with KERAS_BACKEND=tensorflow."
        )
    if precision not in (None, "float32"):
        raise ConversionError(
            f"it trained with mixed precision ({precision!r}), and an {label} file is a "
            "float32 graph (Keras's export needs the 'float32' dtype policy): train it with "
            "train.mixed_precision: float32, or export 'keras' or 'savedmodel'."
        )


# --- what is converted ------------------------------------------------------------------------


def _input_specs(model: Any, batch_size: int | None) -> Any:
    """`tf.TensorSpec`s shaped like the model's inputs (same structure), the batch axis fixed."""

    def spec(tensor):
        return tf.TensorSpec((batch_size, *tensor.shape[1:]), tensor.dtype, name=tensor.name)

    return keras.tree.map_structure(spec, model.input)


def _forward(model: Any):
    """The model's inference call, its outputs named `output_0`, `output_1`, ... (as LiteRT's)."""

    def serve(inputs):
        outputs = keras.tree.flatten(model(inputs, training=False))
        return {f"output_{index}": output for index, output in enumerate(outputs)}

    return serve


def _strategy(model: Any, decode_length: int | None, decoding: Any) -> Any:
    """The decoding of an encoder–decoder's file: `decoding` checked, `Beam()` for None.

    A model without a decode loop (`decode_length` None) takes no decoding.
    """
    if decode_length is None:
        if decoding is not None:
            raise ValueError(
                "Received an invalid value for argument `decoding`, expected None for a model "
                f"written without a decode loop (no decode_length), got {decoding!r}."
            )
        return None
    return strategies.exportable(strategies.Beam() if decoding is None else decoding, model)


def _decoder(model: Any, decode_length: int, strategy: Any):
    """`strategy`'s decoding as a function of the source ids: `{ids, scores, lengths}`."""

    def serve(source):
        result = strategy.decode(model, source, decode_length)
        return {"ids": result.ids, "scores": result.scores, "lengths": result.lengths}

    return serve


def _source_spec(batch_size: int | None) -> Any:
    return tf.TensorSpec((batch_size, None), tf.int32, name="source")


# --- ONNX -------------------------------------------------------------------------------------


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
    # The export extra, loaded when an ONNX export runs (it may not be installed).
    import onnx
    import tf2onnx

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
    unknown = sorted(_unknown_operators(proto.graph, onnx))
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


def _unknown_operators(graph: Any, onnx: Any) -> set[str]:
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
                unknown |= _unknown_operators(subgraph, onnx)
    return unknown


def _erfc(ctx, node, name, args):
    """`erfc(x) = 1 − erf(x)`: ONNX has Erf, not Erfc."""
    # The export extra, loaded when an ONNX export runs (it may not be installed).
    from tf2onnx import utils

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
    # The export extra, loaded when an ONNX export runs (it may not be installed).
    from onnx import TensorProto
    from tf2onnx import utils

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
    # The export extra, loaded when an ONNX export runs (it may not be installed).
    from tf2onnx.onnx_opset.controlflow import Select

    node.set_attr("handles_nan", True)  # read by the handler, dropped from the ONNX node
    Select.version_9(ctx, node)


# tf2onnx's custom handlers: TensorFlow operator → (handler, []).
CUSTOM_OPS = {
    "Erfc": (_erfc, []),
    "Bitcast": (_sign_bit, []),
    "Select": (_where, []),
    "SelectV2": (_where, []),
}


# --- LiteRT -----------------------------------------------------------------------------------


def write_litert(
    model: Any,
    path: str | os.PathLike,
    *,
    batch_size: int,
    decode_length: int | None = None,
    decoding: Any = None,
) -> None:
    """Write `model` (or its decode loop) as a LiteRT `.tflite` file; see the docstring.

    `path` must end in `.tflite` (Keras's exporter asks it). `decoding`, with
    `decode_length`, as for `write_onnx`: `Beam()` unless told otherwise
    (beam search converts to TFLite builtins, its `K` beams per source
    `K × batch_size` rows inside the loop), or `Greedy()`.

    Raises:
        ConversionError: Operators that are not TFLite builtins (named).
    """
    strategy = _strategy(model, decode_length, decoding)
    builtins = [tf.lite.OpsSet.TFLITE_BUILTINS]
    try:
        with _converter_stderr():
            if decode_length is None:
                model.export(
                    os.fspath(path),
                    format="litert",
                    verbose=False,
                    input_signature=[_input_specs(model, batch_size)],
                    target_spec={"supported_ops": builtins},
                )
                return
            content = _convert_decoder(model, batch_size, decode_length, strategy, builtins)
    except Exception as error:
        if not _is_converter_error(error):
            raise
        raise ConversionError(_converter_reason(error)) from error
    with open(path, "wb") as file:
        file.write(content)


@contextlib.contextmanager
def _converter_stderr() -> Iterator[None]:
    """Hold back what the converter's native code prints; drop it if the conversion fails.

    The TFLite converter prints its MLIR diagnostics on file descriptor 2
    and raises a `ConverterError` with the same text, from which the refusal
    takes the operators. On success what was printed is written back without
    TensorFlow's informational lines; on a `ConverterError` it is dropped (the
    refusal says it). File descriptor 2 is the process's: another thread's
    native output in those seconds is held back with it.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    dropped = False
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        except Exception as error:
            dropped = _is_converter_error(error)
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            text = without_startup_notices(captured.read().decode("utf-8", errors="replace"))
            if text and not dropped:
                sys.stderr.write(text)
                sys.stderr.flush()


def _is_converter_error(error: BaseException) -> bool:
    # TensorFlow does not export the class (tensorflow.lite.python.convert_phase.ConverterError).
    return type(error).__name__ == "ConverterError"


def _convert_decoder(
    model: Any, batch_size: int, decode_length: int, strategy: Any, builtins
) -> bytes:
    """The decode loop as a `.tflite` flatbuffer, through a SavedModel (see the docstring)."""
    with tempfile.TemporaryDirectory(prefix="keras-seq-litert-") as directory:
        archive = keras.export.ExportArchive()
        archive.track(model)
        archive.add_endpoint(
            "serve",
            _decoder(model, decode_length, strategy),
            input_signature=[_source_spec(batch_size)],
        )
        archive.write_out(directory, verbose=False)
        graph_file = os.path.join(directory, "saved_model.pb")
        saved_model = saved_model_pb2.SavedModel()
        with open(graph_file, "rb") as file:
            saved_model.ParseFromString(file.read())
        for meta_graph in saved_model.meta_graphs:
            graph = meta_graph.graph_def
            _drop_sign_bit_masks(graph.node, None, tf)
            for function in graph.library.function:
                _drop_sign_bit_masks(function.node_def, function.ret, tf)
        with open(graph_file, "wb") as file:
            file.write(saved_model.SerializeToString())
        converter = tf.lite.TFLiteConverter.from_saved_model(directory)
        converter.target_spec.supported_ops = builtins
        converter.experimental_enable_resource_variables = True  # as Keras's LiteRT export
        return converter.convert()


def _drop_sign_bit_masks(nodes: Any, returns: Any, tf: Any) -> int:
    """`BitwiseAnd(Bitcast(x), INT32_MIN)` → `Identity(Bitcast(x))` in a graph or function body.

    Only its sign is read afterwards (`< 0`, Keras's `signbit`), and an int32
    is negative exactly when its sign bit is set. In a function body a node's
    outputs are named by their argument (`BitwiseAnd:z:0`, `Identity:output:0`),
    so the references to a rewritten node are renamed (`returns`: the body's
    `ret` map). Returns the number of nodes rewritten.
    """
    by_name = {node.name: node for node in nodes}
    rewritten = []
    for node in nodes:
        if node.op != "BitwiseAnd":
            continue
        sources = [by_name.get(name.lstrip("^").split(":")[0]) for name in node.input]
        bitcast = [
            name
            for name, source in zip(node.input, sources, strict=True)
            if source is not None and source.op == "Bitcast"
        ]
        masks = [source for source in sources if source is not None and source.op == "Const"]
        if (
            len(bitcast) != 1
            or len(masks) != 1
            or tf.make_ndarray(masks[0].attr["value"].tensor).tolist() != INT32_MIN
        ):
            continue
        dtype = node.attr["T"]
        node.op = "Identity"
        del node.input[:]
        node.input.append(bitcast[0])
        kept = type(dtype)()
        kept.CopyFrom(dtype)
        node.attr.clear()
        node.attr["T"].CopyFrom(kept)
        rewritten.append(node.name)
    for name in rewritten:
        old, new = f"{name}:z:", f"{name}:output:"
        for node in nodes:
            for index, source in enumerate(node.input):
                if source.startswith(old):
                    node.input[index] = new + source[len(old) :]
        if returns is not None:
            for key, source in returns.items():
                if source.startswith(old):
                    returns[key] = new + source[len(old) :]
    return len(rewritten)


def _converter_reason(error: Exception) -> str:
    """The TFLite converter's long MLIR report, as the operators it could not convert."""
    text = str(error)
    operators = sorted(set(re.findall(r"'(tf\.\w+)' op", text)))
    if operators:
        return (
            f"the TFLite converter found no builtin operator for {', '.join(operators)} "
            "(TensorFlow's Flex delegate, the fallback, is in neither the tensorflow-cpu "
            "interpreter nor ai-edge-litert)"
        )
    lines = [line.strip() for line in text.splitlines() if "error" in line]
    return f"the TFLite converter failed: {(lines or [text])[0][:500]}"


__all__ = [
    "CUSTOM_OPS",
    "DECODING_KEY",
    "ONNX_OPSET",
    "ConversionError",
    "check_exportable",
    "write_litert",
    "write_onnx",
]
