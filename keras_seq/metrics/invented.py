"""Invented words: output words that no training target holds.

A translator that writes subword pieces can spell a word it never saw
("l'ende" from "l'" and "ende"), and one that writes word tokens can join
them into one (`l'` and `ami` into "l'ami", which no training sentence
held). Such a word is most often not French at all. For the words of the
outputs (matches of `WORD`: letters and digits, joined by apostrophes or
hyphens, so "aujourd'hui" and "peut-être" are one word each),

    invented share = occurrences of words whose lowercase form is in no
                     training target / occurrences of all output words

compared without case, so "Bonjour" at the start of an output is not
invented when training held "bonjour".
"""

from __future__ import annotations

import collections
import re

from keras_seq.metrics.bleu import _strings

# A word: letters or digits, joined by an apostrophe (straight or curly) or a hyphen.
WORD = re.compile(r"\w+(?:['’\-]\w+)*")


def invented_words(outputs, training_texts):
    """The share of output words that no training text holds, and those words.

    Args:
        outputs: A sequence of output strings (detokenised text).
        training_texts: The training targets, a sequence of strings.

    Returns:
        `(share, words)`: the share of word occurrences in `outputs` whose
        lowercase form is in no training text (a float in [0, 1]; 0.0 when
        the outputs hold no word), and a `collections.Counter` of those
        words, lowercased, by occurrences (`words.most_common()` lists the
        most frequent first).

    Example:

    >>> share, words = invented_words(["Le chat dort.", "le chien dort"], ["le chat dort"])
    >>> share, dict(words)
    (0.16666666666666666, {'chien': 1})
    """
    outputs = _strings("outputs", outputs)
    training_texts = _strings("training_texts", training_texts)
    known = {word.lower() for text in training_texts for word in WORD.findall(text)}
    words = [word.lower() for text in outputs for word in WORD.findall(text)]
    invented = collections.Counter(word for word in words if word not in known)
    share = sum(invented.values()) / len(words) if words else 0.0
    return share, invented
