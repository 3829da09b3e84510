"""The shared layer checks' own comparisons pass what they should and fail what they should."""

import numpy as np
import pytest

from keras_seq.testing import layer_checks


def outputs(seed=0):
    return np.random.default_rng(seed).normal(size=(4, 7, 4)).astype("float32")


def test_float16_rounding_everywhere_and_one_stray_element_pass_the_norm_comparison():
    expected = outputs()
    actual = expected * (1 + np.float32(2**-11) * np.sign(outputs(1)))  # one rounding per element
    actual[2, 3, 2] += 0.033  # the tail seen on CI: one element in 112 off by 0.033
    layer_checks._assert_close_in_norm(actual, expected, relative=1e-2, atol=0.1, what="t")


def test_a_wrong_position_fails_the_norm_comparison():
    expected = outputs()
    actual = expected.copy()
    actual[1, 5] = 0.0  # a masked step that lost its values
    with pytest.raises(AssertionError, match="output 0"):
        layer_checks._assert_close_in_norm(actual, expected, relative=1e-2, atol=0.1, what="t")


def test_an_error_spread_over_every_element_fails_the_norm_comparison():
    expected = outputs()
    actual = expected * 1.03  # 3% everywhere: each element is within 0.1, the norm is not
    with pytest.raises(AssertionError, match="in norm"):
        layer_checks._assert_close_in_norm(actual, expected, relative=1e-2, atol=0.1, what="t")


def test_outputs_of_another_shape_fail():
    with pytest.raises(AssertionError, match="shape"):
        layer_checks._assert_close_in_norm(
            outputs()[:, :6], outputs(), relative=1e-2, atol=0.1, what="t"
        )
