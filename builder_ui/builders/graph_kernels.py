"""Whether a graph block runs on a fast kernel (cuDNN LSTM/GRU, flash attention), and why not.

`kernel_badge(layer, params, backend=..., gpu=..., masked=...)` is what the canvas shows
beside a block: `{"fast": True | False | None, "name": ..., "why": ...}`. `fast` is None
for a block that has no fast-kernel variant at all (Dense, Embedding, SimpleRNN, ConvLSTM2D,
Bahdanau and Luong attention, the recurrent decoders, whose cells run in their own loop):
the canvas shows no badge. It is a pure function of the block's parameters and the run's
backend, device and precision; nothing is imported. The conditions below are those of
the installed Keras (3.15), read from its source (paths under `keras/src/`), and of
keras_seq's own layers.

Recurrent layers (`keras.layers.LSTM`, `keras.layers.GRU`)
----------------------------------------------------------

`layers/rnn/lstm.py` and `layers/rnn/gru.py`, `inner_loop`: the backend's fused
function (`backend.lstm`, `backend.gru`) is tried only when `use_cudnn` is "auto" or
True and `recurrent_dropout` is 0 (input `dropout` is fine: it is applied to the whole
sequence first); a backend that cannot run it raises `NotImplementedError` and the
layer runs its own step loop (`use_cudnn=True` then fails). `Bidirectional`
(`layers/rnn/bidirectional.py`) changes nothing: each direction, or the fused pair, meets
the same conditions.

- TensorFlow (`backend/tensorflow/rnn.py`): `cudnn_ok` needs `activation` tanh,
  `recurrent_activation` sigmoid, `unroll=False`, `use_bias=True` and, for a GRU,
  `reset_after=True` (`_do_lstm_arguments_support_cudnn`,
  `_do_gru_arguments_support_cudnn`), and a GPU (`_is_gpu_available`:
  `tf.config.list_logical_devices("GPU")`). A mask is taken as sequence lengths, and
  `_assert_valid_mask` requires it right-padded (True steps first, then False) with no
  empty row: a left-padded mask fails the run (it is not a fallback).
- JAX (`backend/jax/rnn.py`): `lstm` declines any mask, then needs the same `cudnn_ok`
  (tanh, sigmoid, no unroll, a bias) and `jax.default_backend() == "gpu"`, and runs
  `jax.experimental.rnn.lstm` (cuDNN). There is no cuDNN GRU: `gru` runs a
  `lax.scan` with the input projections batched (when `reset_after`, no unroll, no mask;
  on any device), never cuDNN.
- PyTorch (`backend/torch/rnn.py`): `lstm` declines any mask; then cuDNN
  (`torch._VF.lstm`) runs when the inputs are on CUDA (not under tracing or
  `torch.compile`) and `cudnn_ok` holds (tanh, sigmoid, no unroll, a bias,
  `torch.cuda.is_available()` and `torch.backends.cudnn.is_available()`); else a Python
  step loop. `gru` declines a mask and `reset_after=False`, then the same.

keras_seq's `CECLSTM` (`keras_seq/layers/cec_lstm.py`) is not "never cuDNN": its
`inner_loop` calls the same `backend.lstm` (`_fused_lstm`) whenever
`fused_kernel_refusal()` is None: `use_cudnn` not False, no `peephole`, no
`truncated_gradients`, `recurrent_dropout=0`, and tanh for `cell_activation` and
`output_activation` (Keras's `activation`) and sigmoid for `gate_activation` (Keras's
`recurrent_activation`). The 1997 cell runs on it with its forget gate pinned open
(`CECLSTMCell.fused_weights`, which always passes a bias), so the backends' conditions
above apply, less `use_bias`. On PyTorch on a CPU, where Keras's function is a Python
loop, it runs ATen's fused CPU LSTM instead (`keras_seq/layers/torch_lstm.py`), which
declines `unroll`, 16-bit dtypes and masks that are not right-padded.

Attention (`ops.dot_product_attention`)
---------------------------------------

`layers/attention/multi_head_attention.py`, `_compute_attention`: `MultiHeadAttention`
calls `ops.dot_product_attention` unless `dropout > 0`, attention scores are returned, or
the projected query is not of rank 4 (inputs of rank other than 3, e.g. images with
`attention_axes`); else an einsum and softmax of its own. `flash_attention` is
`flash_attention or keras.config.is_flash_attention_enabled()`: None (automatic)
by default, so a layer's `flash_attention=False` is overridden by the global default;
True with `dropout > 0` is refused by the constructor. `call` passes `is_causal=True`
without a mask only for causal masking alone.

- TensorFlow (`backend/tensorflow/nn.py`, `dot_product_attention`): no flash kernel
  (`flash_attention=True` raises); `_dot_product_attention_xla`, plain matmuls and a
  softmax.
- JAX (`backend/jax/nn.py`): with `flash_attention=None`, `_can_use_flash_attention`
  decides: on a TPU always (Splash kernel); on a GPU, cuDNN present, compute capability
  at least 8.0 (Ampere), and JAX's own checks (`jax/_src/cudnn/fused_attention_stablehlo.py`:
  `check_layout` wants float16/bfloat16/fp8 q, k, v of rank 4; `check_is_flash_attention`
  a head size that is a multiple of 8 and at most 128, 256 from Hopper on, and a
  `value_dim` equal to `key_dim` below Hopper). Then
  `jax.nn.dot_product_attention(implementation="cudnn")`, which takes a mask; else "xla".
- PyTorch (`backend/torch/nn.py`): always `torch.nn.functional.scaled_dot_product_attention`
  (PyTorch's fused SDPA, which picks its own kernel); flash is forced when
  `torch.backends.cuda.can_use_flash_attention` holds: CUDA, float16/bfloat16, and no
  `attn_mask` (Keras turns a boolean mask into an additive one, which the flash kernel
  does not take; `is_causal` without a mask it does).

keras_seq's attention layers (`keras_seq/layers/`): `ScaledDotProductAttention` calls
`ops.dot_product_attention` (flash automatic) unless attention dropout is active in
training, scores are returned, or `d_v != d_k`; with `causal=True` and no padding mask it
passes `is_causal`, else the masks as one `mask`. `TransformerEncoderBlock` and
`TransformerDecoderBlock` (`transformer_block.py`, `transformer_encoder.py`,
`transformer_decoder.py`) use a `MultiHeadAttention` without attention dropout (their
`dropout` is residual), so it always reaches `ops.dot_product_attention`; the decoder
block (and the `TransformerDecoder` stack) always passes its causal mask as a mask. The
`BahdanauAttention`, `LuongAttention` and pointer layers (`attention_base.py`) compute
their scores with matmuls and `masked_softmax`: no fused kernel.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import keras

BACKENDS = ("tensorflow", "jax", "torch")
_BACKEND_NAMES = {"tensorflow": "TensorFlow", "jax": "JAX", "torch": "PyTorch"}
HALF_PRECISIONS = ("mixed_float16", "mixed_bfloat16")
NO_BADGE: dict[str, Any] = {"fast": None, "name": "", "why": ""}

_RECURRENT = ("LSTM", "GRU", "CECLSTM")
_ATTENTION = (
    "MultiHeadAttention",
    "ScaledDotProductAttention",
    "TransformerEncoderBlock",
    "TransformerDecoderBlock",
    "TransformerDecoder",
)
# Blocks that always pass their causal mask as a mask (PyTorch's flash kernel takes none).
_CAUSAL_MASKED = ("TransformerDecoderBlock", "TransformerDecoder")


def kernel_badge(
    layer: str,
    params: Mapping[str, Any],
    *,
    backend: str,
    gpu: bool,
    masked: bool | None,
    precision: str = "auto",
    input_rank: int | None = None,
) -> dict[str, Any]:
    """Whether a block runs on a fast kernel, which, and why (or why not); see the module.

    Args:
        layer: The block's name (`LSTM`, `MultiHeadAttention`, ...).
        params: The node's own parameters (those left out take the layer's defaults).
        backend: `tensorflow`, `jax` or `torch` (another has no fused kernels).
        gpu: Whether the run has a GPU.
        masked: Whether the block's input carries a Keras mask (None: unknown, taken as no).
        precision: `train.mixed_precision`: `auto` (16-bit on a GPU), `float32`,
            `mixed_float16` or `mixed_bfloat16`.
        input_rank: The rank of its (query) input, where known (attention over inputs of
            rank other than 3 does not reach the fused function).

    Returns:
        `{"fast": bool | None, "name": str, "why": str}`: `fast` None (and empty `name`
        and `why`) for a block with no fast-kernel variant.
    """
    if layer in _RECURRENT:
        return _recurrent(layer, params, backend, gpu, bool(masked), precision)
    if layer in _ATTENTION:
        return _attention(layer, params, backend, gpu, bool(masked), precision, input_rank)
    return dict(NO_BADGE)


def _badge(fast: bool, name: str, why: str) -> dict[str, Any]:
    return {"fast": fast, "name": name, "why": why}


def _activations(params: Mapping[str, Any], cec: bool) -> list[tuple[str, Any, str]]:
    """`(parameter, value given, what cuDNN needs)` of a recurrent layer's activations.

    A `CECLSTM` takes Keras's `activation` for its `cell_activation` and
    `output_activation`, and `recurrent_activation` for its `gate_activation`.
    """
    tanh, sigmoid = params.get("activation"), params.get("recurrent_activation")
    if not cec:
        return [
            ("activation", params.get("activation", "tanh"), "tanh"),
            ("recurrent_activation", params.get("recurrent_activation", "sigmoid"), "sigmoid"),
        ]
    found = (
        [("activation", tanh, "tanh")]
        if tanh is not None
        else [
            ("cell_activation", params.get("cell_activation", "tanh"), "tanh"),
            ("output_activation", params.get("output_activation", "tanh"), "tanh"),
        ]
    )
    if sigmoid is not None:
        return [*found, ("recurrent_activation", sigmoid, "sigmoid")]
    return [*found, ("gate_activation", params.get("gate_activation", "sigmoid"), "sigmoid")]


def _number(params: Mapping[str, Any], name: str) -> float:
    value = params.get(name) or 0
    return float(value) if isinstance(value, (int, float)) else 0.0


def _is(value: Any, name: str) -> bool:
    """Whether an activation given by name is `name` (`"tanh"`, `"sigmoid"`)."""
    return isinstance(value, str) and value.strip().lower().rsplit(".", 1)[-1] == name


def _recurrent(
    layer: str, params: Mapping[str, Any], backend: str, gpu: bool, masked: bool, precision: str
) -> dict[str, Any]:
    gru, cec = layer == "GRU", layer == "CECLSTM"
    name = "cuDNN GRU" if gru else "cuDNN LSTM"
    reasons = []
    if params.get("use_cudnn", "auto") is False:
        reasons.append("use_cudnn=False")
    if cec:
        if params.get("peephole"):
            reasons.append("peephole=True (cuDNN has no peepholes)")
        if params.get("truncated_gradients"):
            reasons.append("truncated_gradients=True")
    dropout = _number(params, "recurrent_dropout")
    if dropout > 0:
        reasons.append(f"recurrent_dropout={params['recurrent_dropout']} (cuDNN needs 0)")
    for param, given, needed in _activations(params, cec):
        if not _is(given, needed):
            reasons.append(f"{param}={given!r} (cuDNN needs {needed})")
    if not cec and params.get("use_bias", True) is False:
        reasons.append("use_bias=False (cuDNN needs a bias)")
    if params.get("unroll"):
        reasons.append("unroll=True (cuDNN runs the loop rolled)")
    if gru and params.get("reset_after", True) is False:
        reasons.append("reset_after=False (cuDNN needs True)")
    if reasons:
        return _badge(False, name, "not cuDNN: " + "; ".join(reasons))
    if backend not in BACKENDS:
        return _badge(False, name, f"not cuDNN: the {backend} backend has no fused kernels")
    shown = _BACKEND_NAMES[backend]
    if gru and backend == "jax":
        return _badge(False, name, "not cuDNN: Keras has no cuDNN GRU on JAX (it runs a scan)")
    if backend == "torch" and cec and not gpu:
        if precision in HALF_PRECISIONS:
            return _badge(
                False, "PyTorch CPU LSTM", f"not fused: {precision} (the CPU kernel needs float32)"
            )
        why = "runs on PyTorch's fused LSTM kernel on the CPU"
        if masked:
            why += " if its mask is right-padded (padding at the end)"
        return _badge(True, "PyTorch CPU LSTM", why)
    if masked and backend in ("jax", "torch"):
        why = f"not cuDNN: its input is masked, and Keras's {shown} cuDNN path takes no mask"
        return _badge(False, name, why)
    if not gpu:
        return _badge(False, name, "no GPU here: cuDNN needs one")
    if masked:  # TensorFlow
        return _badge(
            True,
            name,
            "runs on cuDNN on a GPU under TensorFlow if its mask is right-padded "
            "(padding at the end); a left-padded mask fails",
        )
    return _badge(True, name, f"runs on cuDNN on a GPU under {shown}")


def _attention(
    layer: str,
    params: Mapping[str, Any],
    backend: str,
    gpu: bool,
    masked: bool,
    precision: str,
    input_rank: int | None,
) -> dict[str, Any]:
    name = "flash attention"
    if layer in ("MultiHeadAttention", "ScaledDotProductAttention"):
        dropout = _number(params, "dropout")
        if dropout > 0:
            return _badge(
                False,
                name,
                f"not fused: dropout={params['dropout']} (attention dropout computes the "
                "scores explicitly)",
            )
    if layer == "MultiHeadAttention" and input_rank is not None and input_rank != 3:
        why = f"not fused: inputs of rank {input_rank} (the fused path needs rank 3)"
        return _badge(False, name, why)
    if backend == "tensorflow":
        return _badge(
            False, name, "TensorFlow has no flash attention: it runs plain matmuls and a softmax"
        )
    if backend not in BACKENDS:
        return _badge(False, name, f"not fused: the {backend} backend has no fused kernels")
    if not gpu:
        return _badge(False, name, "no GPU here: flash attention needs one")
    half = precision in HALF_PRECISIONS or (precision == "auto" and gpu)
    if not half:
        return _badge(
            False, name, f"not flash: {precision} (flash attention needs float16 or bfloat16)"
        )
    if backend == "jax":
        return _jax_flash(layer, params)
    if layer in _CAUSAL_MASKED:
        return _badge(
            False,
            name,
            "not flash: its causal mask is passed as a mask, which PyTorch's flash kernel "
            "does not take (its fused SDPA runs)",
        )
    if masked:
        return _badge(
            False,
            name,
            "not flash: its input is masked, and PyTorch's flash kernel takes no mask "
            "(its fused SDPA runs)",
        )
    return _badge(True, name, "runs PyTorch's flash attention on a GPU")


def _jax_flash(layer: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """JAX's cuDNN flash attention on a GPU, given `MultiHeadAttention`'s head sizes where
    the parameters say them (`check_is_flash_attention`)."""
    name, where = "flash attention", "an Ampere or newer GPU"
    key_dim = params.get("key_dim") if layer == "MultiHeadAttention" else None
    value_dim = params.get("value_dim") if layer == "MultiHeadAttention" else None
    if isinstance(key_dim, int):
        if key_dim % 8 or key_dim > 256:
            why = f"not flash: key_dim={key_dim} (cuDNN needs a multiple of 8, at most 256)"
            return _badge(False, name, why)
        if key_dim > 128:
            where = "a Hopper or newer GPU (key_dim over 128)"
        if isinstance(value_dim, int) and value_dim != key_dim:
            where = "a Hopper or newer GPU with cuDNN 9.10 (value_dim differs from key_dim)"
    return _badge(True, name, f"runs cuDNN flash attention on {where} under JAX")


def run_backend(train_backend: Any = None) -> str:
    """The backend a run trains on: the spec's `train.backend` when it names one, else this
    process's Keras backend (imports Keras)."""
    if train_backend in BACKENDS:
        return train_backend

    return keras.backend.backend()


@functools.lru_cache(maxsize=1)
def gpu_available() -> bool:
    """Whether this process's Keras backend sees a GPU, asked as Keras asks it for cuDNN.

    TensorFlow: `tf.config.list_logical_devices("GPU")`; JAX: `jax.default_backend()`
    is `gpu`; PyTorch: `torch.cuda.is_available()`. Asked once per process. The app's web
    process hides its GPUs from itself for the training processes, so the app asks its
    training slots instead and passes the answer to `graph_report(gpu=...)`.
    """
    backend = keras.backend.backend()
    try:
        # Only the backend Keras runs on is asked (importing another would load it for nothing).
        if backend == "tensorflow":
            import tensorflow as tf  # the backend in use: loaded already

            return bool(tf.config.list_logical_devices("GPU"))
        if backend == "jax":
            import jax  # the backend in use: loaded already

            return jax.default_backend() == "gpu"
        if backend == "torch":
            import torch  # the backend in use: loaded already

            return bool(torch.cuda.is_available())
    except Exception:  # a backend that cannot list its devices has none to offer
        return False
    return False
