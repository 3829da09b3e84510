"""The field types the model types share: a width, a number of layers, a dropout rate.

Each is an `int` or `float` with its bounds, so that every model type refuses
`units: 0` or `dropout: 1.5` with the same words, naming the bound.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

MAX_UNITS = 2**16  # keras_seq.argument_checks.MAX_UNITS
MAX_LAYERS = 64

Units = Annotated[int, Field(ge=1, le=MAX_UNITS)]
Layers = Annotated[int, Field(ge=1, le=MAX_LAYERS)]
Rate = Annotated[float, Field(ge=0, lt=1, description="Dropout rate, in [0, 1).")]
