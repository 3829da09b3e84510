"""Seeded NumPy tasks for sequence models, each described well enough to build a model for it.

A task generator returns a `TaskData`: train and validation arrays plus a
`SequenceSpec` (or, for images, an `ImageSpec`) for the inputs and a
`TargetSpec` for the targets.

Long memory (Hochreiter & Schmidhuber 1997): `long_lag`, remember the first
symbol across up to 1,000 random distractors; `adding_problem`, add two marked
values of a long sequence.

Permutations (Vinyals, Fortunato & Jaitly 2015): `sort_numbers`, point at the
input numbers in increasing order; the target is the sorting permutation.

Sequence to sequence (Sutskever, Vinyals & Le 2014; Bahdanau, Cho & Bengio
2015), each carrying a `Vocabulary` per side: `copy` and `reverse`,
variable-length symbol sequences to copy or write backwards; `toy_translation`,
English→French sentences from a small grammar (adjectives after the noun,
agreement, ne … pas, long sentences through conjunctions and relative
clauses), with `toy_translation_pairs` for the text itself;
`load_parallel_text`, a user's file of `source<TAB>target` lines (the
Tatoeba/Anki format), with `read_parallel_text`, `split_pairs` and
`task_from_pairs` for pairs already in memory. Every text task takes
`tokenizer="word"` (a `Vocabulary` of whole words) or `"bpe"` / `"unigram"`
(a `SubwordVocabulary` of SentencePiece pieces, `vocab_size` ids, learnt from
the training split).

Images, for the Vision Transformer (Dosovitskiy et al. 2020): `digits`, the
8×8 handwritten digits that ship inside scikit-learn; `shapes`, generated
images of four shapes at any size, for larger patch grids.

Videos, for the ConvLSTM (Shi et al. 2015): `moving_shapes`, shapes that
glide and bounce off the walls (as Moving MNIST does); the first frames are
the inputs (a `FramesSpec`), the next frames the targets (kind `"frames"`).

Captions, for attention over image regions (Xu et al. 2015):
`shape_captions`, images of two coloured shapes with a caption that names
both and how they lie, and the boxes of the objects each word is about.
"""

from keras_seq.tasks.base import FramesSpec, ImageSpec, SequenceSpec, TargetSpec, TaskData
from keras_seq.tasks.captions import caption_vocabulary, shape_captions
from keras_seq.tasks.frames import moving_shapes
from keras_seq.tasks.images import digits, shapes
from keras_seq.tasks.long_memory import adding_problem, long_lag
from keras_seq.tasks.parallel_text import (
    load_parallel_text,
    read_parallel_text,
    split_pairs,
    task_from_pairs,
)
from keras_seq.tasks.permutation import sort_numbers
from keras_seq.tasks.sequences import copy, reverse
from keras_seq.tasks.subword import SubwordVocabulary
from keras_seq.tasks.translation import toy_translation, toy_translation_pairs
from keras_seq.tasks.vocabulary import Vocabulary

__all__ = [
    "FramesSpec",
    "ImageSpec",
    "SequenceSpec",
    "SubwordVocabulary",
    "TargetSpec",
    "TaskData",
    "Vocabulary",
    "adding_problem",
    "caption_vocabulary",
    "copy",
    "digits",
    "load_parallel_text",
    "long_lag",
    "moving_shapes",
    "read_parallel_text",
    "reverse",
    "shape_captions",
    "shapes",
    "sort_numbers",
    "split_pairs",
    "task_from_pairs",
    "toy_translation",
    "toy_translation_pairs",
]
