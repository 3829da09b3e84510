"""Scores for sequence-to-sequence models: BLEU, exact match, token accuracy, BLEU by length.

- `MaskedTokenAccuracy`: the Keras metric of per-token accuracy with padding
  left out, which `keras_seq.models.compile_for` reports as `token_accuracy`.

- `corpus_bleu`: corpus BLEU (Papineni et al. 2002) computed by SacreBLEU
  (Post 2018) on text that is already tokenised.
- `exact_match`: the fraction of outputs equal to their reference.
- `token_accuracy`: per-position accuracy of predicted ids against target
  ids, padding left out; `text_token_accuracy` the same on token strings.
- `evaluate_by_length`: those scores per source-length bucket for a
  translator, as a pandas DataFrame, and `plot_bleu_by_length`, the BLEU
  against sentence length curve of Bahdanau, Cho & Bengio (2015, figure 2)
  for one model or several on one axes.
- `invented_words`: the share of output words that no training target holds
  (compared without case), and those words.
"""

from keras_seq.metrics.bleu import corpus_bleu, exact_match
from keras_seq.metrics.by_length import evaluate_by_length, length_buckets, plot_bleu_by_length
from keras_seq.metrics.invented import invented_words
from keras_seq.metrics.masked_token_accuracy import MaskedTokenAccuracy
from keras_seq.metrics.sequence import text_token_accuracy, token_accuracy

__all__ = [
    "MaskedTokenAccuracy",
    "corpus_bleu",
    "evaluate_by_length",
    "exact_match",
    "invented_words",
    "length_buckets",
    "plot_bleu_by_length",
    "text_token_accuracy",
    "token_accuracy",
]
