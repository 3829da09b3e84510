"""Each graph block's own parameters, their bytes, and its fast-kernel badge, in the report.

The badge cases are written from the conditions in the installed Keras source (cited in
`builder_ui.builders.graph_kernels`'s docstring: `layers/rnn/lstm.py`, `layers/rnn/gru.py`,
`backend/*/rnn.py`, `layers/attention/multi_head_attention.py`, `backend/*/nn.py`) and in
keras_seq's layers (`cec_lstm.py`, `torch_lstm.py`, `scaled_dot_product_attention.py`,
`transformer_block.py`). The parameter counts are counted by hand from the layers' equations,
not read from Keras.
"""

from __future__ import annotations

import json

import keras
import pytest

from builder_ui.builders import graph_kernels
from builder_ui.builders.graph_kernels import kernel_badge
from builder_ui.builders.graph_model import graph_report

TF, JAX, TORCH = "tensorflow", "jax", "torch"

# (layer, params, backend, gpu, masked, precision, fast, name, words in `why`)
CASES = [
    # keras.layers.LSTM: use_cudnn auto, no recurrent dropout (lstm.py inner_loop), then the
    # backend's cudnn_ok: tanh, sigmoid, no unroll, a bias, a GPU (backend/*/rnn.py).
    ("LSTM", {"units": 4}, TF, True, False, "auto", True, "cuDNN LSTM", "TensorFlow"),
    ("LSTM", {"units": 4}, JAX, True, False, "auto", True, "cuDNN LSTM", "JAX"),
    ("LSTM", {"units": 4}, TORCH, True, False, "auto", True, "cuDNN LSTM", "PyTorch"),
    ("LSTM", {"units": 4, "dropout": 0.3}, TF, True, False, "auto", True, "cuDNN LSTM", "GPU"),
    (
        "LSTM",
        {"units": 4, "recurrent_dropout": 0.2},
        TF,
        True,
        False,
        "auto",
        False,
        "cuDNN LSTM",
        "recurrent_dropout=0.2 (cuDNN needs 0)",
    ),
    ("LSTM", {"units": 4}, TF, False, False, "auto", False, "cuDNN LSTM", "no GPU"),
    ("LSTM", {"units": 4}, JAX, False, False, "auto", False, "cuDNN LSTM", "no GPU"),
    ("LSTM", {"units": 4, "activation": "relu"}, TF, True, None, "auto", False, "", "'relu'"),
    (
        "LSTM",
        {"units": 4, "recurrent_activation": "hard_sigmoid"},
        JAX,
        True,
        False,
        "auto",
        False,
        "cuDNN LSTM",
        "recurrent_activation='hard_sigmoid'",
    ),
    ("LSTM", {"units": 4, "unroll": True}, TORCH, True, False, "auto", False, "", "unroll=True"),
    ("LSTM", {"units": 4, "use_bias": False}, TF, True, False, "auto", False, "", "use_bias"),
    ("LSTM", {"units": 4, "use_cudnn": False}, TF, True, False, "auto", False, "", "use_cudnn"),
    # A mask: TensorFlow takes a right-padded one (_assert_valid_mask); JAX's and
    # PyTorch's `lstm` decline any mask.
    ("LSTM", {"units": 4}, TF, True, True, "auto", True, "cuDNN LSTM", "right-padded"),
    ("LSTM", {"units": 4}, JAX, True, True, "auto", False, "cuDNN LSTM", "masked"),
    ("LSTM", {"units": 4}, TORCH, True, True, "auto", False, "cuDNN LSTM", "masked"),
    # keras.layers.GRU: reset_after=True too on TensorFlow and PyTorch; JAX has no cuDNN GRU.
    ("GRU", {"units": 4}, TF, True, False, "auto", True, "cuDNN GRU", "TensorFlow"),
    ("GRU", {"units": 4, "reset_after": False}, TF, True, False, "auto", False, "", "reset_after"),
    ("GRU", {"units": 4}, JAX, True, False, "auto", False, "cuDNN GRU", "no cuDNN GRU on JAX"),
    ("GRU", {"units": 4}, TORCH, True, False, "auto", True, "cuDNN GRU", "PyTorch"),
    ("GRU", {"units": 4}, TORCH, True, True, "auto", False, "cuDNN GRU", "masked"),
    # CECLSTM: the backend's fused LSTM whenever fused_kernel_refusal() is None (cec_lstm.py),
    # the 1997 cell included; on PyTorch on a CPU, ATen's CPU kernel (torch_lstm.py).
    ("CECLSTM", {"units": 4}, TF, True, False, "auto", True, "cuDNN LSTM", "TensorFlow"),
    ("CECLSTM", {"units": 4, "peephole": True}, TF, True, False, "auto", False, "", "peephole"),
    (
        "CECLSTM",
        {"units": 4, "truncated_gradients": True},
        JAX,
        True,
        False,
        "auto",
        False,
        "",
        "truncated_gradients",
    ),
    (
        "CECLSTM",
        {"units": 4, "recurrent_dropout": 0.1},
        TF,
        True,
        False,
        "auto",
        False,
        "",
        "recurrent_dropout=0.1",
    ),
    (
        "CECLSTM",
        {"units": 4, "output_activation": "relu"},
        TF,
        True,
        False,
        "auto",
        False,
        "",
        "output_activation='relu'",
    ),
    ("CECLSTM", {"units": 4, "use_cudnn": False}, TF, True, False, "auto", False, "", "use_cudnn"),
    ("CECLSTM", {"units": 4}, TORCH, False, False, "auto", True, "PyTorch CPU LSTM", "CPU"),
    ("CECLSTM", {"units": 4}, TORCH, False, True, "auto", True, "", "right-padded"),
    ("CECLSTM", {"units": 4}, TF, False, False, "auto", False, "cuDNN LSTM", "no GPU"),
    # No fast-kernel variant: no badge.
    ("Dense", {"units": 4}, TF, True, False, "auto", None, "", ""),
    ("Embedding", {"output_dim": 4}, JAX, True, True, "auto", None, "", ""),
    ("SimpleRNN", {"units": 4}, TF, True, False, "auto", None, "", ""),
    ("BahdanauAttention", {"units": 4}, TORCH, True, False, "auto", None, "", ""),
    ("LuongAttention", {}, JAX, True, False, "auto", None, "", ""),
    # MultiHeadAttention (multi_head_attention.py): ops.dot_product_attention unless dropout
    # or inputs of rank other than 3; TensorFlow has no flash kernel (tensorflow/nn.py); JAX
    # needs a GPU, 16-bit q/k/v and a head size that is a multiple of 8 (jax/nn.py, JAX's
    # cuDNN checks), and takes a mask; PyTorch's flash kernel needs CUDA, 16 bits, no mask.
    (
        "MultiHeadAttention",
        {"num_heads": 2, "key_dim": 16},
        TF,
        True,
        False,
        "auto",
        False,
        "",
        "TensorFlow",
    ),
    (
        "MultiHeadAttention",
        {"num_heads": 2, "key_dim": 16},
        JAX,
        True,
        False,
        "auto",
        True,
        "flash attention",
        "JAX",
    ),
    (
        "MultiHeadAttention",
        {"num_heads": 2, "key_dim": 16},
        JAX,
        True,
        True,
        "auto",
        True,
        "",
        "JAX",
    ),
    (
        "MultiHeadAttention",
        {"num_heads": 2, "key_dim": 16},
        JAX,
        True,
        False,
        "float32",
        False,
        "",
        "float16",
    ),
    (
        "MultiHeadAttention",
        {"num_heads": 2, "key_dim": 16},
        JAX,
        False,
        False,
        "auto",
        False,
        "",
        "no GPU",
    ),
    (
        "MultiHeadAttention",
        {"num_heads": 2, "key_dim": 12},
        JAX,
        True,
        False,
        "auto",
        False,
        "",
        "multiple of 8",
    ),
    (
        "MultiHeadAttention",
        {"num_heads": 2, "key_dim": 16},
        TORCH,
        True,
        False,
        "auto",
        True,
        "",
        "PyTorch",
    ),
    (
        "MultiHeadAttention",
        {"num_heads": 2, "key_dim": 16},
        TORCH,
        True,
        True,
        "auto",
        False,
        "",
        "mask",
    ),
    (
        "MultiHeadAttention",
        {"num_heads": 2, "key_dim": 16},
        TORCH,
        True,
        False,
        "float32",
        False,
        "",
        "float16",
    ),
    (
        "MultiHeadAttention",
        {"num_heads": 2, "key_dim": 16, "dropout": 0.1},
        JAX,
        True,
        False,
        "auto",
        False,
        "",
        "dropout=0.1",
    ),
    # keras_seq's attention: dot_product_attention unless attention dropout; the Transformer
    # blocks' dropout is residual; the decoder block's causal mask is passed as a mask.
    ("ScaledDotProductAttention", {}, TORCH, True, False, "mixed_bfloat16", True, "", "flash"),
    (
        "ScaledDotProductAttention",
        {"dropout": 0.1},
        TORCH,
        True,
        False,
        "auto",
        False,
        "",
        "dropout",
    ),
    (
        "TransformerEncoderBlock",
        {"num_heads": 2, "ff_dim": 8, "dropout": 0.1},
        TORCH,
        True,
        False,
        "auto",
        True,
        "",
        "flash",
    ),
    (
        "TransformerDecoderBlock",
        {"num_heads": 2, "ff_dim": 8},
        TORCH,
        True,
        False,
        "auto",
        False,
        "",
        "causal mask",
    ),
    (
        "TransformerDecoderBlock",
        {"num_heads": 2, "ff_dim": 8},
        JAX,
        True,
        False,
        "auto",
        True,
        "",
        "JAX",
    ),
]


