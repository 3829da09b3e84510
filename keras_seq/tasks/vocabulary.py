"""Words to integer ids and back: the vocabulary of a sequence-to-sequence task.

A `Vocabulary` maps each token of a text to an integer id, the input of an
embedding layer, and maps a model's output ids back to text. Four ids are
reserved and the same in every vocabulary:

    0 <pad>    right padding of a batch; a model masks it out
    1 <start>  the first decoder input, before any target token
    2 <end>    ends a target sentence; decoding stops at it
    3 <unk>    any token the vocabulary does not hold

The other tokens take the ids 4, 5, … in the order given. `Vocabulary.build`
orders them by decreasing frequency in the training texts, ties broken
alphabetically, so the same texts always give the same ids.

Tokenisation: the text is put in Unicode NFC form (so a precomposed "é" and
"e" + combining accent are the same token), lowercased if `lowercase`, and cut
by the regular expression `TOKEN_PATTERN` into words (runs of Unicode letters,
digits and underscores, which may hold an inner apostrophe or hyphen, as in
"don't", "l'homme", "peut-être") and single punctuation marks or symbols.
Whitespace only separates tokens. So `"Le chat, noir!"` becomes
`["le", "chat", ",", "noir", "!"]`. The text `"<unk>"` is one token, the UNK
id, so that a decoded sentence holding unknown words encodes back to the same
ids.
"""

from __future__ import annotations

import collections
import functools
import numbers
import re
import unicodedata
from collections.abc import Iterable, Sequence

import numpy as np

from keras_seq import argument_checks

# "<unk>" (what `decode` writes for UNK); a word: letters, digits or
# underscores (`\w` is Unicode-aware for str patterns), with inner apostrophes
# or hyphens; or any other single non-space character (punctuation, symbols).
TOKEN_PATTERN = re.compile(r"<unk>|\w+(?:['’\-]\w+)*|[^\w\s]")

# Most tokens a vocabulary may hold, specials included: an embedding of
# 2**20 rows × 1024 float32 values is already 4 GiB.
MAX_VOCAB_SIZE = 2**20


