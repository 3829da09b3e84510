"""Subword vocabularies: BPE or unigram pieces learnt from the training text (SentencePiece).

A word vocabulary (`Vocabulary`) turns every word it did not see in training
into `<unk>`, and real text has many rare words ("fatiguée", "pyjamas"). A
subword vocabulary cuts words into pieces learnt from the training text, so a
rare word is spelt from frequent pieces and nothing a character of the
training text can spell becomes `<unk>`:

    "je suis fatigué."  →  ["▁je", "▁suis", "▁fatigu", "é", "."]

The pieces are learnt by SentencePiece (Kudo & Richardson 2018), one of two
ways:

- `"bpe"`: byte-pair encoding (Sennrich, Haddow & Birch 2016): start from
  characters and merge the most frequent adjacent pair, again and again,
  until the vocabulary holds `vocab_size` pieces;
- `"unigram"`: the unigram language model (Kudo 2018): start from many
  candidate pieces, fit P(piece) by EM so that a text's likelihood
  `P(x) = Π_i P(x_i)` over its best segmentation is high, and drop the pieces
  whose loss costs least, until `vocab_size` remain; a text is encoded with
  its most probable segmentation (Viterbi).

Whitespace is a piece character, "▁" (U+2581), written before each word, so
`decode` gives back the text as written, spaces where the text had them:
"je suis fatigué." (no space before the period) and "l'homme" (the article
joined) come back as they went in, not as tokens joined with spaces.

The four reserved ids are those of every `Vocabulary`: 0 `<pad>`, 1 `<start>`,
2 `<end>`, 3 `<unk>`; the pieces take 4, 5, …. A `SubwordVocabulary` is a
`Vocabulary` (its `tokens` are the pieces), so `Translator`, the tasks and the
run artifacts take it where they take a word vocabulary; its config holds the
SentencePiece model (a self-contained protobuf, base64 in JSON), so it saves
inside a `.keras` file and reloads with `safe_mode=True`.

Normalisation, before training and encoding: Unicode NFC, lowercasing if
`lowercase`, and runs of whitespace collapsed to one space with none at the
ends (SentencePiece's `remove_extra_whitespaces`); so
`decode(encode(s)) == normalize(s)` for every text whose characters the
training text holds.

References:
    - Kudo & Richardson, "SentencePiece: A simple and language independent
      subword tokenizer and detokenizer for Neural Text Processing", EMNLP
      2018 (system demonstrations).
    - Sennrich, Haddow & Birch, "Neural Machine Translation of Rare Words with
      Subword Units", ACL 2016 (BPE).
    - Kudo, "Subword Regularization: Improving Neural Network Translation
      Models with Multiple Subword Candidates", ACL 2018 (unigram).
"""

from __future__ import annotations

import base64
import io
import re
import unicodedata
from collections.abc import Iterable

import sentencepiece
from sentencepiece import sentencepiece_model_pb2

from keras_seq import argument_checks
from keras_seq.tasks.vocabulary import Vocabulary

MODEL_TYPES = ("bpe", "unigram")

# Bounds of `vocab_size`, the 4 reserved ids included: a few pieces beyond them, and at most
# 2**16 (SentencePiece's own practical range; an embedding of 65,536 rows is already large).
MIN_VOCAB_SIZE = 8
MAX_VOCAB_SIZE = 2**16

# The most training sentences `SubwordVocabulary.train` reads (the first ones, in order, so
# that training is deterministic); SentencePiece keeps them all in memory while it learns.
MAX_TRAINING_SENTENCES = 1_000_000

# Longer sentences (in bytes) are skipped by SentencePiece's trainer (its default is 4,192).
MAX_SENTENCE_BYTES = 16_384

WORD_BOUNDARY = "\u2581"  # "▁", SentencePiece's whitespace symbol

_WHITESPACE = re.compile(r"\s+")


def normalize(text: str, *, lowercase: bool = True) -> str:
    """The text a `SubwordVocabulary` reads: NFC, lowercased if asked, whitespace collapsed.

    Args:
        text: A string.
        lowercase: Whether to lowercase. Default True.

    Returns:
        The normalised string: what `decode(encode(text))` gives back when
        the vocabulary holds every character of `text`.

    Example:

    >>> normalize("  Je suis  FATIGUÉ. ")
    'je suis fatigué.'
    """
    if not isinstance(text, str):
        raise argument_checks.invalid("text", "a string", text)
    text = unicodedata.normalize("NFC", text)
    if lowercase:
        text = text.lower()
    return _WHITESPACE.sub(" ", text).strip()