@pytest.mark.backend_agnostic
@pytest.mark.parametrize(
    ("layer", "params", "backend", "gpu", "masked", "precision", "fast", "name", "why"), CASES
)
def test_the_badge_follows_the_conditions_of_the_keras_source(
    layer, params, backend, gpu, masked, precision, fast, name, why
):
    badge = kernel_badge(
        layer, params, backend=backend, gpu=gpu, masked=masked, precision=precision
    )
    assert set(badge) == {"fast", "name", "why"}
    assert badge["fast"] is fast, badge
    if name:
        assert badge["name"] == name
    assert why in badge["why"], badge
    if fast is None:
        assert badge == {"fast": None, "name": "", "why": ""}


@pytest.mark.backend_agnostic
def test_attention_over_images_does_not_reach_the_fused_function():
    badge = kernel_badge(
        "MultiHeadAttention",
        {"num_heads": 2, "key_dim": 16},
        backend=JAX,
        gpu=True,
        masked=False,
        input_rank=4,
    )
    assert badge["fast"] is False and "rank 4" in badge["why"]


@pytest.mark.backend_agnostic
def test_the_backend_is_the_specs_else_this_processs():
    assert graph_kernels.run_backend("jax") == "jax"
    assert graph_kernels.run_backend("auto") == keras.backend.backend()
    assert graph_kernels.run_backend(None) == keras.backend.backend()


