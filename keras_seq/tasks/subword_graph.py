"""A `SubwordVocabulary`'s encoding as core TensorFlow ops, for SavedModels that read text.

`Translator.export_saved_model` writes a `translate` signature that takes
strings; with subword vocabularies the graph must cut text into the pieces
SentencePiece would. tensorflow-text has a SentencePiece op, but it requires
the full `tensorflow` package (it would be installed beside `tensorflow-cpu`),
so the two encodings are written here in core ops, read from the model's
pieces and scores:

1. normalisation, as `keras_seq.tasks.subword.normalize`: NFC (the
   `tf_tokenizer` tables), lowercasing, whitespace runs to one space, none at
   the ends; then SentencePiece's "▁" before the text and for every space;
2. BPE (Sennrich et al. 2016, as SentencePiece applies it): start from the
   characters; while some adjacent pair `a b` is a piece, merge the pair whose
   piece has the highest score (SentencePiece's BPE scores are minus the merge
   rank), the leftmost on ties;
3. unigram (Kudo 2018): the Viterbi segmentation
   `argmax_{x_1 … x_k = text} Σ_i score(x_i)`, by dynamic programming over
   character positions, `best[j] = max_{l ≤ L} best[j − l] + score(text[j−l:j])`
   (L: the longest piece); a character that is no piece is an unknown piece
   of score `min score − 10`, SentencePiece's penalty;
4. pieces become ids (unknown ones UNK) and a run of UNKs becomes one, as
   SentencePiece writes them.

A test compares the ids with `SubwordVocabulary.encode` on the held-out
Tatoeba sentences and on edge cases (empty text, unknown characters,
decomposed accents).

References:
    - Kudo & Richardson, "SentencePiece", EMNLP 2018.
    - Sennrich, Haddow & Birch, "Neural Machine Translation of Rare Words with
      Subword Units", ACL 2016.
    - Kudo, "Subword Regularization", ACL 2018.
"""

from __future__ import annotations

import numpy as np
from sentencepiece import sentencepiece_model_pb2

from keras_seq.tasks.subword import WORD_BOUNDARY, SubwordVocabulary
from keras_seq.tasks.vocabulary import Vocabulary, _re2_classes, tf_tokenizer

# SentencePiece's penalty below the lowest piece score for an unknown character (unigram).
_UNK_PENALTY = 10.0