class Vocabulary:
    """A token ↔ id mapping with four reserved ids: PAD, START, END and UNK.

    Args:
        tokens: The non-special tokens, in id order: `tokens[i]` gets id
            `i + 4`. Each must be a non-empty string without whitespace (so
            that `decode`, which joins tokens with spaces, round-trips),
            unique, and not one of `SPECIAL_TOKENS`.
        lowercase: Whether `tokenize` lowercases the text first. Default True.

    Example:

    >>> vocab = Vocabulary.build(["the black cat", "the cat"])
    >>> len(vocab), vocab.encode("the cat sat", add_end=True)
    (7, [5, 4, 3, 2])
    >>> vocab.decode([5, 6, 4, 2, 0, 0])
    'the black cat'
    """

    PAD, START, END, UNK = 0, 1, 2, 3
    SPECIAL_TOKENS = ("<pad>", "<start>", "<end>", "<unk>")
    # The key that says a config is a subclass's (`SubwordVocabulary`: "subword"); a
    # config without any subclass's key is a word vocabulary's.
    CONFIG_KEY: str | None = None

    def __init__(self, tokens: Sequence[str], *, lowercase: bool = True):
        self.lowercase = argument_checks.boolean("lowercase", lowercase)
        if isinstance(tokens, str) or not isinstance(tokens, Iterable):
            raise argument_checks.invalid("tokens", "a list of token strings", tokens)
        tokens = list(tokens)
        if len(tokens) + len(self.SPECIAL_TOKENS) > MAX_VOCAB_SIZE:
            raise ValueError(
                f"Received an invalid value for argument `tokens`, expected at most "
                f"{MAX_VOCAB_SIZE - len(self.SPECIAL_TOKENS):,} tokens, got {len(tokens):,}."
            )
        index = {token: i for i, token in enumerate(self.SPECIAL_TOKENS)}
        for position, token in enumerate(tokens):
            if not isinstance(token, str) or not token or any(ch.isspace() for ch in token):
                raise ValueError(
                    "Received an invalid value for argument `tokens`, expected non-empty "
                    f"strings without whitespace, got {token!r} at position {position}."
                )
            if token in index:
                what = "a reserved special token" if token in self.SPECIAL_TOKENS else "repeated"
                raise ValueError(
                    "Received an invalid value for argument `tokens`, expected unique "
                    f"non-special tokens, got {token!r} at position {position} ({what})."
                )
            index[token] = position + len(self.SPECIAL_TOKENS)
        self._tokens = list(self.SPECIAL_TOKENS) + tokens
        self._index = index

    @classmethod
    def build(
        cls,
        texts: Iterable[str],
        *,
        max_size: int | None = None,
        min_count: int = 1,
        lowercase: bool = True,
    ) -> Vocabulary:
        """Builds a vocabulary from texts: the most frequent tokens first.

        Build it from the training split only, so that validation measures
        what a model does with words it never saw (they become `<unk>`).

        Args:
            texts: An iterable of strings.
            max_size: The most ids the vocabulary may hold, the 4 special
                tokens included (as Keras' `TextVectorization(max_tokens=...)`
                counts), at least 4; the rarest tokens are dropped. None keeps
                every token.
            min_count: Tokens seen fewer times are dropped. Default 1.
            lowercase: Whether to lowercase the texts. Default True.

        Returns:
            A `Vocabulary` whose tokens are ordered by decreasing count, ties
            broken alphabetically (by code point).
        """
        if max_size is not None:
            max_size = argument_checks.int_in_range(
                "max_size", max_size, len(cls.SPECIAL_TOKENS), MAX_VOCAB_SIZE
            )
        min_count = argument_checks.positive_int("min_count", min_count)
        lowercase = argument_checks.boolean("lowercase", lowercase)
        if isinstance(texts, str) or not isinstance(texts, Iterable):
            raise argument_checks.invalid("texts", "an iterable of strings", texts)
        counts: collections.Counter[str] = collections.Counter()
        for position, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError(
                    "Received an invalid value for argument `texts`, expected strings, got "
                    f"{text!r} at position {position}."
                )
            counts.update(_tokenize(text, lowercase))
        for special in cls.SPECIAL_TOKENS:
            # "<pad>" in a text tokenises to "<", "pad", ">", but a caller may
            # have built the texts from tokens: never give a special a second id.
            counts.pop(special, None)
        ordered = sorted(
            (token for token, count in counts.items() if count >= min_count),
            key=lambda token: (-counts[token], token),
        )
        limit = MAX_VOCAB_SIZE if max_size is None else max_size
        ordered = ordered[: limit - len(cls.SPECIAL_TOKENS)]
        return cls(ordered, lowercase=lowercase)

    def tokenize(self, text: str) -> list[str]:
        """Cuts `text` into tokens: words and single punctuation marks.

        Args:
            text: A string.

        Returns:
            The tokens, lowercased if the vocabulary lowercases.
        """
        if not isinstance(text, str):
            raise argument_checks.invalid("text", "a string", text)
        return _tokenize(text, self.lowercase)

    def encode(self, text: str, *, add_end: bool = False) -> list[int]:
        """The ids of the tokens of `text`; tokens not in the vocabulary become UNK.

        Args:
            text: A string.
            add_end: Whether to append the END id.

        Returns:
            A list of ints, without START or padding.
        """
        ids = [self._index.get(token, self.UNK) for token in self.tokenize(text)]
        if add_end:
            ids.append(self.END)
        return ids

    def encode_batch(
        self,
        texts: Sequence[str],
        length: int | None = None,
        *,
        add_end: bool = False,
        truncate: bool = False,
    ) -> np.ndarray:
        """Encodes texts into one right-padded int32 array.

        Args:
            texts: A sequence of strings.
            length: Columns of the array. None: the longest encoded text.
            add_end: Whether each row ends with the END id (before padding).
            truncate: What to do with a text longer than `length`: False
                (default) raises an error naming it; True cuts it to `length`
                ids (keeping END last when `add_end`).

        Returns:
            An int32 array of shape `(len(texts), length)`, PAD (0) after each
            text.
        """
        if isinstance(texts, str) or not isinstance(texts, Iterable):
            raise argument_checks.invalid("texts", "a list of strings", texts)
        texts = list(texts)
        encoded = [self.encode(text, add_end=add_end) for text in texts]
        longest = max((len(ids) for ids in encoded), default=0)
        if length is None:
            length = longest
        else:
            length = argument_checks.positive_int("length", length)
        argument_checks.boolean("truncate", truncate)
        array = np.full((len(encoded), length), self.PAD, dtype=np.int32)
        for row, ids in enumerate(encoded):
            if len(ids) > length:
                if not truncate:
                    raise ValueError(
                        f"Received an invalid value for argument `texts`: text {row} "
                        f"({texts[row][:60]!r}) encodes to {len(ids)} ids, more than "
                        f"length={length}. Pass a larger `length` or truncate=True."
                    )
                ids = [*ids[: length - 1], self.END] if add_end else ids[:length]
            array[row, : len(ids)] = ids
        return array

    def decode(self, ids: Iterable[int]) -> str:
        """The text of a sequence of ids: stops at END, skips PAD and START.

        Args:
            ids: Ints (a list or a 1-D array), e.g. one row of a model's output.

        Returns:
            The tokens joined with single spaces; UNK reads `"<unk>"`.
        """
        if isinstance(ids, np.ndarray) and ids.ndim != 1:
            raise argument_checks.invalid("ids", "a 1-D sequence of token ids", ids)
        return " ".join(self._tokens[i] for i in self._content_ids(ids))

    def _content_ids(self, ids):
        """The ids of `ids` before the first END, PAD and START left out, each checked."""
        kept = []
        size = len(self._tokens)
        for i in ids:
            if isinstance(i, bool) or not isinstance(i, numbers.Integral) or not 0 <= int(i) < size:
                raise ValueError(
                    "Received an invalid value for argument `ids`, expected integer ids in "
                    f"[0, {size}), got {i!r}."
                )
            i = int(i)
            if i == self.END:
                break
            if i not in (self.PAD, self.START):
                kept.append(i)
        return kept

    def token_to_id(self, token: str) -> int:
        """The id of one token, UNK if the vocabulary does not hold it."""
        return self._index.get(token, self.UNK)

    def id_to_token(self, i: int) -> str:
        """The token of one id."""
        argument_checks.int_in_range("i", i, 0, len(self._tokens) - 1)
        return self._tokens[int(i)]

    @property
    def tokens(self) -> list[str]:
        """Every token in id order, the 4 special tokens first."""
        return list(self._tokens)

    def __len__(self) -> int:
        return len(self._tokens)

    def __contains__(self, token: object) -> bool:
        return token in self._index

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocabulary):
            return NotImplemented
        return self._tokens == other._tokens and self.lowercase == other.lowercase

    def __hash__(self) -> int:
        return hash((tuple(self._tokens), self.lowercase))

    def __repr__(self) -> str:
        preview = ", ".join(repr(t) for t in self._tokens[4:9])
        more = ", …" if len(self._tokens) > 9 else ""
        return f"Vocabulary(size={len(self)}, lowercase={self.lowercase}, tokens=[{preview}{more}])"

    def get_config(self) -> dict:
        """The constructor arguments, JSON-serialisable: `{"tokens": [...], "lowercase": bool}`."""
        return {"tokens": self._tokens[len(self.SPECIAL_TOKENS) :], "lowercase": self.lowercase}

    @classmethod
    def from_config(cls, config: dict) -> Vocabulary:
        """The inverse of `get_config`; a `SubwordVocabulary`'s config gives one back.

        A config holding a subclass's `CONFIG_KEY` goes to that subclass's
        `from_config` (`keras_seq.tasks` imports every subclass, so each is
        known here without this module importing it).
        """
        if isinstance(config, dict):
            for kind in cls.__subclasses__():
                if kind.CONFIG_KEY is not None and kind.CONFIG_KEY in config:
                    return kind.from_config(config)
        if not isinstance(config, dict) or set(config) - {"tokens", "lowercase"}:
            raise argument_checks.invalid(
                "config", 'a dict with the keys "tokens" and "lowercase"', config
            )
        if "tokens" not in config:
            raise argument_checks.invalid("config", 'a dict holding "tokens"', config)
        return cls(config["tokens"], lowercase=config.get("lowercase", True))


