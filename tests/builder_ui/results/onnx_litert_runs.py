"""Runs for the ONNX and LiteRT export tests, and the runtimes that run their files.

Both test files train their runs for one epoch, export each in both formats
(`exported_runs`) and run the files in the format's own runtime: onnxruntime,
and `ai_edge_litert`'s interpreter, which imports no TensorFlow. Token batches
are padded (`padded`: the last steps of every other row are PAD), so that the
masks of the recurrent layers and the attention masks are exercised.

Float outputs must agree with Keras's to `ATOL` = 1e-4: the runtimes compute
the same float32 operations in another order (fused kernels, other
reductions), which moves a value by a few units in the last place, far below
1e-4 for these small activations.
"""

from __future__ import annotations

import keras
import numpy as np

from builder_ui import engine
from builder_ui.engine import artifacts
from builder_ui.engine.store import RunStore
from builder_ui.results import export

ATOL = 1e-4  # float32 reassociation between runtimes; see the module docstring
LITERT_BATCH = 4
TRAIN = {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "seed": 1}
IDS = {"type": "long_lag", "lag": 6, "n": 80, "num_distractors": 4, "encoding": "ids"}
TRANSLATION = {"type": "toy_translation", "n": 120, "min_len": 4, "max_len": 6}


def spec(name, task, model, train=TRAIN):
    return {"version": 2, "name": name, "task": task, "model": model, "train": train}


def node(node_id, layer, inputs=None, **params):
    found = {"id": node_id, "layer": layer}
    if params:
        found["params"] = params
    if inputs is not None:
        found["inputs"] = inputs if isinstance(inputs, dict) else {"x": inputs}
    return found


def exported_runs(directory, specs):
    """A store with one finished run of each spec, exported as ONNX and LiteRT.

    Returns `(store, {name: (record, onnx path, litert path)})`; the LiteRT
    files take batches of `LITERT_BATCH`. Close the store when done.
    """
    store = RunStore(directory)
    exported = {}
    for document in specs:
        record = engine.run(document, store=store)
        assert record.status == "done", record.error
        onnx_path = export.export(store, record.id, "onnx")
        litert_path = export.export(store, record.id, "litert", batch_size=LITERT_BATCH)
        exported[document["name"]] = (record, onnx_path, litert_path)
    return store, exported


def padded(x, rows):
    """`rows` validation inputs; token rows 1, 3, ... end in two PAD steps (masked)."""
    if isinstance(x, dict):
        return {key: value[:rows] for key, value in x.items()}
    x = np.array(x[:rows])
    if np.issubdtype(x.dtype, np.integer):
        x[1::2, -2:] = 0
    return x


def as_inputs(model, x):
    """`x` in the dtypes of the model's inputs (the files take exactly those)."""
    return keras.tree.map_structure(lambda t, v: np.asarray(v, t.dtype), model.input, x)


def keras_model(store, record):
    return keras.saving.load_model(
        artifacts.artifact_path(store, record.id, "model.keras"), safe_mode=True
    )


def onnx_run(path, inputs, names):
    """The `names` outputs of the ONNX file at `path` on `inputs`, by onnxruntime."""
    import onnxruntime  # the test files skip without it

    session = onnxruntime.InferenceSession(str(path))
    feeds = inputs if isinstance(inputs, dict) else {session.get_inputs()[0].name: inputs}
    return dict(zip(names, session.run(names, feeds), strict=True))


def litert_run(path, inputs):
    """The outputs of the LiteRT file at `path` on `inputs` (a dict by name, or one array)."""
    from ai_edge_litert.interpreter import Interpreter  # the test files skip without it

    runner = Interpreter(model_path=str(path)).get_signature_runner()
    if not isinstance(inputs, dict):
        (name,) = runner.get_input_details()
        inputs = {name: inputs}
    return runner(**inputs)


def in_chunks(inputs, size):
    rows = len(next(iter(inputs.values())) if isinstance(inputs, dict) else inputs)
    for start in range(0, rows, size):
        if isinstance(inputs, dict):
            yield {key: value[start : start + size] for key, value in inputs.items()}
        else:
            yield inputs[start : start + size]
