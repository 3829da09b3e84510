"""The graph of `Translator.export_saved_model`: TensorFlow's, imported at the top.

`export_archive(translator, strategy, described)` is a `keras.export.ExportArchive` with
the three signatures that method documents: `serve` (source ids to the chosen decoding's
target ids), `translate` (texts to texts, tokenised and looked up in the graph:
`TextSignature`) and `decoding` (the JSON of how `serve` decodes). The translator imports
this module when it exports, on the TensorFlow backend only; the rest of keras_seq runs on
any backend.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from keras_seq.tasks.subword import WORD_BOUNDARY, SubwordVocabulary
from keras_seq.tasks.subword_graph import tf_subword_encoder
from keras_seq.tasks.vocabulary import Vocabulary, tf_tokenizer


def export_archive(translator, strategy, described):
    """The SavedModel's archive: `serve`, `translate` and `decoding` (see the module)."""
    model, max_length = translator.model, translator.max_length

    def serve(source):
        return strategy.decode(model, source, max_length).ids

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(
        "serve", serve, input_signature=[tf.TensorSpec((None, None), tf.int32, "source")]
    )
    text = TextSignature(translator.source_vocabulary, translator.target_vocabulary, serve)
    for resource in text.resources:
        archive.track(resource)
    archive.add_endpoint(
        "translate", text, input_signature=[tf.TensorSpec((None,), tf.string, "texts")]
    )
    archive.add_endpoint("decoding", lambda: tf.constant(described), input_signature=[])
    return archive


class TextSignature:
    """The SavedModel's `translate`: texts → tokens → source ids → `serve` → target tokens → texts.

    Its lookup tables and tokenizer are `resources`, which the export archive
    must track so that they are saved with the graph.
    """

    def __init__(self, source_vocabulary, target_vocabulary, serve):
        if isinstance(source_vocabulary, SubwordVocabulary):
            self.encode = tf_subword_encoder(source_vocabulary)  # texts → ragged ids
        else:
            self.tokenize = tf_tokenizer(lowercase=source_vocabulary.lowercase)
            self.source_ids = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(source_vocabulary.tokens),
                    tf.range(len(source_vocabulary), dtype=tf.int32),
                ),
                default_value=Vocabulary.UNK,
            )
            self.encode = self._encode_words
        self.subword_target = isinstance(target_vocabulary, SubwordVocabulary)
        self.target_tokens = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.range(len(target_vocabulary), dtype=tf.int32),
                tf.constant(target_vocabulary.tokens),
            ),
            default_value=Vocabulary.SPECIAL_TOKENS[Vocabulary.UNK],
        )
        self.serve = serve
        if isinstance(source_vocabulary, SubwordVocabulary):
            self.resources = [self.encode, self.target_tokens]
        else:
            self.resources = [self.tokenize, self.source_ids, self.target_tokens]

    def _encode_words(self, texts):
        tokens = self.tokenize(texts)  # (batch, None) strings
        return tf.ragged.map_flat_values(self.source_ids.lookup, tokens)

    def __call__(self, texts):
        ids = self.encode(texts)  # (batch, None) int32
        empty = tf.equal(ids.row_lengths(), 0)
        source = ids.to_tensor(default_value=Vocabulary.PAD)  # (batch, S), right-padded
        # A text without a token is decoded from one <unk> (like translate's filler rows),
        # so that the batch has a time step; its translation is "".
        width = tf.shape(source)[1]
        source = tf.pad(source, [[0, 0], [0, tf.maximum(1 - width, 0)]])
        first = tf.where(empty, Vocabulary.UNK, source[:, 0])
        source = tf.concat([first[:, None], source[:, 1:]], axis=1)
        target = self.serve(source)  # (batch, max_length): tokens, END, then PAD
        ended = tf.cumsum(tf.cast(tf.equal(target, Vocabulary.END), tf.int32), axis=1) > 0
        keep = ~ended & tf.not_equal(target, Vocabulary.PAD)
        keep &= tf.not_equal(target, Vocabulary.START)
        words = tf.ragged.boolean_mask(self.target_tokens.lookup(target), keep)
        if self.subword_target:  # pieces joined, "▁" a space, as SubwordVocabulary.decode
            translations = tf.strings.reduce_join(words, axis=1, separator="")
            translations = tf.strings.strip(
                tf.strings.regex_replace(translations, WORD_BOUNDARY, " ")
            )
        else:
            translations = tf.strings.reduce_join(words, axis=1, separator=" ")
        return tf.where(empty, "", translations)