def tokenize(text: str, *, lowercase: bool = True) -> list[str]:
    """Cuts `text` into tokens the way every `Vocabulary` does (see the module docstring).

    Args:
        text: A string.
        lowercase: Whether to lowercase the text first. Default True.

    Returns:
        The tokens: words (with inner apostrophes or hyphens) and single
        punctuation marks.

    Example:

    >>> tokenize("Le chat, noir! Don't.")
    ['le', 'chat', ',', 'noir', '!', "don't", '.']
    """
    if not isinstance(text, str):
        raise argument_checks.invalid("text", "a string", text)
    return _tokenize(text, argument_checks.boolean("lowercase", lowercase))


def _tokenize(text: str, lowercase: bool) -> list[str]:
    text = unicodedata.normalize("NFC", text)
    if lowercase:
        text = text.lower()
    return TOKEN_PATTERN.findall(text)


# --- The same tokenisation as TensorFlow ops (for SavedModels that read text) ------------------

# Hangul syllables compose algorithmically (Unicode §3.12): L + V → LV, LV + T → LVT.
_HANGUL_S, _HANGUL_L, _HANGUL_V, _HANGUL_T = 0xAC00, 0x1100, 0x1161, 0x11A7
_HANGUL_V_COUNT, _HANGUL_T_COUNT, _HANGUL_COUNT = 21, 28, 11172

