"""Decoding strategies as values: `Greedy()`, `Beam(width, length_penalty, coverage_penalty)`,
`Sample(temperature, top_k, top_p, seed)`.

A strategy says how an encoder–decoder turns `log p(y_t | y_<t, x)` into an
output sequence, as one small frozen value instead of the keyword arguments
that travel with `method` (`beam_width`, `length_penalty`, `coverage_penalty`,
`temperature`, `top_k`, `top_p`, `seed`):

    Greedy()                                 y_t = argmax_y log p(y | y_<t, x)
    Beam(width=4, length_penalty=0.6)        the K best prefixes, ranked by GNMT's score
    Sample(temperature=0.8, top_p=0.9)       y_t drawn from the tempered, truncated distribution

Each is checked when it is made, by the same rules as `greedy_decode`,
`beam_search` and `sample_decode` (`keras_seq.models.decoding`), so a bad
value is refused where it is written, not when the first batch is decoded.
Being frozen dataclasses, strategies compare by value, hash, and print as
they are written (`Beam(width=4, length_penalty=0.6, coverage_penalty=0.0)`).

Each strategy:

- `decode(model, source, max_length)` decodes a batch with its decoder (the
  functions `Translator.translate` compiles), traceable inside `tf.function`;
- `compile(model, max_length)` is that decoder compiled once for any batch and
  source length (`compile_decoder`);
- `keywords()` gives the keyword arguments of `compile_decoder` (and of
  `Translator.translate`, which takes the strategy itself too:
  `translator.translate(texts, Beam())`) that decode the same way;
- `get_config()` is a JSON-ready dict (`{"method": "beam", "width": 4, ...}`),
  what an export records of how it decodes; `from_config` reads it back.

`Translator.translate(texts, Beam())`, `evaluate_by_length(..., decoding=Beam())`
and the export path take them (`Translator.export_saved_model(path, decoding=Beam())`,
the ONNX and LiteRT files of `builder_ui.results`); `compile_decoder` and
`Translator.translate` still take the keyword arguments too.

The default `Beam()` is width 4 and length penalty 0.6: on the English–French
benchmark (benchmarks/results/translation.md) it scored three to
four cased BLEU above greedy decoding, with fewer invented words.

References:
    - Wu et al., "Google's Neural Machine Translation System: Bridging the
      Gap between Human and Machine Translation", arXiv:1609.08144, 2016
      (beam search's length and coverage penalties, section 7, eq. 14).
    - Fan, Lewis & Dauphin, "Hierarchical Neural Story Generation", ACL 2018
      (top-k sampling).
    - Holtzman, Buys, Du, Forbes & Choi, "The Curious Case of Neural Text
      Degeneration", ICLR 2020 (nucleus, top-p, sampling).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from keras_seq import argument_checks
from keras_seq.models import decoding
from keras_seq.models.decoding import common as decoding_checks


class _Strategy:
    """What the three strategies share: their method name and the dict forms of their fields."""

    method: ClassVar[str]

    def keywords(self) -> dict[str, Any]:
        """The keyword arguments of `Translator.translate` and `compile_decoder` that decode so."""
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        """`{"method": ..., <field>: <value>, ...}`, JSON-ready; `from_config` reads it back."""
        return {"method": self.method, **dataclasses.asdict(self)}

    def compile(self, model, max_length, **options):
        """This decoding as one compiled function of the source (`compile_decoder`).

        Args:
            model: An encoder–decoder with `encode` and `decode_step`.
            max_length: The most tokens per output, END included.
            **options: `end_token`, `start_token`, `return_attention`, passed on.

        Returns:
            `decode(source, seed=None) -> DecodeResult`: one `tf.function` (or
            `jax.jit`) for any batch and source length; `seed` for `Sample` only.

        Example:

        >>> import numpy as np
        >>> from keras_seq.models import seq2seq
        >>> decode = Beam(width=2).compile(seq2seq(20, 30, units=8), 6)
        >>> tuple(decode(np.array([[5, 6, 7]])).ids.shape)
        (1, 6)
        """
        return decoding.compile_decoder(model, max_length, **self.keywords(), **options)

    def decode(self, model, source, max_length, **options) -> decoding.DecodeResult:
        """Decodes `source` with `model`: see `keras_seq.models.decoding`.

        Args:
            model: An encoder–decoder with `encode` and `decode_step`.
            source: int `(batch, S)` source ids, right-padded with PAD (0).
            max_length: The most tokens per output, END included.
            **options: `end_token`, `start_token`, `return_attention`, passed on.
        """
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class Greedy(_Strategy):
    """Greedy decoding: the most probable token at each step,

        y_t = argmax_{y ∉ {PAD, START}} log p(y | y_<t, x),

    until END or `max_length` tokens (`keras_seq.models.greedy_decode`). The
    fastest search and deterministic; it can miss a more probable sequence
    whose first token is not the most probable one, which `Beam` keeps.

    Example:

    >>> Greedy().keywords()
    {'method': 'greedy'}
    """

    method: ClassVar[str] = "greedy"

    def keywords(self) -> dict[str, Any]:
        return {"method": "greedy"}

    def decode(self, model, source, max_length, **options) -> decoding.DecodeResult:
        return decoding.greedy_decode(model, source, max_length, **options)


@dataclasses.dataclass(frozen=True)
class Beam(_Strategy):
    """Beam search: the `width` best prefixes at each step, ranked by GNMT's score.

    Every live prefix is extended by every token and the `K = width` best
    candidates survive (`keras_seq.models.beam_search`), ranked by the score
    of Wu et al. (2016, eq. 14),

        s(Y, X) = log P(Y | X) / lp(Y) + cp(X; Y),
        lp(Y) = (5 + |Y|)^α / (5 + 1)^α,
        cp(X; Y) = β · Σ_{i=1}^{|X|} log(min(Σ_{j=1}^{|Y|} p_{i,j}, 1.0)),

    with `α = length_penalty`, `β = coverage_penalty`, `|Y|` the output's
    tokens (END included) and `p_{i,j}` the attention of output step `j` on
    source token `i`. `lp` divides the log-probability (a negative number)
    by more for a longer output, so that α > 0 offsets the sum's bias toward
    short outputs; `cp` penalises outputs that left source tokens
    unattended. Width 1 with β = 0 is greedy decoding.

    Args:
        width: `K`, the prefixes kept per source, a positive integer (at
            most 4,096). Default 4.
        length_penalty: α ≥ 0; 0 ranks by log-probability alone. Default
            0.6 (GNMT used 0.6 to 0.7): with width 4, three to
            four BLEU above greedy decoding on the English–French benchmark
            (benchmarks/results/translation.md).
        coverage_penalty: β ≥ 0 (GNMT: 0.2); default 0, no coverage term.
            A model without attention refuses β > 0 when it decodes.

    Example:

    >>> Beam(width=5, length_penalty=1.0).get_config()
    {'method': 'beam', 'width': 5, 'length_penalty': 1.0, 'coverage_penalty': 0.0}

    References:
        - Wu et al., "Google's Neural Machine Translation System",
          arXiv:1609.08144, 2016 (section 7, eq. 14).
    """

    method: ClassVar[str] = "beam"
    width: int = 4
    length_penalty: float = 0.6
    coverage_penalty: float = 0.0

    def __post_init__(self):
        width = decoding_checks.check_beam_width(self.width, "width")
        alpha, beta = decoding_checks.check_penalties(self.length_penalty, self.coverage_penalty)
        object.__setattr__(self, "width", width)
        object.__setattr__(self, "length_penalty", alpha)
        object.__setattr__(self, "coverage_penalty", beta)

    def keywords(self) -> dict[str, Any]:
        return {
            "method": "beam",
            "beam_width": self.width,
            "length_penalty": self.length_penalty,
            "coverage_penalty": self.coverage_penalty,
        }

    def decode(self, model, source, max_length, **options) -> decoding.DecodeResult:
        return decoding.beam_search(
            model,
            source,
            max_length,
            beam_width=self.width,
            length_penalty=self.length_penalty,
            coverage_penalty=self.coverage_penalty,
            **options,
        )


@dataclasses.dataclass(frozen=True)
class Sample(_Strategy):
    """Sampling: each token drawn from the model's tempered, truncated distribution.

        q(y) ∝ exp(log p(y | y_<t, x) / T),   y_t ~ q restricted to top-k(q) ∩ nucleus_p(q)

    (`keras_seq.models.sample_decode`): top-k keeps the `k` most probable
    tokens (Fan et al. 2018), the nucleus the fewest most probable tokens
    whose probability reaches `p` (Holtzman et al. 2020). The draws are
    stateless: step `t` uses the key `(seed, t)`.

    Args:
        temperature: `T > 0`; below 1 sharpens, above 1 flattens. Default 1.
        top_k: Draw among the `k` most probable tokens only (a positive
            integer), or None (default).
        top_p: Draw from the nucleus of probability `p` in (0, 1] only, or
            None (default).
        seed: An integer in [0, 2^31 − 1], or None (default): a random seed
            per decode.

    Example:

    >>> Sample(temperature=0.8, top_p=0.9, seed=1).keywords()["top_p"]
    0.9

    References:
        - Fan, Lewis & Dauphin, "Hierarchical Neural Story Generation",
          ACL 2018.
        - Holtzman et al., "The Curious Case of Neural Text Degeneration",
          ICLR 2020.
    """

    method: ClassVar[str] = "sample"
    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    seed: int | None = None

    def __post_init__(self):
        temperature, top_k, _ = decoding_checks.check_sampling(
            self.temperature, self.top_k, self.top_p
        )
        object.__setattr__(self, "temperature", temperature)
        object.__setattr__(self, "top_k", top_k)
        if self.top_p is not None:  # kept as written: 1.0 stays 1.0 (every token)
            object.__setattr__(self, "top_p", float(self.top_p))
        if self.seed is not None:
            object.__setattr__(self, "seed", decoding_checks.seed_value(self.seed))

    def keywords(self) -> dict[str, Any]:
        return {
            "method": "sample",
            "temperature": self.temperature,
            "top_k": self.top_k,
            "top_p": self.top_p,
            "seed": self.seed,
        }

    def decode(self, model, source, max_length, **options) -> decoding.DecodeResult:
        return decoding.sample_decode(
            model,
            source,
            max_length,
            temperature=self.temperature,
            top_k=self.top_k,
            top_p=self.top_p,
            seed=self.seed,
            **options,
        )


STRATEGIES = {strategy.method: strategy for strategy in (Greedy, Beam, Sample)}


def from_config(config: dict[str, Any]) -> Greedy | Beam | Sample:
    """The strategy of a `get_config()` dict, checked as a new one is.

    Example:

    >>> from_config({"method": "beam", "width": 2})
    Beam(width=2, length_penalty=0.6, coverage_penalty=0.0)
    """
    if not isinstance(config, dict):
        raise argument_checks.invalid("config", "a dict with a 'method' key", config)
    fields = dict(config)
    method = argument_checks.one_of("method", fields.pop("method", None), tuple(STRATEGIES))
    strategy = STRATEGIES[method]
    known = {field.name for field in dataclasses.fields(strategy)}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise argument_checks.invalid(
            "config", f"only the fields {sorted(known)} for method {method!r}", config
        )
    return strategy(**fields)


def checked(strategy: Any, name: str = "decoding") -> Greedy | Beam | Sample:
    """`strategy` if it is one of the three strategies, else Keras's message naming `name`.

    Example:

    >>> checked("beam")
    Traceback (most recent call last):
    ...
    ValueError: Received an invalid value for argument `decoding`, expected keras_seq.models.Greedy(), Beam(...) or Sample(...), got 'beam'.
    """  # noqa: E501
    if isinstance(strategy, (Greedy, Beam, Sample)):
        return strategy
    raise argument_checks.invalid(
        name, "keras_seq.models.Greedy(), Beam(...) or Sample(...)", strategy
    )


def exportable(strategy: Any, model: Any = None) -> Greedy | Beam:
    """`strategy` if an exported translator can decode with it: `Greedy()` or `Beam(...)`.

    With `model`, a `Beam` with a coverage penalty is refused for a model
    without attention (as `beam_search` refuses it), before anything is traced.
    `Sample` is refused. An export is a function of its input: a seed fixed
    in the graph would give each text one fixed draw on every call, which
    is not sampling, and a per-call seed would need a second input that the
    SavedModel's `translate` signature and the ONNX and LiteRT files do not
    have. Sample in Python instead, `Translator.translate(texts, Sample(...))`.
    """
    if isinstance(strategy, Beam) and model is not None:
        decoding_checks.check_beam_penalties(
            model, strategy.length_penalty, strategy.coverage_penalty
        )
    if isinstance(strategy, (Greedy, Beam)):
        return strategy
    if isinstance(strategy, Sample):
        raise argument_checks.invalid(
            "decoding",
            "Greedy() or Beam(...) (an exported translator decodes deterministically: "
            "sample in Python with Translator.translate(texts, Sample(...)))",
            strategy,
        )
    raise argument_checks.invalid(
        "decoding", "keras_seq.models.Greedy() or keras_seq.models.Beam(...)", strategy
    )


__all__ = ["Beam", "Greedy", "Sample", "checked", "exportable", "from_config"]
