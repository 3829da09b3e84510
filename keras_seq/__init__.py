"""keras_seq: Keras 3 layers for the whole arc of sequence models.

From the vanilla RNN and the 1997 LSTM with its constant error carousel to
attention, the Transformer and the Vision Transformer, written with
`keras.ops` only so that every layer runs on TensorFlow, JAX and PyTorch.

Example:

>>> from keras_seq import layers
>>> lstm = layers.CECLSTM(16)  # the 1997 LSTM: no forget gate
"""

# Importing every subpackage registers every class (layers, models, the losses, the metric,
# the learning-rate schedule), so that `import keras_seq` is all a user needs before
# `keras.saving.load_model(..., safe_mode=True)`, and makes `keras_seq.metrics` and the
# rest attributes of the package.
from keras_seq import diagnostics, layers, losses, metrics, models, schedules, tasks, testing

# The one place the version is written: setuptools reads this literal for pyproject.toml's
# dynamic version (without importing Keras); `keras-seq --version` reads the installed metadata.
__version__ = "0.1.0"

__all__ = [
    "__version__",
    "diagnostics",
    "layers",
    "losses",
    "metrics",
    "models",
    "schedules",
    "tasks",
    "testing",
]
