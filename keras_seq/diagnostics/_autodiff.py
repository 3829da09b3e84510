"""Reverse-mode gradients on whichever backend Keras runs on.

Keras 3 computes gradients inside `Model.fit` on every backend but exposes
no backend-independent `grad` for arbitrary functions, so the diagnostics
dispatch on `keras.backend.backend()` here, and nowhere else:

| backend      | mechanism                                  |
|--------------|--------------------------------------------|
| `tensorflow` | `tf.GradientTape` (unconnected inputs → 0) |
| `jax`        | `jax.grad(fn, argnums=(0, …, n−1))`        |
| `torch`      | `torch.autograd.grad` (unused inputs → 0)  |

The function must be written with `keras.ops` (or Keras layers) for the
dispatch to be backend-independent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import keras


def gradients(fn: Callable[..., object], tensors: Sequence[object]) -> list:
    """Returns `[∂fn/∂t for t in tensors]`, where `fn(*tensors)` is a scalar.

    Args:
        fn: A function of `len(tensors)` tensors, written with `keras.ops`,
            that returns a scalar (shape `()`).
        tensors: NumPy arrays or backend tensors, converted to the current
            backend's tensors before `fn` sees them.

    Returns:
        A list of backend tensors, one per input and of its shape. A tensor
        that `fn` does not depend on (or reaches only through
        `ops.stop_gradient`) gets zeros on every backend.

    Raises:
        ValueError: if `fn` does not return a scalar.
        NotImplementedError: on a backend without autodiff (`numpy`, `openvino`).

    Example:

    >>> x = np.array([0.0, 1.0], dtype="float32")
    >>> [g] = gradients(lambda t: keras.ops.sum(t**2), [x])
    >>> keras.ops.convert_to_numpy(g)
    array([0., 2.], dtype=float32)
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        return _tensorflow_gradients(fn, tensors)
    if backend == "jax":
        return _jax_gradients(fn, tensors)
    if backend == "torch":
        return _torch_gradients(fn, tensors)
    raise NotImplementedError(
        f"Gradients need a backend with autodiff (tensorflow, jax or torch); "
        f"the Keras backend is {backend!r}."
    )


def _scalar(value):
    if tuple(value.shape) != ():
        raise ValueError(
            f"The function to differentiate must return a scalar, got shape {tuple(value.shape)}."
        )
    return value


def _tensorflow_gradients(fn, tensors):
    import tensorflow as tf  # the backend in use: each backend's autodiff, only its own

    tensors = [tf.convert_to_tensor(t) for t in tensors]
    with tf.GradientTape() as tape:
        for t in tensors:
            tape.watch(t)
        value = _scalar(fn(*tensors))
    return tape.gradient(value, tensors, unconnected_gradients=tf.UnconnectedGradients.ZERO)


def _jax_gradients(fn, tensors):
    import jax  # the backend in use (with jax.numpy), as above

    tensors = [jax.numpy.asarray(t) for t in tensors]
    grad_fn = jax.grad(lambda *ts: _scalar(fn(*ts)), argnums=tuple(range(len(tensors))))
    return list(grad_fn(*tensors))


def _torch_gradients(fn, tensors):  # pragma: no cover - torch is not installed in CI
    import torch  # the backend in use, as above

    # Under the torch backend, Keras's conversion puts tensors on Keras's device (GPU if any).
    convert = keras.ops.convert_to_tensor if keras.backend.backend() == "torch" else torch.as_tensor
    tensors = [convert(t).detach().clone().requires_grad_(True) for t in tensors]
    with torch.enable_grad():
        value = _scalar(fn(*tensors))
        grads = torch.autograd.grad(value, tensors, allow_unused=True)
    return [
        torch.zeros_like(t) if g is None else g.detach()
        for t, g in zip(tensors, grads, strict=True)
    ]