def tf_subword_encoder(vocabulary: SubwordVocabulary):
    """`vocabulary.encode` as TensorFlow ops (see the module docstring).

    Args:
        vocabulary: A `SubwordVocabulary`.

    Returns:
        A `tf.Module` (its lookup tables are tracked for saving); calling it on
        a 1-D `tf.string` tensor gives a `tf.RaggedTensor` of int32 ids
        `(batch, None)`, those of `vocabulary.encode` for each text.
    """
    # TensorFlow only here (a SavedModel's graph): the rest of keras_seq runs on any backend.
    import tensorflow as tf

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(vocabulary.model)
    normal = sentencepiece_model_pb2.ModelProto.SentencePiece.NORMAL
    pieces = [(i, p.piece, p.score) for i, p in enumerate(proto.pieces) if p.type == normal]
    longest = max(len(piece) for _, piece, _ in pieces)
    min_score = min(score for _, _, score in pieces)
    _, space = _re2_classes()
    bpe = vocabulary.model_type == "bpe"
    lowercase = vocabulary.lowercase

    class Encoder(tf.Module):
        def __init__(self):
            super().__init__(name="subword_encoder")
            self.text = tf_tokenizer(lowercase=lowercase)  # its NFC
            keys = tf.constant([piece for _, piece, _ in pieces])
            self.ids = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    keys, tf.constant([i for i, _, _ in pieces], tf.int32)
                ),
                default_value=Vocabulary.UNK,
            )
            self.scores = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    keys, tf.constant([s for _, _, s in pieces], tf.float32)
                ),
                default_value=-np.inf,
            )

        def __call__(self, texts):
            texts = self.text.nfc(tf.convert_to_tensor(texts, tf.string))
            if lowercase:
                texts = tf.strings.lower(texts, encoding="utf-8")
            texts = tf.strings.regex_replace(texts, f"[{space}]+", " ")
            texts = tf.strings.strip(texts)
            texts = tf.strings.regex_replace(texts, " ", WORD_BOUNDARY)
            texts = tf.where(tf.equal(texts, ""), texts, WORD_BOUNDARY + texts)
            chars = tf.strings.unicode_split(texts, "UTF-8")  # (batch, None)
            symbols = self._bpe(chars) if bpe else self._unigram(texts, chars)
            ids = tf.ragged.map_flat_values(self.ids.lookup, symbols)
            # Runs of unknown pieces become one UNK, as SentencePiece writes them.
            dense = ids.to_tensor(default_value=-1)
            previous = tf.pad(dense[:, :-1], [[0, 0], [1, 0]], constant_values=-1)
            keep = tf.not_equal(dense, -1) & ~(
                tf.equal(dense, Vocabulary.UNK) & tf.equal(previous, Vocabulary.UNK)
            )
            return tf.ragged.boolean_mask(dense, keep)

        def _bpe(self, chars):
            """Merge the adjacent pair of highest score (leftmost on ties) until none is a piece."""
            symbols = chars.to_tensor(default_value="")

            def step(symbols, _):
                left, right = symbols[:, :-1], symbols[:, 1:]
                valid = tf.not_equal(left, "") & tf.not_equal(right, "")
                score = tf.where(valid, self.scores.lookup(left + right), -np.inf)
                best = tf.reduce_max(score, axis=1, keepdims=True)
                found = tf.math.is_finite(best[:, 0])
                positions = tf.range(tf.shape(score)[1])[None, :]
                width = tf.shape(score)[1]
                first = tf.reduce_min(
                    tf.where(tf.equal(score, best) & valid, positions, width), axis=1
                )
                at = tf.equal(positions, first[:, None]) & found[:, None]  # (batch, M-1)
                merged = tf.where(at, left + right, left)
                merged = tf.concat([merged, symbols[:, -1:]], axis=1)
                drop = tf.concat([tf.zeros_like(at[:, :1]), at], axis=1)
                kept = tf.ragged.boolean_mask(merged, ~drop)
                return kept.to_tensor(default_value="", shape=tf.shape(symbols)), tf.reduce_any(
                    found
                )

            def more(symbols, going):
                return going

            symbols, _ = tf.while_loop(
                more,
                step,
                [symbols, tf.constant(True)],
                shape_invariants=[tf.TensorShape([None, None]), tf.TensorShape([])],
            )
            return tf.ragged.boolean_mask(symbols, tf.not_equal(symbols, ""))

        def _unigram(self, texts, chars):
            """Viterbi: the segmentation with the largest sum of piece scores."""
            lengths = tf.cast(chars.row_lengths(), tf.int32)
            n = tf.shape(chars.to_tensor(default_value=""))[1]
            batch = tf.shape(texts)[0]
            starts = tf.range(n)[None, :, None]  # (1, N, 1)
            sizes = tf.range(1, longest + 1)[None, None, :]  # (1, 1, L)
            inside = starts + sizes <= lengths[:, None, None]  # (batch, N, L)
            # Out-of-text substrings are asked as "" at a valid position (substr refuses others).
            pieces = tf.strings.substr(
                tf.broadcast_to(texts[:, None, None], tf.shape(inside)),
                tf.minimum(tf.broadcast_to(starts, tf.shape(inside)), lengths[:, None, None]),
                tf.where(inside, tf.broadcast_to(sizes, tf.shape(inside)), 0),
                unit="UTF8_CHAR",
            )
            score = tf.where(inside, self.scores.lookup(pieces), -np.inf)
            # A character that is no piece is an unknown piece of its own.
            single = score[:, :, 0]
            unknown = tf.math.is_inf(single) & inside[:, :, 0]
            single = tf.where(unknown, min_score - _UNK_PENALTY, single)
            score = tf.concat([single[:, :, None], score[:, :, 1:]], axis=2)
            # best[j]: the best score of the first j characters; back[j]: its last piece's length.
            best = tf.TensorArray(tf.float32, size=n + 1, clear_after_read=False)
            best = best.write(0, tf.zeros([batch]))
            back = tf.TensorArray(tf.int32, size=n + 1, clear_after_read=False)
            back = back.write(0, tf.zeros([batch], tf.int32))

            def forward(j, best, back):
                # Pieces ending at j: start j - l for l = 1..L.
                size = tf.range(1, longest + 1)
                start = j - size
                ok = start >= 0
                safe = tf.maximum(start, 0)
                previous = tf.transpose(best.gather(safe))  # (batch, L)
                piece = tf.gather(
                    tf.gather(score, safe, axis=1), size - 1, axis=2, batch_dims=0
                )  # (batch, L, L)
                piece = tf.linalg.diag_part(piece)  # (batch, L): score[b, start_l, l-1]
                total = tf.where(ok[None, :], previous + piece, -np.inf)
                choice = tf.argmax(total, axis=1, output_type=tf.int32)
                best = best.write(j, tf.reduce_max(total, axis=1))
                back = back.write(j, choice + 1)
                return j + 1, best, back

            _, best, back = tf.while_loop(
                lambda j, *_: j <= n, forward, [tf.constant(1), best, back]
            )
            back = tf.transpose(back.stack())  # (batch, N + 1)

            # Walk back from each text's end.
            ends = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
            sizes_out = tf.TensorArray(tf.int32, size=0, dynamic_size=True)

            def backward(k, position, ends, sizes_out):
                size = tf.gather(back, position, batch_dims=1)
                size = tf.where(position > 0, size, 0)
                ends = ends.write(k, position)
                sizes_out = sizes_out.write(k, size)
                return k + 1, position - size, ends, sizes_out

            _, _, ends, sizes_out = tf.while_loop(
                lambda k, position, *_: tf.reduce_any(position > 0),
                backward,
                [tf.constant(0), lengths, ends, sizes_out],
            )
            ends = tf.transpose(ends.stack())  # (batch, K), right to left
            sizes_out = tf.transpose(sizes_out.stack())
            ends, sizes_out = tf.reverse(ends, [1]), tf.reverse(sizes_out, [1])
            keep = sizes_out > 0
            words = tf.strings.substr(
                tf.broadcast_to(texts[:, None], tf.shape(ends)),
                ends - sizes_out,
                sizes_out,
                unit="UTF8_CHAR",
            )
            return tf.ragged.boolean_mask(words, keep)

    return Encoder()
