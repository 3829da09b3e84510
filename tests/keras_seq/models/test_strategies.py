"""The decoding strategies as values: `Greedy()`, `Beam(...)`, `Sample(...)`.

Each is checked when made, with the rules (and messages) of the decoding functions; its
`compile()`d decoder and its `keywords()` decode (through `Translator.translate`) as its
`decode` does through the decoding functions (ids compared exactly: the same functions on the
same batch); its config reads back; an export takes `Greedy()` and `Beam(...)` and refuses
`Sample`. The exports themselves, served by TensorFlow alone and onnxruntime, are proved in
tests/builder_ui/results/test_export.py and test_export_onnx_litert_translators.py.
"""

from __future__ import annotations

import dataclasses
import doctest

import keras
import numpy as np
import pytest
from keras import ops

from keras_seq.models import (
    Beam,
    Greedy,
    Sample,
    Translator,
    beam_search,
    greedy_decode,
    sample_decode,
    seq2seq,
    strategies,
)
from keras_seq.tasks import Vocabulary

agnostic = pytest.mark.backend_agnostic


@agnostic
def test_the_defaults_are_the_benchmarks_best_setting_and_values_compare_by_value():
    # benchmarks/results/translation.md: beam width 4, length penalty 0.6, 3 to 4 BLEU above
    # greedy decoding.
    assert Beam() == Beam(width=4, length_penalty=0.6, coverage_penalty=0.0)
    assert Beam(4, 1) == Beam(4, 1.0) and hash(Beam(4, 1)) == hash(Beam(4, 1.0))
    assert Beam(width=2) != Beam(width=3) and Greedy() == Greedy() and Greedy() != Beam(width=1)
    assert Sample() == Sample(temperature=1.0, top_k=None, top_p=None, seed=None)
    assert repr(Beam()) == "Beam(width=4, length_penalty=0.6, coverage_penalty=0.0)"
    with pytest.raises(dataclasses.FrozenInstanceError):
        Beam().width = 8  # type: ignore[misc]


@agnostic
@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Beam(width=0), "`width`, expected a positive integer no larger than 4096"),
        (lambda: Beam(width=5000), "argument `width`, expected a positive integer no larger than"),
        (lambda: Beam(width=2.5), "argument `width`, expected a positive integer"),
        (lambda: Beam(width=True), "argument `width`, expected a positive integer"),
        (lambda: Beam(length_penalty=-0.1), "argument `length_penalty`, expected a number ≥ 0"),
        (lambda: Beam(length_penalty=float("inf")), "`length_penalty`, expected a finite number"),
        (lambda: Beam(length_penalty="0.6"), "`length_penalty`, expected a finite number"),
        (lambda: Beam(coverage_penalty=-1), "argument `coverage_penalty`, expected a number ≥ 0"),
        (lambda: Sample(temperature=0), "argument `temperature`, expected a positive number"),
        (lambda: Sample(top_k=0), "argument `top_k`, expected a positive integer"),
        (lambda: Sample(top_p=0.0), "argument `top_p`, expected a number in (0, 1], or None"),
        (lambda: Sample(top_p=1.5), "argument `top_p`, expected a number in (0, 1], or None"),
        (lambda: Sample(seed=-1), "argument `seed`, expected an integer from 0 to 2147483647"),
        (lambda: Sample(seed=2**31), "argument `seed`, expected an integer from 0 to 2147483647"),
    ],
)
def test_values_are_checked_when_made_with_the_decoders_messages(make, message):
    with pytest.raises(ValueError, match="Received an invalid value for argument") as caught:
        make()
    assert message in str(caught.value)


@agnostic
def test_checked_values_are_kept_as_numbers_of_their_kind():
    beam = Beam(width=np.int64(3), length_penalty=1, coverage_penalty=np.float32(0.25))
    assert (type(beam.width), type(beam.length_penalty), type(beam.coverage_penalty)) == (
        int,
        float,
        float,
    )
    assert beam.get_config() == {
        "method": "beam",
        "width": 3,
        "length_penalty": 1.0,
        "coverage_penalty": 0.25,
    }
    sample = Sample(temperature=2, top_k=np.int32(5), top_p=1, seed=np.int64(7))
    assert (sample.temperature, sample.top_k, sample.top_p, sample.seed) == (2.0, 5, 1.0, 7)


@agnostic
@pytest.mark.parametrize(
    "strategy",
    [Greedy(), Beam(), Beam(width=2, length_penalty=0.0, coverage_penalty=0.2), Sample(0.7, 5)],
    ids=repr,
)
def test_a_config_reads_back_as_the_same_strategy(strategy):
    import json

    config = json.loads(json.dumps(strategy.get_config()))  # JSON-ready
    assert config["method"] == strategy.method
    assert strategies.from_config(config) == strategy


