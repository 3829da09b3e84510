"""A `.keras` file saved on one backend reloads on the others and computes the same.

Keras stores weights and configs in a backend-neutral format, so a model built
and saved with TensorFlow must load with `safe_mode=True` under JAX and
PyTorch, and the other way round. Each backend runs in its own fresh process
(a process picks its backend once, at import). The saving process writes the
model, a batch of inputs and its own outputs; every other backend reloads the
file and must reproduce those outputs.

The models cover the library's kinds of state: recurrent loops with masks
(`CECLSTM` with peepholes), attention (`TransformerEncoderBlock` with a
padding mask, `BahdanauAttention`), positional encodings and pooling, and a
subclassed encoder–decoder (`RNNSeq2Seq` with Luong attention, which builds
its layers from its config).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

BACKENDS = ("tensorflow", "jax", "torch")
MISSING = [name for name in ("jax", "torch") if importlib.util.find_spec(name) is None]

pytestmark = [
    pytest.mark.large,  # every backend runs in a fresh interpreter
    pytest.mark.skipif(
        bool(MISSING),
        reason=f"backends not installed: {', '.join(MISSING)} (pip install '.[dev]')",
    ),
]

SAVE = """
import os, sys
import numpy as np, keras
from keras_seq import layers, models

out = sys.argv[1]
keras.utils.set_random_seed(0)
tokens = keras.Input((None,), dtype="int32", name="tokens")
x = keras.layers.Embedding(20, 8, mask_zero=True)(tokens)
x = layers.SinusoidalPositionalEncoding()(x)
x = layers.TransformerEncoderBlock(num_heads=2, ff_dim=16)(x)
x = layers.CECLSTM(6, peephole=True, forget_gate=True, return_sequences=True)(x)
pooled = layers.MaskedMeanPooling()(x)
query = keras.layers.Dense(6)(pooled)
context = layers.BahdanauAttention(units=5)(query, x)
outputs = keras.layers.Dense(3)(keras.layers.Concatenate()([pooled, context]))
functional = keras.Model(tokens, outputs)

rng = np.random.default_rng(1)
ids = rng.integers(1, 20, size=(4, 7)).astype("int32")
ids[1, 4:] = 0  # padding: masks reach the recurrence and the attention
ids[3, 2:] = 0
functional.save(os.path.join(out, "functional.keras"))

seq2seq = models.RNNSeq2Seq(20, 15, cell="gru", units=8, attention="luong_general",
                            embedding_dim=6)
targets = rng.integers(3, 15, size=(4, 5)).astype("int32")
seq2seq_inputs = {"source": ids, "target": targets}
seq2seq(seq2seq_inputs)
seq2seq.save(os.path.join(out, "seq2seq.keras"))

np.savez(
    os.path.join(out, "io.npz"),
    ids=ids,
    targets=targets,
    functional=keras.ops.convert_to_numpy(functional(ids)),
    seq2seq=keras.ops.convert_to_numpy(seq2seq(seq2seq_inputs)),
)
print("saved on", keras.backend.backend())
"""

LOAD = """
import os, sys
import numpy as np, keras
import keras_seq  # registers the layers and models

for out in sys.argv[1:]:
    data = np.load(os.path.join(out, "io.npz"))
    functional = keras.saving.load_model(os.path.join(out, "functional.keras"), safe_mode=True)
    seq2seq = keras.saving.load_model(os.path.join(out, "seq2seq.keras"), safe_mode=True)
    got = {
        "functional": functional(data["ids"]),
        "seq2seq": seq2seq({"source": data["ids"], "target": data["targets"]}),
    }
    for name, value in got.items():
        # float32 on different kernels (oneDNN, XLA, ATen) sum in different orders:
        # differences of a few 1e-7 through a dozen layers; 1e-5 leaves room.
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(value), data[name], atol=1e-5, err_msg=f"{out} {name}"
        )
    print("reloaded", os.path.basename(out), "on", keras.backend.backend())
"""


def run_on(backend: str, script: str, *directories) -> str:
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *map(str, directories)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,  # a hang guard: each process takes seconds
    )
    assert result.returncode == 0, f"{backend}:\n{result.stdout}\n{result.stderr[-4000:]}"
    return result.stdout


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """One directory per saving backend, each holding its models and outputs."""
    directories = {}
    for backend in BACKENDS:
        directory = tmp_path_factory.mktemp(f"saved_on_{backend}")
        assert f"saved on {backend}" in run_on(backend, SAVE, directory)
        directories[backend] = directory
    return directories


@pytest.mark.parametrize("loader", BACKENDS)
def test_models_saved_on_the_other_backends_reload_on_this_one(saved, loader):
    others = [backend for backend in BACKENDS if backend != loader]
    out = run_on(loader, LOAD, *(saved[backend] for backend in others))
    for saver in others:
        assert f"reloaded {saved[saver].name} on {loader}" in out
