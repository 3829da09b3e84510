"""Export tab actions: a finished run as a `.keras` file, a SavedModel zip, Python code, ONNX
or LiteRT.

A translating run's SavedModel, ONNX and LiteRT files hold its decode loop, which decodes as
the tab's decoding choice says: beam search (width 4, length penalty 0.6 unless changed, the
setting that scored three to four BLEU above greedy decoding in
benchmarks/results/translation.md) or greedy decoding (`builder_ui.results.export`'s
`decoding`). Other runs and formats have no decode loop: the choice is hidden and not passed.

No Gradio here.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from builder_ui.app.context import AppContext, AppError
from builder_ui.builders.graph import translates
from builder_ui.results import export
from keras_seq.models import Beam, Greedy

# The Export tab's decoding choice: its values, and the defaults of the tab's inputs (those of
# `keras_seq.models.Beam()`).
DECODINGS = {"beam": "Beam search", "greedy": "Greedy"}
DEFAULT_DECODING = "beam"
DEFAULT_BEAM_WIDTH = Beam().width
DEFAULT_LENGTH_PENALTY = Beam().length_penalty

EXPORT_FORMATS = {
    "savedmodel": "TensorFlow SavedModel (zip)",
    "keras": "Keras file (.keras)",
    "python": "Python code (.py)",
    "onnx": "ONNX, for onnxruntime (.onnx)",
    "litert": "LiteRT / TensorFlow Lite, batch of 1 (.tflite)",
}


@dataclass
class Exported:
    """A download: the file, a snippet that loads or runs it, and how its decode loop decodes
    (`"beam search: width 4, length penalty 0.6"`; None without a decode loop)."""

    path: Path
    snippet: str
    decoding: str | None = None


def chooses_decoding(ctx: AppContext, run_id: str | None, fmt: str | None) -> bool:
    """Whether the Export tab offers the decoding choice: a translating run's SavedModel, ONNX
    or LiteRT export (the files that hold its decode loop)."""
    if not run_id or fmt not in export.DECODING_FORMATS:
        return False
    try:
        record = ctx.record(run_id)
    except AppError:
        return False
    return translates(record.spec)


def _strategy(method: str, beam_width: object, length_penalty: object):
    """`keras_seq.models.Greedy()` or `Beam(beam_width, length_penalty)`, or an `AppError`."""
    if method not in DECODINGS:
        raise AppError(f"Decoding: expected one of {', '.join(DECODINGS)}, got {method!r}.")
    if method == "greedy":
        return Greedy()
    if isinstance(beam_width, float) and beam_width.is_integer():
        beam_width = int(beam_width)  # a number field's 4.0
    try:
        return Beam(width=beam_width, length_penalty=length_penalty)
    except ValueError as error:
        raise AppError(f"Decoding: {error}") from None


def describe_decoding(strategy) -> str:
    """`"beam search: width 4, length penalty 0.6"` or `"greedy decoding"`."""
    if strategy.method == "greedy":
        return "greedy decoding"
    text = f"beam search: width {strategy.width}, length penalty {strategy.length_penalty:g}"
    if strategy.coverage_penalty:
        text += f", coverage penalty {strategy.coverage_penalty:g}"
    return text


def _snippet(fmt: str, name: str, record, decoding: str | None = None) -> str:
    if fmt == "keras":
        return (
            "import keras\n"
            "import keras_seq  # registers keras_seq's layers and models\n\n"
            f'model = keras.saving.load_model("{name}", safe_mode=True)\n'
            "model.summary()\n"
        )
    if fmt == "savedmodel":
        folder = name.removesuffix(".zip")
        serve = (
            'print(reloaded.translate(tf.constant(["a sentence ."])))  # texts -> translations\n'
            "target_ids = reloaded.serve(source_ids)  # int ids (batch, time) -> target ids\n"
            f"print(reloaded.decoding())  # how it decodes: {decoding}"
            if translates(record.spec)
            else "outputs = reloaded.serve(inputs)  # a batch shaped like the training inputs"
        )
        return (
            "import zipfile\n\nimport tensorflow as tf  # TensorFlow alone: no keras_seq needed\n\n"
            f'zipfile.ZipFile("{name}").extractall("{folder}")\n'
            f'reloaded = tf.saved_model.load("{folder}/savedmodel")\n'
            f"{serve}\n"
        )
    if fmt == "onnx":
        return _onnx_snippet(name, translates(record.spec), decoding)
    if fmt == "litert":
        return _litert_snippet(name, translates(record.spec), decoding)
    module = name.removesuffix(".py").replace("-", "_")
    return (
        f"# Save the file as {module}.py, then:\n"
        f"from {module} import build_model\n\n"
        "model = build_model()  # the same architecture, fresh weights\n"
        "model.summary()\n"
    )


def _onnx_snippet(name: str, translating: bool, decoding: str | None = None) -> str:
    if translating:
        run = (
            "# source: int32 (batch, time) token ids of the run's source vocabulary, 0-padded\n"
            'ids, scores, lengths = session.run(["ids", "scores", "lengths"], {"source": source})\n'
            f"# ids: target ids of {decoding} (tokens, END, then PAD);\n"
            "# scores: log-probabilities\n"
        )
    else:
        run = (
            "# inputs: a batch shaped like the training inputs (the input is named as the\n"
            "# model's: session.get_inputs(); the pointer network's two are sequence, pointers)\n"
            "name = session.get_inputs()[0].name\n"
            '(outputs,) = session.run(["output_0"], {name: inputs})\n'
        )
    return (
        "import onnxruntime  # no TensorFlow, Keras or keras_seq needed\n\n"
        f'session = onnxruntime.InferenceSession("{name}")\n{run}'
    )


def _litert_snippet(name: str, translating: bool, decoding: str | None = None) -> str:
    if translating:
        run = (
            "# source: int32 (1, time) token ids of the run's source vocabulary, 0-padded\n"
            "out = runner(source=source)  # out['ids'], out['scores'], out['lengths']\n"
            f"# ids: target ids of {decoding}\n"
        )
    else:
        run = (
            "# inputs: one example (a batch of 1) shaped like the training inputs\n"
            "(name,) = runner.get_input_details()  # the model's input name\n"
            "outputs = runner(**{name: inputs})['output_0']\n"
        )
    return (
        "from ai_edge_litert.interpreter import Interpreter  # pip install ai-edge-litert\n\n"
        f'runner = Interpreter(model_path="{name}").get_signature_runner()\n{run}'
    )


def export_run(
    ctx: AppContext,
    run_id: str,
    fmt: str,
    decoding: str = DEFAULT_DECODING,
    beam_width: object = DEFAULT_BEAM_WIDTH,
    length_penalty: object = DEFAULT_LENGTH_PENALTY,
) -> Exported:
    """Export a finished run (`builder_ui.results.export`) and copy it to a download.

    Args:
        decoding: `"beam"` or `"greedy"`: how a translating run's SavedModel, ONNX or LiteRT
            file decodes; with `beam_width` and `length_penalty` for beam search. Not used for
            other runs and formats (`chooses_decoding`), whose files have no decode loop.
    """

    if fmt not in EXPORT_FORMATS:
        raise AppError(f"Format: expected one of {', '.join(EXPORT_FORMATS)}, got {fmt!r}.")
    record = ctx.record(run_id)
    strategy = None
    if chooses_decoding(ctx, run_id, fmt):
        strategy = _strategy(decoding, beam_width, length_penalty)
    if fmt == "savedmodel":
        name = f"{run_id}-savedmodel.zip"
    elif fmt == "keras":
        name = f"{run_id}.keras"
    elif fmt == "python":
        name = f"model_{run_id.replace('-', '_')}.py"
    else:
        name = f"{run_id}{export.SUFFIXES[fmt]}"
    target = ctx.download_path(name)
    try:
        if ctx.store.read_only is None or fmt == "keras":
            # kept in the run's export/ folder
            path = export.export(ctx.store, run_id, fmt, decoding=strategy)
            shutil.copyfile(
                path.parent / export.SAVEDMODEL_ZIP if fmt == "savedmodel" else path, target
            )
        elif fmt == "savedmodel":  # a read-only store: made beside the download, then zipped
            saved = export.export(
                ctx.store, run_id, fmt, out=target.parent / export.SAVEDMODEL_DIR, decoding=strategy
            )
            export.zip_savedmodel(saved, target)
            shutil.rmtree(saved)
        else:
            export.export(ctx.store, run_id, fmt, out=target, decoding=strategy)
    except export.ExportError as error:
        raise AppError(str(error)) from None
    described = None if strategy is None else describe_decoding(strategy)
    return Exported(target, _snippet(fmt, name, record, described), described)
