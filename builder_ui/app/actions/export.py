"""Export tab actions: a finished run as a `.keras` file, a SavedModel zip, Python code, ONNX
or LiteRT.

No Gradio here.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from builder_ui.app.context import AppContext, AppError
from builder_ui.builders.graph import translates
from builder_ui.results import export

EXPORT_FORMATS = {
    "savedmodel": "TensorFlow SavedModel (zip)",
    "keras": "Keras file (.keras)",
    "python": "Python code (.py)",
    "onnx": "ONNX, for onnxruntime (.onnx)",
    "litert": "LiteRT / TensorFlow Lite, batch of 1 (.tflite)",
}


@dataclass
class Exported:
    """A download: the file and a snippet that loads or runs it."""

    path: Path
    snippet: str


def _snippet(fmt: str, name: str, record) -> str:
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
            "target_ids = reloaded.serve(source_ids)  # int ids (batch, time) -> greedy target ids"
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
        return _onnx_snippet(name, translates(record.spec))
    if fmt == "litert":
        return _litert_snippet(name, translates(record.spec))
    module = name.removesuffix(".py").replace("-", "_")
    return (
        f"# Save the file as {module}.py, then:\n"
        f"from {module} import build_model\n\n"
        "model = build_model()  # the same architecture, fresh weights\n"
        "model.summary()\n"
    )


def _onnx_snippet(name: str, translating: bool) -> str:
    if translating:
        run = (
            "# source: int32 (batch, time) token ids of the run's source vocabulary, 0-padded\n"
            'ids, scores, lengths = session.run(["ids", "scores", "lengths"], {"source": source})\n'
            "# ids: greedy target ids (tokens, END, then PAD); scores: log-probabilities\n"
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


def _litert_snippet(name: str, translating: bool) -> str:
    if translating:
        run = (
            "# source: int32 (1, time) token ids of the run's source vocabulary, 0-padded\n"
            "out = runner(source=source)  # out['ids'], out['scores'], out['lengths']\n"
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


def export_run(ctx: AppContext, run_id: str, fmt: str) -> Exported:
    """Export a finished run (`builder_ui.results.export`) and copy it to a download."""

    if fmt not in EXPORT_FORMATS:
        raise AppError(f"Format: expected one of {', '.join(EXPORT_FORMATS)}, got {fmt!r}.")
    record = ctx.record(run_id)
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
            path = export.export(ctx.store, run_id, fmt)  # kept in the run's export/ folder
            shutil.copyfile(
                path.parent / export.SAVEDMODEL_ZIP if fmt == "savedmodel" else path, target
            )
        elif fmt == "savedmodel":  # a read-only store: made beside the download, then zipped
            saved = export.export(ctx.store, run_id, fmt, out=target.parent / export.SAVEDMODEL_DIR)
            export.zip_savedmodel(saved, target)
            shutil.rmtree(saved)
        else:
            export.export(ctx.store, run_id, fmt, out=target)
    except export.ExportError as error:
        raise AppError(str(error)) from None
    return Exported(target, _snippet(fmt, name, record))
