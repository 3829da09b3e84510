"""ONNX and LiteRT exports of real trained runs, run in onnxruntime and the LiteRT interpreter;
and the exports that are refused, with their reasons.

Every model type the engine trains with one forward pass (sequence
classifiers and regressors, recurrent and Transformer, the Vision
Transformer, the pointer network, graph models) is trained for one epoch,
exported in both formats (`onnx_litert_runs`) and run in the format's own
runtime on the inputs the Keras model is given, padded token batches
included; outputs agree to 1e-4 (float32 reassociation). The translators'
decode loops are in `test_export_onnx_litert_translators.py`.
"""

from __future__ import annotations

from typing import Literal

import keras
import numpy as np
import pytest

from builder_ui import builders, cli, engine
from builder_ui.builders import ModelBuilder, register_model, unregister
from builder_ui.engine import artifacts
from builder_ui.engine.store import RunStore
from builder_ui.results import export
from builder_ui.specs import ModelParams
from tests.builder_ui.results.onnx_litert_runs import (
    ATOL,
    IDS,
    LITERT_BATCH,
    TRAIN,
    as_inputs,
    exported_runs,
    in_chunks,
    keras_model,
    litert_run,
    node,
    onnx_run,
    padded,
    spec,
)

pytestmark = [
    pytest.mark.large,
    pytest.mark.skipif(
        keras.backend.backend() != "tensorflow",
        reason="the ONNX and LiteRT exports convert TensorFlow graphs",
    ),
]
pytest.importorskip("onnxruntime")
litert = pytest.importorskip("ai_edge_litert.interpreter")

SPECS = [
    # Two stacked bidirectional LSTMs over masked token ids.
    spec(
        "bilstm",
        IDS,
        {
            "type": "sequence_classifier",
            "embedding_dim": 4,
            "mask_zero": True,
            "encoder": {
                "type": "rnn",
                "cell": "lstm",
                "units": 8,
                "bidirectional": True,
                "num_layers": 2,
            },
        },
    ),
    # keras_seq's CECLSTM (peepholes, forget gate) regressing real numbers.
    spec(
        "cec-regressor",
        {"type": "adding_problem", "length": 8, "n": 80},
        {
            "type": "sequence_regressor",
            "encoder": {
                "type": "rnn",
                "cell": "cec_lstm",
                "units": 8,
                "forget_gate": True,
                "peephole": True,
            },
        },
    ),
    # A masked Transformer encoder: padded tokens get no attention.
    spec(
        "transformer",
        IDS,
        {
            "type": "sequence_classifier",
            "mask_zero": True,
            "encoder": {
                "type": "transformer",
                "embedding_dim": 8,
                "num_heads": 2,
                "ff_dim": 16,
                "num_layers": 1,
                "norm_first": True,
                "positions": "learned",
            },
        },
    ),
    # The Vision Transformer: exact GELU (Erfc, converted by hand for ONNX).
    spec(
        "vit",
        {"type": "shapes", "n": 80, "size": 8},
        {
            "type": "vision_transformer",
            "patch_size": 2,
            "embedding_dim": 8,
            "num_heads": 2,
            "ff_dim": 16,
            "num_layers": 1,
        },
    ),
    # A subclassed keras_seq model with two inputs (its teacher-forced pass).
    spec(
        "pointer",
        {"type": "sort_numbers", "length": 4, "n": 80},
        {"type": "pointer_network", "units": 8},
    ),
    # Blocks on the canvas: a bidirectional CECLSTM under multi-head self-attention.
    spec(
        "graph",
        IDS,
        {
            "type": "graph",
            "nodes": [
                node("tokens", "Input"),
                node("embedding", "Embedding", "tokens", output_dim=8, mask_zero=True),
                node(
                    "encoder",
                    "CECLSTM",
                    "embedding",
                    units=8,
                    forget_gate=True,
                    return_sequences=True,
                    bidirectional=True,
                ),
                node(
                    "attention",
                    "MultiHeadAttention",
                    {"query": "encoder", "value": "encoder"},
                    num_heads=2,
                    key_dim=8,
                ),
                node("pool", "GlobalAveragePooling1D", "attention"),
                node("head", "Output", "pool"),
            ],
        },
    ),
]

