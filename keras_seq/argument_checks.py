"""Argument checks shared by every keras_seq layer.

Each check raises a `ValueError` that names the argument and the value it
received, in the form Keras itself uses:

    Received an invalid value for argument `units`, expected a positive
    integer no larger than 65536, got -3.

They run in `__init__`, before any weight exists, so that a hostile config
(`units=10**12`) is refused without allocating anything.
"""

from __future__ import annotations

import math
import numbers

# A recurrent kernel of 65536 x 4*65536 float32 weights is 64 GiB: well past
# anything that trains, so larger values are refused rather than allocated.
MAX_UNITS = 2**16

# The largest number of weights one layer may create (2**31 float32 values,
# 8 GiB). Checked in `build()`, where the input dimension is known.
MAX_LAYER_PARAMS = 2**31


def invalid(name: str, expected: str, value: object) -> ValueError:
    """The error for argument `name`: what was expected and the value received."""
    return ValueError(
        f"Received an invalid value for argument `{name}`, expected {expected}, got {value!r}."
    )


def _is_int_in(value: object, minimum: int, maximum: int | None) -> bool:
    return (
        isinstance(value, numbers.Integral)
        and not isinstance(value, bool)
        and value >= minimum
        and (maximum is None or value <= maximum)
    )


def int_in_range(name: str, value: object, minimum: int, maximum: int | None = None) -> int:
    """Returns `value` if it is an integer (not a bool) in [minimum, maximum], else raises."""
    if maximum is None:
        expected = f"an integer of at least {minimum}"
    else:
        expected = f"an integer from {minimum} to {maximum}"
    if not _is_int_in(value, minimum, maximum):
        raise invalid(name, expected, value)
    return int(value)


def positive_int(name: str, value: object, maximum: int | None = None) -> int:
    """Returns `value` if it is an integer in [1, maximum], else raises."""
    expected = "a positive integer"
    if maximum is not None:
        expected += f" no larger than {maximum}"
    if not _is_int_in(value, 1, maximum):
        raise invalid(name, expected, value)
    return int(value)


def seed(name: str, value: object) -> int:
    """Returns `value` if it is a non-negative integer, as seeds are."""
    if not _is_int_in(value, 0, None):
        raise invalid(name, "a non-negative integer", value)
    return int(value)


def one_of(name: str, value: object, choices: tuple[str, ...]) -> str:
    """Returns `value` if it is one of the string `choices`, else raises listing them."""
    if not isinstance(value, str) or value not in choices:
        raise invalid(name, "one of " + ", ".join(repr(c) for c in choices), value)
    return value


def boolean(name: str, value: object) -> bool:
    """Returns `value` if it is a bool, else raises (no truthy strings)."""
    if not isinstance(value, bool):
        raise invalid(name, "True or False", value)
    return value


def rate(name: str, value: object) -> float:
    """Returns `value` if it is a float in [0, 1), the range of a dropout rate."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not 0.0 <= float(value) < 1.0
    ):
        raise invalid(name, "a float in [0, 1)", value)
    return float(value)


def finite_float(name: str, value: object) -> float:
    """Returns `value` as a float if it is a finite real number, else raises."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(float(value))
    ):
        raise invalid(name, "a finite number", value)
    return float(value)


def positive_float(name: str, value: object) -> float:
    """Returns `value` as a float if it is a finite number above zero, else raises."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(float(value))
        or float(value) <= 0.0
    ):
        raise invalid(name, "a positive number", value)
    return float(value)


def parameter_budget(layer_name: str, count: int) -> None:
    """Refuses to build a layer that would create more than `MAX_LAYER_PARAMS` weights."""
    if count > MAX_LAYER_PARAMS:
        raise ValueError(
            f"Layer `{layer_name}` would create {count:,} weights, more than the "
            f"{MAX_LAYER_PARAMS:,} one layer may hold. Reduce `units` or the input dimension."
        )
