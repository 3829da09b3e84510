"""The backend dispatch for gradients, against derivatives worked out by hand."""

import math

import keras
import numpy as np
import pytest
from keras import ops

from keras_seq.diagnostics import _autodiff
from keras_seq.diagnostics._autodiff import gradients

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32)


def to_numpy(tensors):
    return [np.asarray(ops.convert_to_numpy(t)) for t in tensors]


# Through keras.ops, on whichever backend Keras runs


@pytest.mark.backend_agnostic
def test_gradients_match_the_analytic_derivatives():
    # f(a, b) = Σ sin(a)·b + Σ a²:  ∂f/∂a = cos(a)·b + 2a,  ∂f/∂b = sin(a).
    def f(a, b):
        return ops.sum(ops.sin(a) * b) + ops.sum(a**2)

    grad_a, grad_b = to_numpy(gradients(f, [A, B]))

    np.testing.assert_allclose(grad_a, np.cos(A) * B + 2 * A, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad_b, np.sin(A), rtol=1e-5, atol=1e-6)


@pytest.mark.backend_agnostic
def test_unused_and_stopped_tensors_get_zero_gradients():
    unused = np.ones((2,), dtype=np.float32)

    def f(a, b, unused):
        return ops.sum(a) + ops.sum(ops.stop_gradient(b) ** 2)

    grad_a, grad_b, grad_unused = to_numpy(gradients(f, [A, B, unused]))

    np.testing.assert_array_equal(grad_a, np.ones_like(A))
    np.testing.assert_array_equal(grad_b, np.zeros_like(B))
    np.testing.assert_array_equal(grad_unused, np.zeros_like(unused))


@pytest.mark.backend_agnostic
def test_non_scalar_function_is_refused():
    with pytest.raises(ValueError, match=r"must return a scalar, got shape \(3, 4\)"):
        gradients(lambda a: a * 2.0, [A])


@pytest.mark.backend_agnostic
def test_backend_without_autodiff_is_refused(monkeypatch):
    monkeypatch.setattr(keras.backend, "backend", lambda: "numpy")
    with pytest.raises(NotImplementedError, match="'numpy'"):
        gradients(lambda a: ops.sum(a), [A])


@pytest.mark.backend_agnostic
def test_gradients_through_a_keras_cell_match_numpy_product_of_jacobians():
    # A SimpleRNNCell unrolled by hand; δ is added to h after step s. For
    # L = Σ_b ⟨h_{T−1}, w⟩ with h_k = tanh(W_xᵀ x_k + W_hᵀ h_{k−1} + b):
    #   ∂L/∂δ = (J_{T−1} ⋯ J_{s+1})ᵀ w,   J_k = diag(1 − h_k²) W_hᵀ,
    #   ∂L/∂x_s = (diag(1 − h_s²) W_xᵀ)ᵀ ∂L/∂δ.
    batch, steps, input_dim, units, s = 3, 9, 4, 5, 2
    rng = np.random.default_rng(1)
    kernel = rng.standard_normal((input_dim, units)) / math.sqrt(input_dim)
    recurrent_kernel = 0.9 * rng.standard_normal((units, units)) / math.sqrt(units)
    bias = 0.1 * rng.standard_normal(units)
    x = rng.standard_normal((steps, batch, input_dim)).astype(np.float32)
    w = rng.standard_normal(units).astype(np.float32)
    cell = keras.layers.SimpleRNNCell(units)
    cell.build((None, input_dim))
    cell.set_weights([kernel, recurrent_kernel, bias])

    def loss(x_s, delta):
        h = ops.zeros((batch, units))
        for t in range(steps):
            h, _ = cell(x_s if t == s else x[t], [h])
            if t == s:
                h = h + delta
        return ops.sum(ops.matmul(h, w))

    delta = np.zeros((batch, units), dtype=np.float32)
    grad_x, grad_delta = to_numpy(gradients(loss, [x[s], delta]))

    for b in range(batch):
        h, hs = np.zeros(units), []
        for t in range(steps):
            h = np.tanh(kernel.T @ x[t, b] + recurrent_kernel.T @ h + bias)
            hs.append(h)
        product = np.eye(units)
        for k in range(s + 1, steps):
            product = np.diag(1 - hs[k] ** 2) @ recurrent_kernel.T @ product
        expected_delta = product.T @ w
        expected_x = (np.diag(1 - hs[s] ** 2) @ kernel.T).T @ expected_delta
        np.testing.assert_allclose(grad_delta[b], expected_delta, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(grad_x[b], expected_x, rtol=1e-4, atol=1e-6)


# Each branch with its own framework's ops, whatever the Keras backend


def test_tensorflow_branch_differentiates_tensorflow_ops():
    tf = pytest.importorskip("tensorflow")

    grad_a, grad_b = _autodiff._tensorflow_gradients(
        lambda a, b: tf.reduce_sum(tf.sin(a) * b), [A, B]
    )

    np.testing.assert_allclose(grad_a.numpy(), np.cos(A) * B, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad_b.numpy(), np.sin(A), rtol=1e-5, atol=1e-6)


def test_jax_branch_differentiates_jax_ops():
    jnp = pytest.importorskip("jax.numpy")

    grad_a, grad_b = _autodiff._jax_gradients(lambda a, b: jnp.sum(jnp.sin(a) * b), [A, B])

    np.testing.assert_allclose(np.asarray(grad_a), np.cos(A) * B, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(grad_b), np.sin(A), rtol=1e-5, atol=1e-6)


def test_torch_branch_differentiates_torch_ops():
    torch = pytest.importorskip("torch")

    grad_a, grad_b, grad_unused = _autodiff._torch_gradients(
        lambda a, b, unused: torch.sum(torch.sin(a) * b), [A, B, B]
    )

    np.testing.assert_allclose(grad_a.cpu().numpy(), np.cos(A) * B, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad_b.cpu().numpy(), np.sin(A), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(grad_unused.cpu().numpy(), np.zeros_like(B))


def test_docstring_example_runs():
    import doctest

    result = doctest.testmod(
        _autodiff, globs={"np": np, "keras": keras, **vars(_autodiff)}, optionflags=0
    )
    assert result.attempted > 0
    assert result.failed == 0