NAMES = [document["name"] for document in SPECS]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A finished run of each spec above, exported as ONNX and LiteRT (`exported_runs`)."""
    store, exported = exported_runs(tmp_path_factory.mktemp("runs"), SPECS)
    yield store, exported
    store.close()


@pytest.mark.parametrize("name", NAMES)
def test_onnx_runs_in_onnxruntime_as_the_keras_model_does(runs, name):
    store, exported = runs
    record, onnx_path, _ = exported[name]
    model = keras_model(store, record)
    x = as_inputs(model, padded(builders.prepare(record.spec).x_val, 8))
    for rows in (8, 3):  # the batch axis is free
        batch = x if rows == 8 else next(in_chunks(x, rows))
        got = onnx_run(onnx_path, batch, ["output_0"])["output_0"]
        expected = model.predict(batch, verbose=0)
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, atol=ATOL, rtol=0)


@pytest.mark.parametrize("name", NAMES)
def test_litert_runs_in_the_litert_interpreter_as_the_keras_model_does(runs, name):
    store, exported = runs
    record, _, litert_path = exported[name]
    model = keras_model(store, record)
    x = as_inputs(model, padded(builders.prepare(record.spec).x_val, 2 * LITERT_BATCH))
    for batch in in_chunks(x, LITERT_BATCH):
        got = litert_run(litert_path, batch)["output_0"]
        np.testing.assert_allclose(got, model.predict(batch, verbose=0), atol=ATOL, rtol=0)


def test_a_litert_file_takes_one_example_unless_told(runs, tmp_path):
    store, exported = runs
    record = exported["bilstm"][0]
    path = export.export(store, record.id, "litert", out=tmp_path / "phone")
    assert path == tmp_path / "phone.tflite"
    runner = litert.Interpreter(model_path=str(path)).get_signature_runner()
    ((name, details),) = runner.get_input_details().items()
    assert name == "sequence" and details["shape"].tolist() == [1, 6]
    x = padded(builders.prepare(record.spec).x_val, 2)[1:2]  # one padded row
    got = runner(sequence=x)["output_0"]
    expected = keras_model(store, record).predict(x, verbose=0)
    np.testing.assert_allclose(got, expected, atol=ATOL, rtol=0)


def test_exports_are_recorded_artifacts_written_through_temporary_names(runs):
    store, exported = runs
    record = exported["transformer"][0]
    recorded = store.get(record.id).artifacts
    assert recorded["model.onnx"] == f"{record.id}/export/model.onnx"
    assert recorded["model.tflite"] == f"{record.id}/export/model.tflite"
    directory = artifacts.artifact_path(store, record.id, "model.onnx").parent
    assert [p.name for p in directory.iterdir() if p.name.startswith(".")] == []


# --- refusals ---------------------------------------------------------------------------------


def _cli_export(runs_dir, run_id, *options, capsys):
    code = cli.main(["export", run_id, "--runs", str(runs_dir), *options])
    captured = capsys.readouterr()
    return code, captured.err.strip().splitlines()


@pytest.mark.parametrize(("format", "suffix"), [("onnx", ".onnx"), ("litert", ".tflite")])
def test_the_cli_refuses_a_diverged_run_with_the_reason_and_writes_nothing(
    tmp_path, capsys, format, suffix
):
    store = RunStore(tmp_path / "runs")
    run_id = store.create_run(SPECS[0], name="diverged")
    store.set_status(run_id, "running")
    store.finish(run_id, "diverged", error="The loss became NaN at epoch 1.")
    store.close()
    out = tmp_path / f"model{suffix}"
    code, lines = _cli_export(
        tmp_path / "runs", run_id, "--format", format, "--out", str(out), capsys=capsys
    )
    assert code == 2
    (line,) = lines
    assert f"Run {run_id!r} is 'diverged'" in line and "NaN or infinite" in line
    assert not out.exists() and list(tmp_path.iterdir()) == [tmp_path / "runs"]


def test_a_mixed_precision_run_is_refused_with_the_reason(tmp_path, capsys):
    store = RunStore(tmp_path / "runs")
    document = {**SPECS[2], "train": {**TRAIN, "mixed_precision": "mixed_float16"}}
    record = engine.run(document, store=store)
    assert record.status == "done" and record.precision == "mixed_float16", record.error
    with pytest.raises(export.ExportError, match=r"mixed precision \('mixed_float16'\)"):
        export.export(store, record.id, "litert")
    store.close()
    out = tmp_path / "model.onnx"
    code, lines = _cli_export(
        tmp_path / "runs", record.id, "--format", "onnx", "--out", str(out), capsys=capsys
    )
    assert code == 2
    (line,) = lines
    assert "cannot be exported as ONNX" in line and "float32 graph" in line
    assert not out.exists()
    assert "model.onnx" not in RunStore(tmp_path / "runs").get(record.id).artifacts


def test_batch_size_is_for_litert_only_and_positive(runs, tmp_path, capsys):
    store, exported = runs
    run_id = exported["bilstm"][0].id
    with pytest.raises(export.ExportError, match="batch_size: only for the 'litert' format"):
        export.export(store, run_id, "onnx", batch_size=2)
    for bad in (0, -1, True, 2.0, 2**17):
        with pytest.raises(export.ExportError, match="batch_size: expected an integer from 1"):
            export.export(store, run_id, "litert", batch_size=bad)
    out = tmp_path / "m.tflite"
    code, lines = _cli_export(
        store.directory,
        run_id,
        "--format",
        "litert",
        "--batch-size",
        "0",
        "--out",
        str(out),
        capsys=capsys,
    )
    assert code == 2 and "batch_size: expected an integer from 1" in lines[-1]
    assert not out.exists()


# A model with an operator that neither format can convert: `erfinv` (TensorFlow's Erfinv has
# no tf2onnx conversion and no TFLite builtin), through a model type registered as a plugin.


@keras.saving.register_keras_serializable(package="keras_seq_tests")
class InverseErf(keras.layers.Layer):
    """`y = erfinv(tanh(x) / 2)`: finite for every x."""

    def call(self, x):
        return keras.ops.erfinv(keras.ops.tanh(x) / 2)


class InverseErfParams(ModelParams):
    type: Literal["inverse_erf_regressor"] = "inverse_erf_regressor"


class InverseErfRegressor(ModelBuilder):
    params = InverseErfParams
    input_kinds = ("numeric",)
    target_kinds = ("regression",)

    def build(self, params, task):
        inputs = keras.Input(task.inputs.shape, name="sequence")
        pooled = keras.layers.GlobalAveragePooling1D()(InverseErf()(inputs))
        return keras.Model(inputs, keras.layers.Dense(1)(pooled))


@pytest.fixture
def inverse_erf_run(tmp_path):
    register_model("inverse_erf_regressor")(InverseErfRegressor)
    try:
        store = RunStore(tmp_path / "runs")
        document = spec(
            "inverse-erf",
            {"type": "adding_problem", "length": 6, "n": 40},
            {"type": "inverse_erf_regressor"},
        )
        record = engine.run(document, store=store)
        assert record.status == "done", record.error
        store.close()
        yield tmp_path / "runs", record.id
    finally:
        unregister("model", "inverse_erf_regressor")


@pytest.mark.parametrize(
    ("format", "reason"),
    [
        ("onnx", "no ONNX (opset 18) conversion for the TensorFlow operator(s) Erfinv"),
        ("litert", "found no builtin operator for tf.Erfinv"),
    ],
)
def test_an_operator_without_a_conversion_is_refused_by_name(
    inverse_erf_run, tmp_path, capsys, format, reason
):
    runs_dir, run_id = inverse_erf_run
    out = tmp_path / "model.file"
    code, lines = _cli_export(
        runs_dir, run_id, "--format", format, "--out", str(out), capsys=capsys
    )
    assert code == 2
    assert len(lines) == 1, lines  # one line: no traceback, no converter diagnostics
    assert reason in lines[0] and "Traceback" not in lines[0]
    assert not out.exists()
    store = RunStore(runs_dir)
    assert set(store.get(run_id).artifacts) <= {"model.keras"}
    leftovers = list((store.artifact_dir(run_id) / "export").glob("*"))
    store.close()
    assert leftovers == []