NUMERIC = {"type": "adding_problem", "length": 6, "n": 120}  # (batch, 6, 2) → one value


def _document(nodes, backend="auto"):
    return {
        "version": 2,
        "name": "kernels",
        "task": NUMERIC,
        "model": {"type": "graph", "nodes": nodes},
        "train": {"epochs": 1, "batch_size": 16, "backend": backend},
    }


def _node(node_id, layer, source=None, **params):
    found = {"id": node_id, "layer": layer}
    if params:
        found["params"] = params
    if source is not None:
        found["inputs"] = {"x": source}
    return found


def test_each_block_reports_its_own_parameters_counted_by_hand(monkeypatch):
    monkeypatch.setattr(graph_kernels, "gpu_available", lambda: True)
    d, u, g, k = 2, 5, 4, 3  # the task's features, the LSTM's, the GRU's and the Dense's units
    nodes = [
        _node("steps", "Input"),
        _node("lstm", "LSTM", "steps", units=u, return_sequences=True),
        _node("gru", "GRU", "lstm", units=g, bidirectional=True),
        _node("dense", "Dense", "gru", units=k),
        _node("head", "Output", "dense"),
    ]
    report = graph_report(_document(nodes, backend="tensorflow"))
    assert report.errors == {}
    lstm = 4 * (d * u + u * u + u)  # four gates: W, U, b each
    gru = 2 * 3 * (u * g + g * g + 2 * g)  # three gates, reset_after's two biases; both ways
    dense = 2 * g * k + k
    head = k * 1 + 1  # a linear regressor to one value
    expected = {"steps": 0, "lstm": lstm, "gru": gru, "dense": dense, "head": head}
    assert {key: block["params"] for key, block in report.blocks.items()} == expected
    assert {key: block["weights_bytes"] for key, block in report.blocks.items()} == {
        key: 4 * count
        for key, count in expected.items()  # float32
    }
    assert sum(expected.values()) == report.params
    # The spec's backend and the GPU reach the badges.
    assert report.blocks["lstm"]["kernel"] == {
        "fast": True,
        "name": "cuDNN LSTM",
        "why": "runs on cuDNN on a GPU under TensorFlow",
    }
    assert report.blocks["gru"]["kernel"]["fast"] is True
    assert report.blocks["dense"]["kernel"]["fast"] is None
    as_json = report.to_json()
    assert set(as_json) == {"shapes", "edges", "errors", "params", "blocks", "groups"}
    assert json.loads(json.dumps(as_json)) == as_json
    assert as_json["blocks"]["lstm"]["params"] == lstm


def test_blocks_built_beside_a_broken_one_are_reported_and_it_is_left_out(monkeypatch):
    monkeypatch.setattr(graph_kernels, "gpu_available", lambda: False)
    nodes = [
        _node("steps", "Input"),
        _node("lstm", "LSTM", "steps", units=5, recurrent_dropout=0.2),
        _node("dense", "Dense", "lstm", units=0),
        _node("head", "Output", "dense"),
    ]
    report = graph_report(_document(nodes, backend="jax"))
    assert set(report.errors) == {"dense"} and report.params is None
    assert set(report.blocks) == {"steps", "lstm"}
    assert report.blocks["lstm"]["params"] == 4 * (2 * 5 + 5 * 5 + 5)
    assert report.blocks["lstm"]["kernel"] == {
        "fast": False,
        "name": "cuDNN LSTM",
        "why": "not cuDNN: recurrent_dropout=0.2 (cuDNN needs 0)",
    }