# NFC rewrites a letter followed by its accents in at most this many steps (Greek ᾇ: 3).
_COMPOSE_PASSES = 4


def tf_tokenizer(*, lowercase: bool = True):
    """`tokenize` as TensorFlow ops: a `tf.Module` mapping strings to their tokens.

    A SavedModel that takes text (`Translator.export_saved_model`'s
    `translate`) tokenises inside the graph with it, so TensorFlow alone reads
    text as a `Vocabulary` does. The steps are those of `_tokenize`:

    1. NFC: code points with a one-character NFC form are replaced by it
       (Å for the Ångström sign), then a letter and each accent after it are
       composed (`e` + U+0301 → `é`; Hangul jamo into syllables), letter by
       letter, as NFC composes text whose accents are in canonical order;
    2. lowercasing (`tf.strings.lower` with UTF-8, full Unicode case mapping
       as `str.lower`), if `lowercase`;
    3. `TOKEN_PATTERN`, in RE2 syntax: RE2's `\\w` and `\\s` are ASCII only,
       so Python's own `\\w` (`str.isalnum()` or `_`) and `\\s`
       (`str.isspace()`) are written out as code point ranges; every
       whitespace becomes a space, every token is set between spaces, and
       the text is split at spaces.

    Where it can differ from `tokenize`: NFC of accents out of canonical
    order, or of characters whose NFC is several code points; and characters
    newer than the Unicode version of the Python that wrote the tables.

    Args:
        lowercase: Whether to lowercase first, as the `Vocabulary` does.
            Default True.

    Returns:
        A `tf.Module` (its lookup tables are tracked for saving); calling it
        on a 1-D `tf.string` tensor gives a `tf.RaggedTensor` of tokens
        `(batch, None)`.

    Example:

    >>> tf_tokenizer()(tf.constant(["Le chat, noir!"]))  # doctest: +SKIP
    <tf.RaggedTensor [[b'le', b'chat', b',', b'noir', b'!']]>
    """
    # TensorFlow only here: the rest of the library runs on any Keras backend.
    import tensorflow as tf

    lowercase = argument_checks.boolean("lowercase", lowercase)
    singles, pairs = _nfc_maps()
    word, space = _re2_classes()
    token_pattern = f"<unk>|[{word}]+(?:['’\\-][{word}]+)*|[^{word} ]"

    def table(mapping, key_dtype):
        keys = tf.constant(list(mapping), dtype=key_dtype)
        values = tf.constant(list(mapping.values()), dtype=tf.int32)
        initializer = tf.lookup.KeyValueTensorInitializer(keys, values)
        return tf.lookup.StaticHashTable(initializer, default_value=-1)

    class Tokenizer(tf.Module):
        def __init__(self):
            super().__init__(name="tokenizer")
            self.singles = table(singles, tf.int32)
            self.pairs = table(pairs, tf.int64)

        def __call__(self, texts):
            texts = self.nfc(tf.convert_to_tensor(texts, tf.string))
            if lowercase:
                texts = tf.strings.lower(texts, encoding="utf-8")
            texts = tf.strings.regex_replace(texts, f"[{space}]", " ")
            texts = tf.strings.regex_replace(texts, token_pattern, r" \0 ")
            return tf.strings.split(texts)

        def nfc(self, texts):
            """Compose as NFC does: singletons, then letter + accent pairs, pass after pass."""
            points = tf.strings.unicode_decode(texts, "UTF-8", errors="replace")
            flat, rows = points.flat_values, points.value_rowids()
            mapped = self.singles.lookup(flat)
            flat = tf.where(mapped >= 0, mapped, flat)
            for _ in range(_COMPOSE_PASSES):
                flat, rows = self._compose(flat, rows)
            count = tf.shape(texts, out_type=tf.int64)[0]
            points = tf.RaggedTensor.from_value_rowids(flat, rows, nrows=count)
            return tf.strings.unicode_encode(points, "UTF-8")

        def _compose(self, flat, rows):
            # One pass: each code point and the next (in the same text) that compose into one.
            keys = tf.cast(flat[:-1], tf.int64) * 0x110000 + tf.cast(flat[1:], tf.int64)
            composed = self.pairs.lookup(keys)
            hit = (composed >= 0) & tf.equal(rows[:-1], rows[1:])
            # A code point taken by the pair before it starts no pair of its own.
            hit &= ~tf.concat([tf.zeros_like(hit[:1]), hit[:-1]], axis=0)
            flat = tf.concat([tf.where(hit, composed, flat[:-1]), flat[-1:]], axis=0)
            keep = tf.concat([tf.ones_like(flat[:1], dtype=tf.bool), ~hit], axis=0)
            return tf.boolean_mask(flat, keep), tf.boolean_mask(rows, keep)

    return Tokenizer()


