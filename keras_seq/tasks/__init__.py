"""Seeded NumPy tasks for sequence models, each described well enough to build a model for it.

A task generator returns a `TaskData`: train and validation arrays plus a
`SequenceSpec` (or, for images, an `ImageSpec`) for the inputs and a
`TargetSpec` for the targets.

Long memory (Hochreiter & Schmidhuber 1997): `long_lag`, remember the first
symbol across up to 1,000 random distractors; `adding_problem`, add two marked
values of a long sequence.

Permutations (Vinyals, Fortunato & Jaitly 2015): `sort_numbers`, point at the
input numbers in increasing order; the target is the sorting permutation.

Images, for the Vision Transformer (Dosovitskiy et al. 2020): `digits`, the
8×8 handwritten digits that ship inside scikit-learn; `shapes`, generated
images of four shapes at any size, for larger patch grids.
"""

from keras_seq.tasks.base import ImageSpec, SequenceSpec, TargetSpec, TaskData
from keras_seq.tasks.images import digits, shapes
from keras_seq.tasks.long_memory import adding_problem, long_lag
from keras_seq.tasks.permutation import sort_numbers

__all__ = [
    "ImageSpec",
    "SequenceSpec",
    "TargetSpec",
    "TaskData",
    "adding_problem",
    "digits",
    "long_lag",
    "shapes",
    "sort_numbers",
]