@agnostic
def test_a_config_that_names_no_strategy_or_other_fields_is_refused():
    with pytest.raises(ValueError, match="argument `method`, expected one of 'greedy', 'beam'"):
        strategies.from_config({"method": "top_k"})
    with pytest.raises(ValueError, match=r"argument `config`, expected only the fields \[\]"):
        strategies.from_config({"method": "greedy", "width": 4})
    with pytest.raises(ValueError, match="argument `width`"):
        strategies.from_config({"method": "beam", "width": -4})
    with pytest.raises(ValueError, match="argument `config`, expected a dict"):
        strategies.from_config("beam")


@agnostic
def test_an_export_takes_greedy_and_beam_and_refuses_sampling():
    assert strategies.exportable(Greedy()) == Greedy()
    assert strategies.exportable(Beam(width=2)) == Beam(width=2)
    with pytest.raises(ValueError, match=r"argument `decoding`, expected Greedy\(\) or Beam"):
        strategies.exportable(Sample(seed=3))
    with pytest.raises(ValueError, match=r"`decoding`, expected keras_seq\.models\.Greedy"):
        strategies.exportable("beam")
    # A coverage penalty needs attention weights: refused for a model without attention.
    keras.utils.set_random_seed(0)
    plain = seq2seq(12, 12, units=4, embedding_dim=4)
    with pytest.raises(ValueError, match="argument `coverage_penalty`, expected 0 for a model"):
        strategies.exportable(Beam(coverage_penalty=0.2), plain)
    assert strategies.exportable(Beam(), plain) == Beam()


# --- decoding with them ------------------------------------------------------------------------

SOURCE_TEXTS = ["the black cat sleeps", "a small dog runs on the mat", "the red bird sings"]
TARGET_TEXTS = ["le chat noir dort", "un petit chien court", "l' oiseau chante"]
TEXTS = ["the black cat", "a small dog runs on the mat", "bird", "the red cat sings"]
MAX_LENGTH = 8


@pytest.fixture(scope="module")
def translator():
    """A Luong GRU translator with random weights: gibberish, but exactly defined."""
    source, target = Vocabulary.build(SOURCE_TEXTS), Vocabulary.build(TARGET_TEXTS)
    keras.utils.set_random_seed(4)
    model = seq2seq(len(source), len(target), cell="gru", attention="luong_general", units=8)
    return Translator(model, source, target, max_length=MAX_LENGTH)


def _ids(translator, texts):
    rows = [translator.source_vocabulary.encode(text) for text in texts]
    source = np.zeros((len(rows), max(map(len, rows))), np.int32)
    for row, ids in enumerate(rows):
        source[row, : len(ids)] = ids
    return source


@pytest.mark.parametrize(
    ("strategy", "function", "options"),
    [
        (Greedy(), greedy_decode, {}),
        (Beam(width=3, length_penalty=1.0), beam_search, {"beam_width": 3, "length_penalty": 1.0}),
        (Sample(top_k=4, seed=11), sample_decode, {"top_k": 4, "seed": 11}),
    ],
    ids=["greedy", "beam", "sample"],
)
def test_decode_is_its_decoding_function_and_keywords_translate_alike(
    translator, strategy, function, options
):
    source = _ids(translator, TEXTS)
    got = strategy.decode(translator.model, source, MAX_LENGTH)
    expected = function(translator.model, source, MAX_LENGTH, **options)
    np.testing.assert_array_equal(ops.convert_to_numpy(got.ids), ops.convert_to_numpy(expected.ids))
    # Compiled once (`compile_decoder`), its first call decodes as the function does.
    compiled = strategy.compile(translator.model, MAX_LENGTH)(source)
    np.testing.assert_array_equal(
        ops.convert_to_numpy(compiled.ids), ops.convert_to_numpy(expected.ids)
    )
    # The keywords decode the same way through the translator (one text at a time, so that
    # each batch is the text alone, as `decode` was given it above).
    ids = ops.convert_to_numpy(expected.ids)
    lengths = ops.convert_to_numpy(expected.lengths)
    for row, text in enumerate(TEXTS):
        alone = strategy.decode(translator.model, _ids(translator, [text]), MAX_LENGTH)
        wanted = ops.convert_to_numpy(alone.ids)[0, : int(ops.convert_to_numpy(alone.lengths)[0])]
        translated = translator.translate([text], **strategy.keywords())
        assert translated == [translator.target_vocabulary.decode(wanted)]
        assert translator.translate([text], strategy) == translated  # the value itself
        if strategy.method != "sample":  # rows decode independently of their batch
            np.testing.assert_array_equal(wanted, ids[row, : lengths[row]])


def test_translate_takes_a_strategy_or_its_keywords_never_both(translator):
    with pytest.raises(ValueError, match=r"`decoding`, expected no keyword .*got also beam_width"):
        translator.translate(TEXTS, Beam(), beam_width=2)
    with pytest.raises(ValueError, match=r"`decoding`, expected keras_seq.models.Greedy\(\), "):
        translator.translate(TEXTS, "beam")
    assert translator.translate(TEXTS, Greedy()) == translator.translate(TEXTS)  # the default


def test_the_module_examples_run():
    result = doctest.testmod(strategies, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted >= 4
