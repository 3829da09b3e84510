"""Seeded NumPy tasks for sequence models, each described well enough to build a model for it.

A task generator returns a `TaskData`: train and validation arrays plus a
`SequenceSpec` for the inputs and a `TargetSpec` for the targets.

Long memory (Hochreiter & Schmidhuber 1997): `long_lag`, remember the first
symbol across up to 1,000 random distractors; `adding_problem`, add two marked
values of a long sequence.
"""

from keras_seq.tasks.base import SequenceSpec, TargetSpec, TaskData
from keras_seq.tasks.long_memory import adding_problem, long_lag

__all__ = ["SequenceSpec", "TargetSpec", "TaskData", "adding_problem", "long_lag"]
