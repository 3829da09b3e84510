"""The models' `.keras` files reload in one fresh interpreter that only imports keras_seq.

A fresh process has never seen the classes: `import keras_seq` must register them for
`keras.saving.load_model(..., safe_mode=True)`. Starting Python with TensorFlow takes
seconds, so one interpreter reloads every model saved here and computes what this process
computed before saving:

- a `Translator` with word vocabularies (an LSTM with Luong attention reading its source
  backwards, random weights): its greedy, beam, coverage-penalised and sampled translations
  (same seed, backend and device), its `max_length` and vocabulary sizes;
- a `Translator` with subword vocabularies (BPE source, unigram target): the vocabularies'
  types and models, and its translations;
- a `PointerNetwork` with two input features: its greedy decoding.

(The layers' saved files reload in tests/keras_seq/test_saved_layers.py.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests.keras_seq.models import test_pointer_network as pointer_tests
from tests.keras_seq.models import test_translator as word_tests
from tests.keras_seq.models import test_translator_subword as subword_tests

pytestmark = pytest.mark.large

TEXTS = word_tests.TEXTS
DECODINGS = {
    "greedy": {},
    "beam": {"beam_width": 3},
    "coverage": {"beam_width": 3, "coverage_penalty": 0.5},
    "sampled": {"method": "sample", "top_p": 0.9, "seed": 3},
}

RELOAD = """
import json, sys
import numpy as np, keras
import keras_seq  # registers the classes

directory = sys.argv[1]
texts, decodings = json.loads(sys.argv[2]), json.loads(sys.argv[3])


def load(name):
    return keras.saving.load_model(f"{directory}/{name}.keras", safe_mode=True)


word, subword, pointer = load("word"), load("subword"), load("pointer")
print(json.dumps({
    "types": [type(word).__name__, type(subword).__name__, type(pointer).__name__],
    "word": {name: word.translate(texts["word"], **kwargs) for name, kwargs in decodings.items()},
    "word_max_length": word.max_length,
    "word_sizes": [len(word.source_vocabulary), len(word.target_vocabulary)],
    "subword_vocabularies": [
        [type(v).__name__, v.model_type]
        for v in (subword.source_vocabulary, subword.target_vocabulary)
    ],
    "subword": subword.translate(texts["subword"]),
    "pointer": pointer.decode(np.load(f"{directory}/pointer_x.npy")).tolist(),
}))
"""


@pytest.fixture(scope="module")
def reloaded(tmp_path_factory):
    """What this process computed before saving, and what the fresh interpreter computed."""
    from keras_seq.tasks import Vocabulary

    directory = tmp_path_factory.mktemp("saved")
    source = Vocabulary.build(word_tests.SOURCE_TEXTS)
    word = word_tests.Translators(source, Vocabulary.build(word_tests.TARGET_TEXTS))
    word = word["luong-reversed"]
    subword = subword_tests.make_translator()
    pointer = pointer_tests._network(input_features=2)
    x = pointer_tests._random_sequences(3, 5, features=2, seed=10)

    texts = {"word": TEXTS, "subword": subword_tests.TEXTS}
    expected = {
        "word": {name: word.translate(TEXTS, **kwargs) for name, kwargs in DECODINGS.items()},
        "subword": subword.translate(subword_tests.TEXTS),
        "pointer": np.asarray(pointer.decode(x)).tolist(),
        "word_sizes": [len(word.source_vocabulary), len(word.target_vocabulary)],
    }
    word.save(directory / "word.keras")
    subword.save(directory / "subword.keras")
    pointer.save(directory / "pointer.keras")
    np.save(directory / "pointer_x.npy", x)
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(RELOAD),
            str(directory),
            json.dumps(texts),
            json.dumps(DECODINGS),
        ],
        cwd=directory,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=300,  # a hang guard: the interpreter takes seconds
        check=False,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr[-4000:]}"
    return expected, json.loads(result.stdout.strip().splitlines()[-1])


def test_each_model_reloads_as_its_own_class(reloaded):
    _, got = reloaded
    assert got["types"] == ["Translator", "Translator", "PointerNetwork"]


def test_a_reloaded_translator_translates_the_same_with_every_decoding(reloaded):
    expected, got = reloaded
    for name in DECODINGS:  # sampled: the same seed, backend and device
        assert got["word"][name] == expected["word"][name], name
    assert got["word_max_length"] == word_tests.MAX_LENGTH
    assert got["word_sizes"] == expected["word_sizes"]


def test_a_reloaded_subword_translator_keeps_its_vocabularies_and_translations(reloaded):
    expected, got = reloaded
    assert got["subword_vocabularies"] == [
        ["SubwordVocabulary", "bpe"],
        ["SubwordVocabulary", "unigram"],
    ]
    assert got["subword"] == expected["subword"]


def test_a_reloaded_pointer_network_decodes_the_same(reloaded):
    expected, got = reloaded
    assert got["pointer"] == expected["pointer"]
