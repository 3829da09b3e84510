"""A LiteRT (TensorFlow Lite) file of a trained model or of its decode loop (`write_litert`).

What goes in is `runtime_files`' (a forward pass, or the whole decode loop).

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
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import keras
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from builder_ui.engine.native_logs import without_startup_notices
from builder_ui.results.runtime_files import (
    INT32_MIN,
    ConversionError,
    _decoder,
    _input_specs,
    _source_spec,
    _strategy,
    check_exportable,
)


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
    "ConversionError",
    "check_exportable",
    "write_litert",
]
