"""`Translator`: a trained encoder–decoder and its two vocabularies, text in, text out.

    "the black cat"  ─▶ source vocabulary ─▶ ids ─▶ greedy_decode / beam_search ─▶ ids
                                                   (one compiled loop, batched)     │
    "le chat noir"   ◀─ target vocabulary ◀─────────────────────────────────────────┘
                                                   (or sample_decode, on request)

A `Translator` is a registered `keras.Model` that holds the model as its
one sublayer and the vocabularies in its config, so that everything needed
to translate saves to and loads from one `.keras` file (`safe_mode=True`).
Called on source ids it decodes them greedily; `translate` does the
tokenising, batching and detokenising around the decoders of
`keras_seq.models.decoding`, and on request returns where each output
token attended (`Alignment`, ready for `keras_seq.diagnostics.plot_alignment`).
`export_saved_model` writes a TensorFlow SavedModel whose `serve` signature
maps source ids to target ids and whose `translate` signature maps texts to
translations (the vocabularies inside it), loadable without keras_seq; it
decodes as chosen at export (`decoding=Beam()`, beam search of width 4 with
length penalty 0.6, unless `Greedy()` or another `Beam(...)` is given) and
says so (its `decoding` signature, `assets.extra/decoding.json`).

The vocabularies may be word vocabularies (`Vocabulary`) or subword ones
(`SubwordVocabulary`, SentencePiece BPE or unigram pieces, whose model is kept
in the config as base64); `translate` and `.keras` saving work the same with
both, and a subword translation reads as written text ("je suis fatigué.").
`export_saved_model` takes both: a subword vocabulary's SentencePiece
encoding is written in core TensorFlow ops (`keras_seq.tasks.subword_graph`;
tensorflow-text's op would need the full `tensorflow` package beside
`tensorflow-cpu`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile

import keras
import numpy as np
from keras import ops

from keras_seq import argument_checks
from keras_seq.diagnostics import plot_alignment
from keras_seq.models import decoding, strategies
from keras_seq.models.decoding import common as decoding_checks
from keras_seq.tasks.vocabulary import Vocabulary

_REGISTER = keras.saving.register_keras_serializable(package="keras_seq")

# Texts translated per compiled call unless `batch_size` says otherwise.
DEFAULT_BATCH_SIZE = 64

# The most target tokens per translation unless `max_length` says otherwise.
DEFAULT_MAX_LENGTH = 100

# Compiled decoders kept per translator, one per decoding setting (a temperature sweep
# would otherwise keep one compiled graph per value it tried).
MAX_CACHED_DECODERS = 16

# Where `export_saved_model` writes both vocabularies as JSON, under `assets.extra/`.
VOCABULARIES_FILE = "vocabularies.json"
# Where it writes how `serve` decodes (`Translator.decoding_json`), beside them.
DECODING_FILE = "decoding.json"

# How an exported translator decodes unless told: beam search, width 4, length penalty 0.6
# (three to four BLEU above greedy decoding in benchmarks/results/translation.md).
DEFAULT_DECODING = strategies.Beam()
# The module, by a name that `translate`'s argument `decoding` does not hide.
_decoding = decoding


def _decoder_options(keywords):
    """`Translator.translate`'s decoding keywords (a dict, None for each one not given) as
    `(method, compile_decoder's options, seed)`.

    The defaults of the keywords left None are filled in (width 1, α = 0.6, β = 0, T = 1);
    `compile_decoder` refuses the options of one method given with another. A sampler's seed
    is returned apart: each batch samples with a seed of its own, made from it.
    """
    method, seed = keywords.get("method"), keywords.get("seed")
    beam_width, length_penalty = keywords.get("beam_width"), keywords.get("length_penalty")
    coverage_penalty, temperature = keywords.get("coverage_penalty"), keywords.get("temperature")
    beam_width = 1 if beam_width is None else beam_width
    beam_width = argument_checks.positive_int("beam_width", beam_width, decoding.MAX_BEAM_WIDTH)
    if method is None:
        method = "greedy" if beam_width == 1 else "beam"
    method = argument_checks.one_of("method", method, decoding.METHODS)
    options = {
        "beam_width": beam_width,
        "coverage_penalty": 0.0 if coverage_penalty is None else coverage_penalty,
        "temperature": 1.0 if temperature is None else temperature,
        "top_k": keywords.get("top_k"),
        "top_p": keywords.get("top_p"),
    }
    if method == "beam":  # ignored by the others, as before
        options["length_penalty"] = 0.6 if length_penalty is None else length_penalty
    if method == "sample":
        return method, options, decoding_checks.seed_value(seed)
    return method, {**options, "seed": seed}, None


@dataclasses.dataclass(frozen=True)
class Alignment:
    """Where each output token of one translation attended in its source.

    Attributes:
        source_tokens: The source tokens as the vocabulary cut them (words
            it does not hold keep their text; the model read them as
            `<unk>`), in the order of the text.
        target_tokens: The output tokens, `"<end>"` last if the translation
            ended before `max_length`.
        weights: float32 `(len(target_tokens), len(source_tokens))`: row `i`
            is the attention distribution of the step that emitted target
            token `i` (sums to 1 for an attention model; zeros for a model
            without attention).
    """

    source_tokens: list[str]
    target_tokens: list[str]
    weights: np.ndarray

    def pairs(self):
        """`[(target_token, weights over source_tokens), ...]`, one per output token."""
        return list(zip(self.target_tokens, self.weights, strict=True))

    def plot(self, **kwargs):
        """Draws the alignment with `keras_seq.diagnostics.plot_alignment`; returns the Figure.

        Args:
            **kwargs: `ax` and `title`, passed on.
        """
        return plot_alignment(self.weights, self.source_tokens, self.target_tokens, **kwargs)


@_REGISTER
class Translator(keras.Model):
    """Translates text with an encoder–decoder model and its source and target vocabularies.

    Translation of a text `x`:

        ids(x) = source_vocabulary.encode(x)          (unknown words → <unk>)
        ŷ = argmax_y log P(y | ids(x))                (greedy or beam search,
                                                       at most `max_length` tokens)
        text(ŷ) = target_vocabulary.decode(ŷ)         (stops at <end>)

    The search is `keras_seq.models.greedy_decode` (`beam_width=1`) or
    `beam_search` with GNMT's length and coverage penalties, compiled once
    per setting (`compile_decoder`) and run on batches of texts sorted by
    length, so that a batch carries little padding; `translate(...,
    method="sample")` draws translations instead (`sample_decode`, with a
    temperature, top-k and top-p). The model must follow the
    `encode` / `decode_step` contract of `keras_seq.models.Seq2Seq`.

    Saving: `translator.save("translator.keras")` writes the model's weights
    and a config holding the model's config, both vocabularies
    (`Vocabulary.get_config()`) and `max_length`;
    `keras.saving.load_model(path, safe_mode=True)` gives back a translator
    that produces the same translations. Calling the translator on int32
    source ids `(batch, S)` returns greedy target ids `(batch, max_length)`.

    Args:
        model: The trained encoder–decoder (e.g. a `Seq2Seq`), with ids of
            `source_vocabulary` as input and ids of `target_vocabulary` as
            output.
        source_vocabulary: A `keras_seq.tasks.Vocabulary` or
            `SubwordVocabulary` (or its config dict), the one the model was
            trained with.
        target_vocabulary: The same for the target side; its size must be
            the model's `target_vocab_size`.
        max_length: The most target tokens per translation, `<end>`
            included, at most the model's `max_decode_length` (a
            Transformer's `max_length`). Default None: 100, or the model's
            `max_decode_length` if that is smaller.
        **kwargs: Model keywords (`name`, `trainable`).

    Example:

    >>> translator = Translator(model, task.source_vocabulary, task.target_vocabulary,
    ...                         max_length=60)  # doctest: +SKIP
    >>> translator.translate(["the black cat"])  # doctest: +SKIP
    ['le chat noir']
    >>> texts, alignments = translator.translate(["the black cat"], Beam(width=4),
    ...                                          return_attention=True)  # doctest: +SKIP
    >>> alignments[0].plot()  # doctest: +SKIP

    References:
        - Bahdanau, Cho & Bengio, "Neural Machine Translation by Jointly
          Learning to Align and Translate", ICLR 2015 (alignment figures).
        - Wu et al., "Google's Neural Machine Translation System",
          arXiv:1609.08144, 2016 (beam search with length and coverage
          penalties).
        - Holtzman et al., "The Curious Case of Neural Text Degeneration",
          ICLR 2020 (nucleus sampling).
    """

    def __init__(self, model, source_vocabulary, target_vocabulary, max_length=None, **kwargs):
        kwargs.setdefault("name", "translator")
        super().__init__(**kwargs)
        decoding_checks.check_model(model)
        source_vocabulary = _vocabulary("source_vocabulary", source_vocabulary)
        target_vocabulary = _vocabulary("target_vocabulary", target_vocabulary)
        model_limit = getattr(model, "max_decode_length", None)
        if max_length is None:
            max_length = min(DEFAULT_MAX_LENGTH, model_limit or DEFAULT_MAX_LENGTH)
        max_length = decoding_checks.check_max_length(model, max_length)
        _check_sizes(model, source_vocabulary, target_vocabulary)
        self.model = model
        self.source_vocabulary = source_vocabulary
        self.target_vocabulary = target_vocabulary
        self.max_length = max_length
        self._decoders = {}
        self.built = True

    # Keras --------------------------------------------------------------------------------

    def build(self, input_shape=None):
        self.built = True  # the model is built; the translator has no weights of its own

    def call(self, source):
        """Greedy target ids `(batch, max_length)` int32 for source ids `(batch, S)`."""
        return decoding.greedy_decode(self.model, source, self.max_length).ids

    def get_config(self):
        return {
            "model": keras.saving.serialize_keras_object(self.model),
            "source_vocabulary": self.source_vocabulary.get_config(),
            "target_vocabulary": self.target_vocabulary.get_config(),
            "max_length": self.max_length,
            "name": self.name,
            "trainable": self.trainable,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["model"] = keras.saving.deserialize_keras_object(config["model"])
        return cls(**config)

    # Translation ------------------------------------------------------------------------------

    def translate(
        self,
        texts,
        decoding=None,
        *,
        return_attention=False,
        batch_size=DEFAULT_BATCH_SIZE,
        method=None,
        beam_width=None,
        length_penalty=None,
        coverage_penalty=None,
        temperature=None,
        top_k=None,
        top_p=None,
        seed=None,
    ):
        """Translates texts; optionally says where each output token attended.

        Args:
            texts: A string, or a list of strings. Each must hold at least
                one token; words the source vocabulary does not hold are read
                as `<unk>`.
            decoding: How to decode, one value (`keras_seq.models.strategies`):
                `Greedy()`, `Beam(width, length_penalty, coverage_penalty)`
                or `Sample(temperature, top_k, top_p, seed)`. Default None:
                greedy, or what the keywords below say. A `Sample`'s seed
                seeds batch `n` of the texts sorted by length with
                `seed + n`, so the same texts, `batch_size` and seed give the
                same translations (on one backend and device); None: random.
            return_attention: Also return an `Alignment` per text.
            batch_size: Texts decoded together. Default 64.
            method: The same choice as keywords, as `compile_decoder` takes
                them (and `strategy.keywords()` gives them), not with
                `decoding`: "greedy", "beam" or "sample"; None: greedy at
                `beam_width` 1, else beam search.
            beam_width: Beam search's width; default 1.
            length_penalty: Beam search's α; default 0.6.
            coverage_penalty: Beam search's β; default 0.
            temperature: Sampling's `T`; default 1.
            top_k: Sampling's top-k; default None.
            top_p: Sampling's top-p; default None.
            seed: Sampling's seed (see `decoding`); default None.

        Returns:
            The translations (a list of strings, or one string for a string
            input), and with `return_attention` a tuple `(translations,
            alignments)` with one `Alignment` per text (or one). With
            `reverse_source`, the weights are over the source tokens in the
            order of the text.
        """
        single = isinstance(texts, str)
        texts = _texts([texts] if single else texts)
        return_attention = argument_checks.boolean("return_attention", return_attention)
        batch_size = argument_checks.positive_int("batch_size", batch_size)
        keywords = {
            "method": method,
            "beam_width": beam_width,
            "length_penalty": length_penalty,
            "coverage_penalty": coverage_penalty,
            "temperature": temperature,
            "top_k": top_k,
            "top_p": top_p,
            "seed": seed,
        }
        if decoding is not None:
            given = [name for name, value in keywords.items() if value is not None]
            if given:
                raise argument_checks.invalid(
                    "decoding",
                    f"no keyword of the decoding beside it (got also {', '.join(given)}): "
                    "the strategy holds them all",
                    decoding,
                )
            keywords = strategies.checked(decoding).keywords()
        method, options, seed = _decoder_options(keywords)
        decode = self._decoder(method, options, return_attention)
        if not texts:
            return ([], []) if return_attention else []

        source_tokens = [self.source_vocabulary.tokenize(text) for text in texts]
        source_ids = [self.source_vocabulary.encode(text) for text in texts]
        for index, ids in enumerate(source_ids):
            if not ids:
                raise ValueError(
                    "Received an invalid value for argument `texts`, expected texts with at "
                    f"least one token, got {texts[index]!r} at index {index}."
                )
        order = sorted(range(len(texts)), key=lambda i: len(source_ids[i]))
        outputs = [None] * len(texts)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            rows, width = _batch_shape(len(chunk), max(len(source_ids[i]) for i in chunk))
            batch = np.zeros((rows, width), dtype=np.int32)
            batch[len(chunk) :, 0] = Vocabulary.UNK  # filler rows, decoded and dropped
            for row, i in enumerate(chunk):
                batch[row, : len(source_ids[i])] = source_ids[i]
            if method == "sample":
                batch_seed = (seed + start // batch_size) % (_decoding.MAX_SEED + 1)
                result = decode(batch, seed=batch_seed)
            else:
                result = decode(batch)
            ids = ops.convert_to_numpy(result.ids)
            lengths = ops.convert_to_numpy(result.lengths)
            attention = ops.convert_to_numpy(result.attention) if return_attention else None
            for row, i in enumerate(chunk):
                weights = None
                if return_attention:
                    weights = attention[row, : lengths[row], : len(source_ids[i])]
                outputs[i] = (ids[row, : lengths[row]], weights)

        translations = [self.target_vocabulary.decode(ids) for ids, _ in outputs]
        if not return_attention:
            return translations[0] if single else translations
        alignments = [
            Alignment(
                source_tokens=list(source_tokens[i]),
                target_tokens=[self.target_vocabulary.id_to_token(int(t)) for t in ids],
                weights=weights.astype(np.float32),
            )
            for i, (ids, weights) in enumerate(outputs)
        ]
        if single:
            return translations[0], alignments[0]
        return translations, alignments

    def _decoder(self, method, options, return_attention):
        """The compiled decoder of one setting, made on first use (its options checked there)."""
        key = (method, repr(sorted(options.items())), return_attention)  # values may be unhashable
        if key not in self._decoders:
            decoder = decoding.compile_decoder(
                self.model,
                self.max_length,
                method=method,
                return_attention=return_attention,
                **options,
            )
            if len(self._decoders) >= MAX_CACHED_DECODERS:
                self._decoders.pop(next(iter(self._decoders)))  # the oldest setting
            self._decoders[key] = decoder
        return self._decoders[key]

    # Export -----------------------------------------------------------------------------------

    def export_saved_model(self, path, *, decoding=DEFAULT_DECODING, overwrite=False):
        """Writes a TensorFlow SavedModel that translates text, or source ids, by beam search.

        The decoding is chosen here and fixed in the graph: `Beam()` (width
        4, length penalty α = 0.6, the setting that scored three to
        four BLEU above greedy decoding in benchmarks/results/translation.md) by
        default, any other `Beam(width, length_penalty, coverage_penalty)`,
        or `Greedy()`. `Sample` is refused: a served translator is a
        deterministic function of its input (see
        `keras_seq.models.strategies.exportable`).

        Three signatures, all needing TensorFlow only (the graph holds the
        whole decoding loop, a `tf.while_loop`, the weights and both
        vocabularies):

        - `serve` takes int32 source ids `(batch, time)`, both axes of any
          size, right-padded with PAD (0), and returns the target ids of the
          chosen decoding, int32 `(batch, max_length)` (tokens, END, then
          PAD): `beam_search` (or `greedy_decode`), the function
          `translate(texts, decoding)` compiles, so the ids are
          those of `Translator.translate` with the same setting;
        - `translate` takes a 1-D `tf.string` tensor of texts and returns
          their translations, a 1-D `tf.string` tensor: what
          `translate(texts, decoding)` returns. The text is
          tokenised in the graph
          (`keras_seq.tasks.vocabulary.tf_tokenizer`, the same tokens as the
          source vocabulary's `tokenize`), tokens become ids through a lookup
          table (unknown ones `<unk>`), and `serve`'s ids become tokens,
          up to END, without PAD or START, joined by spaces. A text without
          a token translates to `""`. With subword vocabularies the text is
          cut into SentencePiece pieces in the graph
          (`keras_seq.tasks.subword_graph.tf_subword_encoder`, the ids of
          `SubwordVocabulary.encode`) and the output pieces are joined as
          `SubwordVocabulary.decode` joins them ("je suis fatigué.");
        - `decoding` takes nothing and returns, as a `tf.string` scalar, the
          JSON of `decoding_json(decoding)`: how `serve` decodes
          (`{"method": "beam", "width": 4, "length_penalty": 0.6,
          "coverage_penalty": 0.0, "max_length": 100}`).

        `tf.saved_model.load(path).translate(tf.constant(["the black cat"]))`.
        The vocabularies are also written as JSON to
        `assets.extra/vocabularies.json` (`{"source_vocabulary": ...,
        "target_vocabulary": ...}`, each `Vocabulary.get_config()`), and the
        decoding to `assets.extra/decoding.json`, for readers without
        TensorFlow.

        The SavedModel is written to a temporary directory beside `path`
        and renamed into place, so a failure leaves nothing half written.

        Args:
            path: The directory to create.
            decoding: `keras_seq.models.Beam(...)` (default `Beam()`: width
                4, α = 0.6, no coverage penalty) or `keras_seq.models.Greedy()`.
            overwrite: Replace an existing `path`. Default False: refuse.

        Returns:
            `path`.

        Example:

        >>> translator.export_saved_model("served", decoding=Beam(width=5))  # doctest: +SKIP
        >>> served = tf.saved_model.load("served")  # doctest: +SKIP
        >>> served.translate(tf.constant(["the black cat"]))  # doctest: +SKIP
        >>> served.decoding()  # doctest: +SKIP
        <tf.Tensor: ... b'{"method": "beam", "width": 5, ...}'>
        """
        # `decoding` (the argument) hides the module here: the strategy decodes by itself.
        strategy = strategies.exportable(decoding, self.model)
        if keras.backend.backend() != "tensorflow":
            raise RuntimeError(
                "Translator.export_saved_model needs the TensorFlow backend "
                f"(KERAS_BACKEND=tensorflow); the current backend is "
                f"{keras.backend.backend()!r}. Save with `translator.save(...)`, load the "
                ".keras file under TensorFlow and export there."
            )
        # TensorFlow builds the graph: loaded here, on the TensorFlow backend (checked above).
        from keras_seq.models import saved_translator

        path = os.path.abspath(os.fspath(path))
        overwrite = argument_checks.boolean("overwrite", overwrite)
        if os.path.exists(path) and not overwrite:
            raise FileExistsError(
                f"Received an invalid value for argument `path`: {path!r} already exists; "
                "pass overwrite=True to replace it."
            )
        parent = os.path.dirname(path)
        os.makedirs(parent, exist_ok=True)
        described = self.decoding_json(strategy)
        archive = saved_translator.export_archive(self, strategy, described)
        temporary = tempfile.mkdtemp(dir=parent, prefix=f".{os.path.basename(path)}.")
        try:
            archive.write_out(temporary, verbose=False)
            self._write_assets(os.path.join(temporary, "assets.extra"), described)
            if os.path.exists(path):
                old = tempfile.mkdtemp(dir=parent, prefix=f".{os.path.basename(path)}.old.")
                os.rename(path, os.path.join(old, "previous"))
                os.rename(temporary, path)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.rename(temporary, path)
        except BaseException:
            shutil.rmtree(temporary, ignore_errors=True)
            raise
        return path

    def vocabularies_json(self):
        """Both vocabularies as one JSON text, for runtimes without keras_seq.

        `{"source_vocabulary": ..., "target_vocabulary": ...}`, each
        `Vocabulary.get_config()`: a word vocabulary's tokens in id order, or
        a subword vocabulary's SentencePiece model (base64), which
        `sentencepiece.SentencePieceProcessor(model_proto=...)` reads, its
        ids those of the model. What the SavedModel keeps in
        `assets.extra/vocabularies.json` and an ONNX export in its metadata.
        """
        vocabularies = {
            "source_vocabulary": self.source_vocabulary.get_config(),
            "target_vocabulary": self.target_vocabulary.get_config(),
        }
        return json.dumps(vocabularies, ensure_ascii=False)

    def decoding_json(self, decoding=DEFAULT_DECODING):
        """How an export decodes, as JSON: the strategy's config and `max_length`.

        `{"method": "beam", "width": 4, "length_penalty": 0.6,
        "coverage_penalty": 0.0, "max_length": 100}` for `Beam()`,
        `{"method": "greedy", "max_length": 100}` for `Greedy()`
        (`keras_seq.models.strategies.from_config` reads the strategy back
        once `max_length` is removed). What the SavedModel's `decoding`
        signature returns and `assets.extra/decoding.json` holds, and an ONNX
        export keeps in its metadata.

        Args:
            decoding: `Greedy()` or `Beam(...)`; `Sample` is refused, as by
                `export_saved_model`.
        """
        strategy = strategies.exportable(decoding)
        return json.dumps({**strategy.get_config(), "max_length": self.max_length})

    def _write_assets(self, directory, decoding_json):
        """Both vocabularies as JSON in `directory/vocabularies.json`, and the decoding in
        `directory/decoding.json`, for readers without TensorFlow."""
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, VOCABULARIES_FILE), "w", encoding="utf-8") as file:
            file.write(self.vocabularies_json())
        with open(os.path.join(directory, DECODING_FILE), "w", encoding="utf-8") as file:
            file.write(decoding_json)


def _batch_shape(rows, width):
    """The shape to decode a batch of `rows` sources of at most `width` ids in.

    TensorFlow traces one graph for every shape, so the batch is decoded as it
    is. `jax.jit` compiles once per shape: there, rows are padded to a power of
    two and the time axis to a multiple of 8, so that a stream of texts of
    many lengths reuses a few compiled programs. PAD columns are masked by the
    model and filler rows are independent of the others, so neither changes
    the translations.
    """
    if keras.backend.backend() != "jax":
        return rows, width
    return 1 << (rows - 1).bit_length(), -(-width // 8) * 8


def _vocabulary(name, value):
    if isinstance(value, Vocabulary):
        return value
    if isinstance(value, dict):
        return Vocabulary.from_config(value)
    raise argument_checks.invalid(name, "a keras_seq.tasks.Vocabulary or its config dict", value)


def _check_sizes(model, source_vocabulary, target_vocabulary):
    """The vocabularies must fit the model's embedding and output layers."""
    source_size = getattr(model, "source_vocab_size", None)
    if source_size is not None and len(source_vocabulary) > source_size:
        raise ValueError(
            f"Received an invalid value for argument `source_vocabulary`, expected at most "
            f"the model's source_vocab_size ({source_size}) tokens, got {len(source_vocabulary)}."
        )
    target_size = getattr(model, "target_vocab_size", None)
    if target_size is not None and len(target_vocabulary) != target_size:
        raise ValueError(
            f"Received an invalid value for argument `target_vocabulary`, expected the model's "
            f"target_vocab_size ({target_size}) tokens, got {len(target_vocabulary)}."
        )


def _texts(texts):
    if isinstance(texts, (str, bytes)) or not isinstance(texts, (list, tuple)):
        raise argument_checks.invalid("texts", "a string or a list of strings", texts)
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(
                "Received an invalid value for argument `texts`, expected strings, got "
                f"{text!r} at index {index}."
            )
    return list(texts)