class SubwordVocabulary(Vocabulary):
    """A `Vocabulary` of BPE or unigram subword pieces, learnt with SentencePiece.

    Build one with `SubwordVocabulary.train(texts, vocab_size, model_type)`
    from the training split only; the constructor takes a trained
    SentencePiece model.

    Args:
        model: The serialised SentencePiece model (`bytes`), or its base64
            text (as `get_config` writes it). Its ids 0–3 must be the pieces
            `<pad>`, `<start>`, `<end>`, `<unk>` (as `train` makes them).
        lowercase: Whether the text is lowercased before encoding, as it was
            for training. Default True.

    Example:

    >>> vocab = SubwordVocabulary.train(
    ...     ["je suis fatigué.", "il est fatigué.", "l'homme est là."], 30, "bpe")
    >>> vocab.decode(vocab.encode("L'homme est fatigué."))
    "l'homme est fatigué."
    """

    CONFIG_KEY = "subword"

    def __init__(self, model, *, lowercase: bool = True):
        if isinstance(model, str):
            try:
                model = base64.b64decode(model.encode("ascii"), validate=True)
            except (ValueError, UnicodeEncodeError):
                raise argument_checks.invalid(
                    "model", "a serialised SentencePiece model (bytes or base64 text)", model[:40]
                ) from None
        if not isinstance(model, (bytes, bytearray)) or not model:
            raise argument_checks.invalid(
                "model", "a serialised SentencePiece model (bytes or base64 text)", model
            )
        processor = sentencepiece.SentencePieceProcessor()
        try:
            processor.LoadFromSerializedProto(bytes(model))
        except (RuntimeError, OSError) as error:
            raise ValueError(
                "Received an invalid value for argument `model`, expected a serialised "
                f"SentencePiece model, got {len(model)} bytes it cannot read ({error})."
            ) from None
        pieces = [processor.IdToPiece(i) for i in range(processor.GetPieceSize())]
        if tuple(pieces[: len(self.SPECIAL_TOKENS)]) != self.SPECIAL_TOKENS:
            raise ValueError(
                "Received an invalid value for argument `model`, expected a SentencePiece model "
                f"whose ids 0-3 are {list(self.SPECIAL_TOKENS)}, got "
                f"{pieces[: len(self.SPECIAL_TOKENS)]}. Make it with SubwordVocabulary.train."
            )
        super().__init__(pieces[len(self.SPECIAL_TOKENS) :], lowercase=lowercase)
        self._model = bytes(model)
        self._processor = processor
        self.model_type = _model_type(processor)

    @classmethod
    def train(
        cls,
        texts: Iterable[str],
        vocab_size: int,
        model_type: str = "unigram",
        *,
        lowercase: bool = True,
    ) -> SubwordVocabulary:
        """Learns `vocab_size` subword ids from texts (the training split only).

        Deterministic: the same texts in the same order give the same pieces
        (one training thread, no sampling of sentences; at most
        `MAX_TRAINING_SENTENCES` of them, the first ones, are read).

        Args:
            texts: An iterable of strings, the training text.
            vocab_size: The ids of the vocabulary, its 4 reserved ids
                included, in `[MIN_VOCAB_SIZE, MAX_VOCAB_SIZE]` (8 to 65,536),
                and at most what the texts can fill (SentencePiece says how
                many in the error).
            model_type: `"bpe"` or `"unigram"` (default).
            lowercase: Whether to lowercase the texts. Default True.

        Returns:
            A `SubwordVocabulary` covering every character of the texts.
        """
        vocab_size = argument_checks.int_in_range(
            "vocab_size", vocab_size, MIN_VOCAB_SIZE, MAX_VOCAB_SIZE
        )
        model_type = argument_checks.one_of("model_type", model_type, MODEL_TYPES)
        lowercase = argument_checks.boolean("lowercase", lowercase)
        if isinstance(texts, str) or not isinstance(texts, Iterable):
            raise argument_checks.invalid("texts", "an iterable of strings", texts)
        sentences = []
        for position, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError(
                    "Received an invalid value for argument `texts`, expected strings, got "
                    f"{text!r} at position {position}."
                )
            if len(sentences) >= MAX_TRAINING_SENTENCES:
                break
            text = normalize(text, lowercase=lowercase)
            if text:
                sentences.append(text)
        if not sentences:
            raise argument_checks.invalid("texts", "at least one non-empty text", texts)
        model = io.BytesIO()
        try:
            sentencepiece.SentencePieceTrainer.Train(
                sentence_iterator=iter(sentences),
                model_writer=model,
                model_type=model_type,
                vocab_size=vocab_size,
                # Every character of the training text gets a piece: no <unk> for it.
                character_coverage=1.0,
                # The text is normalised here (NFC, lowercase); SentencePiece keeps it as is.
                normalization_rule_name="identity",
                remove_extra_whitespaces=True,
                pad_id=Vocabulary.PAD,
                bos_id=Vocabulary.START,
                eos_id=Vocabulary.END,
                unk_id=Vocabulary.UNK,
                pad_piece=Vocabulary.SPECIAL_TOKENS[Vocabulary.PAD],
                bos_piece=Vocabulary.SPECIAL_TOKENS[Vocabulary.START],
                eos_piece=Vocabulary.SPECIAL_TOKENS[Vocabulary.END],
                unk_piece=Vocabulary.SPECIAL_TOKENS[Vocabulary.UNK],
                input_sentence_size=MAX_TRAINING_SENTENCES,
                shuffle_input_sentence=False,
                max_sentence_length=MAX_SENTENCE_BYTES,
                num_threads=1,
                minloglevel=2,
            )
        except RuntimeError as error:
            message = str(error)
            needed = re.search(r"smaller than required_chars\. \d+ vs (\d+)", message)
            if needed:  # the text's characters and the special ids need more ids
                raise ValueError(
                    f"Received an invalid value for argument `vocab_size`: {vocab_size} is fewer "
                    f"ids than the characters of the training text and the special tokens "
                    f"need ({needed.group(1)}). Raise `vocab_size` to at least "
                    f"{needed.group(1)}."
                ) from None
            if "Vocabulary size" in message or "vocab_size" in message:
                limit = re.search(r"<=\s*(\d+)", message)
                most = f" (at most {limit.group(1)} for this text)" if limit else ""
                raise ValueError(
                    f"Received an invalid value for argument `vocab_size`: {vocab_size} is more "
                    f"ids than {len(sentences)} training sentences give a {model_type} "
                    f"vocabulary{most}. Lower `vocab_size`."
                ) from None
            raise ValueError(f"SentencePiece could not train on `texts`: {message}") from None
        return cls(model.getvalue(), lowercase=lowercase)

    @property
    def model(self) -> bytes:
        """The serialised SentencePiece model (self-contained: pieces, scores, type)."""
        return self._model

    def tokenize(self, text: str) -> list[str]:
        """The pieces of `text` (normalised first), "▁" marking the start of each word."""
        if not isinstance(text, str):
            raise argument_checks.invalid("text", "a string", text)
        return self._processor.EncodeAsPieces(normalize(text, lowercase=self.lowercase))

    def encode(self, text: str, *, add_end: bool = False) -> list[int]:
        """The ids of the pieces of `text`; characters training never saw become UNK."""
        if not isinstance(text, str):
            raise argument_checks.invalid("text", "a string", text)
        ids = list(self._processor.EncodeAsIds(normalize(text, lowercase=self.lowercase)))
        if add_end:
            ids.append(self.END)
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        """The text of ids as a person writes it: stops at END, skips PAD and START.

        Pieces are joined and each "▁" becomes a space, so words are
        separated where the text separated them and punctuation stays
        attached ("je suis fatigué."); UNK reads `"<unk>"`.
        """
        if hasattr(ids, "ndim") and ids.ndim != 1:
            raise argument_checks.invalid("ids", "a 1-D sequence of token ids", ids)
        kept = self._content_ids(ids)
        # SentencePiece writes UNK as " ⁇ "; write it as every vocabulary does.
        unknown = self.SPECIAL_TOKENS[self.UNK]
        text = "".join(unknown if i == self.UNK else self._tokens[i] for i in kept)
        return text.replace(WORD_BOUNDARY, " ").strip()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocabulary):
            return NotImplemented
        if not isinstance(other, SubwordVocabulary):
            return False
        return self._model == other._model and self.lowercase == other.lowercase

    def __hash__(self) -> int:
        return hash((self._model, self.lowercase))

    def __repr__(self) -> str:
        preview = ", ".join(repr(t) for t in self._tokens[4:9])
        more = ", …" if len(self._tokens) > 9 else ""
        return (
            f"SubwordVocabulary(model_type={self.model_type!r}, size={len(self)}, "
            f"lowercase={self.lowercase}, tokens=[{preview}{more}])"
        )

    def get_config(self) -> dict:
        """`{"subword": {"model": base64 text}, "lowercase": bool}`, JSON-serialisable.

        `Vocabulary.from_config` reads it back (the `"subword"` key says which kind).
        """
        return {
            "subword": {"model": base64.b64encode(self._model).decode("ascii")},
            "lowercase": self.lowercase,
        }

    @classmethod
    def from_config(cls, config: dict) -> SubwordVocabulary:
        """The inverse of `get_config`."""
        if (
            not isinstance(config, dict)
            or set(config) - {"subword", "lowercase"}
            or not isinstance(config.get("subword"), dict)
            or set(config["subword"]) != {"model"}
        ):
            raise argument_checks.invalid(
                "config", 'a dict {"subword": {"model": ...}, "lowercase": bool}', config
            )
        return cls(config["subword"]["model"], lowercase=config.get("lowercase", True))


def _model_type(processor) -> str:
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(processor.serialized_model_proto())
    name = sentencepiece_model_pb2.TrainerSpec.ModelType.Name(proto.trainer_spec.model_type)
    return name.lower()