@functools.lru_cache(maxsize=1)
def _nfc_maps() -> tuple[dict[int, int], dict[int, int]]:
    """NFC's one-character replacements, and its pairs `first * 0x110000 + second → composed`."""
    singles, pairs = {}, {}
    for point in range(0x110000):
        decomposition = unicodedata.decomposition(chr(point))
        if not decomposition or decomposition.startswith("<"):
            continue  # no canonical decomposition
        parts = [int(part, 16) for part in decomposition.split()]
        if len(parts) == 1:
            singles[point] = parts[0]
        elif unicodedata.normalize("NFC", "".join(map(chr, parts))) == chr(point):
            pairs[parts[0] * 0x110000 + parts[1]] = point  # not a composition exclusion
    for lv_index in range(0, _HANGUL_COUNT, _HANGUL_T_COUNT):
        lv = _HANGUL_S + lv_index
        l_part = _HANGUL_L + lv_index // (_HANGUL_V_COUNT * _HANGUL_T_COUNT)
        v_part = _HANGUL_V + (lv_index % (_HANGUL_V_COUNT * _HANGUL_T_COUNT)) // _HANGUL_T_COUNT
        pairs[l_part * 0x110000 + v_part] = lv
        for t_index in range(1, _HANGUL_T_COUNT):
            pairs[lv * 0x110000 + _HANGUL_T + t_index] = lv + t_index
    singles = {point: unicodedata.normalize("NFC", chr(point)) for point in singles}
    return {p: ord(c) for p, c in singles.items() if len(c) == 1}, pairs


@functools.lru_cache(maxsize=1)
def _re2_classes() -> tuple[str, str]:
    """Python's `\\w` and `\\s` (for str patterns) as RE2 character-class bodies."""
    return _ranges(lambda c: c.isalnum() or c == "_"), _ranges(str.isspace)


def _ranges(predicate) -> str:
    body, start = [], None
    for point in range(0x110001):
        inside = point < 0x110000 and predicate(chr(point))
        if inside and start is None:
            start = point
        elif not inside and start is not None:
            end = point - 1
            body.append(f"\\x{{{start:x}}}" + (f"-\\x{{{end:x}}}" if end > start else ""))
            start = None
    return "".join(body)
