"""Export of real trained runs: the .keras file, SavedModels served by TensorFlow alone, and
Python scripts that rebuild the architecture in a fresh interpreter.

The SavedModels are proved in one fresh interpreter that refuses to import keras_seq,
builder_ui and SentencePiece: a classifier run's `serve`, a translation run's `serve` and
`translate` (text in, text out) exported with the default decoding (beam search, width 4,
length penalty 0.6) and with greedy decoding, and a subword Translator's, each compared here
with what keras_seq computes in this process: the ids exactly (the same decoding function on
the same batch), so beam search's and greedy decoding's, which differ on these inputs (checked),
cannot pass for each other. (Each layer's own SavedModel is checked by
`keras_seq.testing.layer_checks`.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import zipfile

import keras
import numpy as np
import pytest

from builder_ui import builders, engine
from builder_ui.engine import artifacts
from builder_ui.engine.store import RunStore
from builder_ui.results import export

pytestmark = pytest.mark.large

TRAIN = {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "seed": 1}

# Token ids with padding masked, two stacked bidirectional LSTMs: exercises nested layers,
# masks that Keras passes on by itself, and keras.layers only.
BILSTM = {
    "version": 1,
    "name": "export-bilstm",
    "task": {"type": "long_lag", "lag": 6, "n": 100, "num_distractors": 4, "encoding": "ids"},
    "model": {
        "type": "sequence_classifier",
        "embedding_dim": 4,
        "mask_zero": True,
        "encoder": {
            "type": "rnn",
            "cell": "lstm",
            "units": 8,
            "bidirectional": True,
            "num_layers": 2,
        },
    },
    "train": TRAIN,
}
# keras_seq layers: class token, learned positions, a pre-LN Transformer block.
TRANSFORMER = {
    "version": 1,
    "name": "export-transformer",
    "task": {"type": "long_lag", "lag": 6, "n": 100, "encoding": "ids"},
    "model": {
        "type": "sequence_classifier",
        "encoder": {
            "type": "transformer",
            "embed_dim": 8,
            "num_heads": 2,
            "ff_dim": 16,
            "num_layers": 1,
            "norm_first": True,
            "pooling": "class_token",
            "positional": "learned",
        },
    },
    "train": TRAIN,
}
# A subclassed keras_seq model (PointerNetwork) with two inputs.
POINTER = {
    "version": 1,
    "name": "export-pointer",
    "task": {"type": "sort_numbers", "length": 4, "n": 64},
    "model": {"type": "pointer_network", "units": 8},
    "train": TRAIN,
}


# Toy translation with word tokens: an LSTM encoder–decoder with Luong attention that reads
# its source backwards. Its SavedModel reads and writes text.
TRANSLATOR = {
    "version": 2,
    "name": "export-translator",
    "task": {"type": "toy_translation", "n": 200, "min_len": 4, "max_len": 6},
    "model": {
        "type": "seq2seq",
        "architecture": {
            "type": "rnn",
            "cell": "lstm",
            "units": 8,
            "embedding_dim": 8,
            "attention": "luong_general",
        },
        "reverse_source": True,
    },
    "train": TRAIN,
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One store holding a finished run of each model above and one diverged run."""
    store = RunStore(tmp_path_factory.mktemp("runs"))
    records = {}
    for spec in (BILSTM, TRANSFORMER, POINTER, TRANSLATOR):
        record = engine.run(spec, store=store)
        assert record.status == "done", record.error
        records[spec["name"]] = record
    diverged = store.create_run(BILSTM, name="diverged")
    store.set_status(diverged, "running")
    store.finish(diverged, "diverged", error="The loss became NaN at epoch 1.")
    records["diverged"] = store.get(diverged)
    yield store, records
    store.close()


def _architecture_in_fresh_process(scripts):
    """Run each script's build_model() in a new interpreter; return params and layer configs."""
    code = textwrap.dedent(
        """
        import json, runpy, sys
        out = {}
        for path in sys.argv[1:]:
            model = runpy.run_path(path)["build_model"]()
            out[path] = {
                "params": model.count_params(),
                "layers": [[type(l).__name__, l.get_config()] for l in model.layers],
                "builder_ui": any(m.startswith("builder_ui") for m in sys.modules),
            }
        print(json.dumps(out, default=repr))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code, *map(str, scripts)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _plain(config):
    """A layer config as JSON data, without its build state.

    A functional encoder's masks are `not_equal` operations (an Embedding's `mask_zero`)
    that Keras names by a counter of its process (`not_equal_3`): the number is dropped.
    """

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "build_config"}
        if isinstance(value, (list, tuple)):
            return [strip(v) for v in value]
        return value

    text = re.sub(r'"not_equal_\d+"', '"not_equal"', json.dumps(strip(config), default=repr))
    return json.loads(text)


def test_python_scripts_rebuild_the_same_architecture_in_a_fresh_process(runs):
    store, records = runs
    names = ["export-bilstm", "export-transformer", "export-pointer", "export-translator"]
    scripts = {name: export.export(store, records[name].id, "python") for name in names}
    rebuilt = _architecture_in_fresh_process(scripts.values())
    for name, path in scripts.items():
        trained = keras.saving.load_model(
            artifacts.artifact_path(store, records[name].id, "model.keras")
        )
        got = rebuilt[str(path)]
        assert got["params"] == records[name].params == trained.count_params(), name
        expected = [[type(layer).__name__, layer.get_config()] for layer in trained.layers]
        assert _plain(got["layers"]) == _plain(expected), name
        assert not got["builder_ui"], f"{name}: the script imported builder_ui"


def test_python_script_reads_as_layer_calls_with_literal_arguments(runs):
    store, records = runs
    text = export.export(store, records["export-bilstm"].id, "python").read_text()
    body = text.split("def build_model():", 1)[1]
    assert 'keras.Input((6,), dtype="int32", name="sequence")' in body
    assert "keras.layers.Embedding(6, 4, mask_zero=True" in body
    assert 'keras.layers.LSTM(8, name="bidirectional_1_layer")' in body  # the wrapped layer
    assert "keras.layers.Bidirectional(" in body
    assert "from_config" not in body and "builder_ui" not in text
    assert records["export-bilstm"].id in text  # the docstring names the run
    transformer = export.export(store, records["export-transformer"].id, "python").read_text()
    assert "from keras_seq.layers import" in transformer
    assert 'TransformerEncoderBlock(2, 16, norm_first=True, name="encoder_block_0")' in transformer
    pointer = export.export(store, records["export-pointer"].id, "python").read_text()
    # Its encoder, the graph's, is written with the functional API and handed over.
    assert "def build_encoder():" in pointer and "keras.layers.LSTM(8" in pointer
    assert 'PointerNetwork(1, units=8, encoder=encoder, name="pointer_network")' in pointer
    compile(text, "model.py", "exec")


# --- SavedModels served by TensorFlow alone ----------------------------------------------------

# Texts for the translation run's `translate`: sentences of the grammar, one with a word the
# vocabulary lacks and odd case and punctuation, one word; then texts without a token.
TEXTS = ["the good dog runs .", "The ZEBRA, sleeps — a doctor waits!", "dog"]
NO_TOKEN = ["", "   "]
# A Transformer Translator with subword vocabularies (random weights: gibberish, but exactly
# defined), asked texts of its pieces, characters it never saw, and an empty text.
ENGLISH = ["She is here.", "They are hungry.", "The dog is old.", "We are here.", "She sings."]
FRENCH = ["Elle est là.", "Ils ont faim.", "Le chien est vieux.", "Nous sommes là.", "Elle chante."]
SUBWORD_TEXTS = ["They are here.", "The dog sings.", "she is hungry", "Zèbre xylophone !"]
# What the SavedModels must be served without.
REFUSED = ("keras_seq", "builder_ui", "sentencepiece")

SERVE = """
import json, os, sys

class Refuse:  # serving must not need the libraries that wrote the SavedModels
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {refused!r}:
            raise ImportError(f"{{name}} may not be imported here")

sys.meta_path.insert(0, Refuse())
import numpy as np
import tensorflow as tf

served = sys.argv[1]
ids = np.load(os.path.join(served, "ids.npz"))
with open(os.path.join(served, "texts.json"), encoding="utf-8") as file:
    texts = json.load(file)
models, arrays, translations, decodings = {{}}, {{}}, {{}}, {{}}
for key in [*ids.files, *texts]:  # "<export>__<batch>"
    name = key.split("__")[0]
    if name not in models:
        models[name] = tf.saved_model.load(os.path.join(served, name))
        if hasattr(models[name], "decoding"):  # a translator says how it decodes
            decodings[name] = json.loads(models[name].decoding().numpy().decode("utf-8"))
for key in ids.files:
    arrays[key] = models[key.split("__")[0]].serve(tf.constant(ids[key])).numpy()
for key, batch in texts.items():
    out = models[key.split("__")[0]].translate(tf.constant(batch, dtype=tf.string))
    translations[key] = [text.decode("utf-8") for text in out.numpy()]
np.savez(os.path.join(served, "served.npz"), **arrays)
with open(os.path.join(served, "translations.json"), "w", encoding="utf-8") as file:
    json.dump(translations, file)
with open(os.path.join(served, "decodings.json"), "w", encoding="utf-8") as file:
    json.dump(decodings, file)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {refused!r})))
"""


def _padded_ids(rng, vocabulary_size):
    """Source id batches of 1×3 and 4×7, every row but the first right-padded."""
    batches = []
    for batch, time in ((1, 3), (4, 7)):
        source = rng.integers(4, vocabulary_size, size=(batch, time))
        source[1:, time - 2 :] = 0
        batches.append(source.astype("int32"))
    return batches


@pytest.fixture(scope="module")
def served(runs, tmp_path_factory):
    """Four SavedModels, what was asked of them, and what a fresh interpreter served.

    `classifier`, `translator` (the default decoding, beam search) and `greedy` (the same
    translation run, `decoding=Greedy()`) are exported from the runs, `subword` by
    `Translator.export_saved_model` over a directory that held an older export.
    """
    from keras_seq.models import Greedy, Translator, seq2seq
    from keras_seq.tasks import SubwordVocabulary

    store, records = runs
    directory = tmp_path_factory.mktemp("served")
    ids, texts, local = {}, {}, {}

    classifier = records["export-bilstm"]
    export.export(store, classifier.id, "savedmodel", out=directory / "classifier")
    ids["classifier__8"] = builders.prepare(classifier.spec).x_val[:8].astype("int32")
    local["classifier"] = keras.saving.load_model(
        artifacts.artifact_path(store, classifier.id, "model.keras")
    )

    run = records["export-translator"]
    export.export(store, run.id, "savedmodel", out=directory / "translator")
    task = export.stored_task(store, run.id)
    model = export.load_trained_model(store, run.id)
    local["translator"] = Translator(
        model, task.source_vocabulary, task.target_vocabulary, max_length=task.targets.length
    )
    texts["translator__alone"] = TEXTS[:1]
    texts["translator__batch"] = TEXTS + NO_TOKEN
    export.export(store, run.id, "savedmodel", out=directory / "greedy", decoding=Greedy())
    local["greedy"] = local["translator"]
    texts["greedy__batch"] = TEXTS + NO_TOKEN

    source = SubwordVocabulary.train(ENGLISH, 40, "bpe")
    target = SubwordVocabulary.train(FRENCH, 24, "unigram")
    keras.utils.set_random_seed(3)
    transformer = seq2seq(
        len(source),
        len(target),
        architecture="transformer",
        embedding_dim=16,
        num_heads=2,
        ff_dim=32,
        max_length=16,
    )
    local["subword"] = Translator(transformer, source, target, max_length=12)
    older = directory / "subword"
    older.mkdir()
    (older / "stale.txt").write_text("an older export", encoding="utf-8")
    with pytest.raises(FileExistsError, match="already exists; pass overwrite=True"):
        local["subword"].export_saved_model(older)
    local["subword"].export_saved_model(older, overwrite=True)
    texts["subword__batch"] = [*SUBWORD_TEXTS, ""]

    rng = np.random.default_rng(0)
    for name in ("translator", "subword"):
        for batch in _padded_ids(rng, len(local[name].source_vocabulary)):
            ids[f"{name}__{len(batch)}"] = batch
    ids["greedy__4"] = ids["translator__4"]
    written = sorted(os.listdir(directory))
    np.savez(directory / "ids.npz", **ids)
    (directory / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-c", SERVE.format(refused=REFUSED), str(directory)],
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        timeout=300,  # a hang guard: loading TensorFlow and three SavedModels takes seconds
    )
    assert result.returncode == 0, result.stderr[-4000:]
    out = {
        "imported": json.loads(result.stdout.strip().splitlines()[-1]),
        "written": written,
        "arrays": dict(np.load(directory / "served.npz")),
        "translations": json.loads((directory / "translations.json").read_text("utf-8")),
        "decodings": json.loads((directory / "decodings.json").read_text("utf-8")),
    }
    return directory, ids, texts, local, out


def test_savedmodels_serve_in_a_process_that_refuses_keras_seq(served):
    *_, out = served  # the fixture's interpreter refused every import of REFUSED
    assert out["imported"] == []
    assert set(out["arrays"]) == {"classifier__8", "translator__1", "translator__4"} | {
        "subword__1",
        "subword__4",
        "greedy__4",
    }
    assert set(out["translations"]) == {
        "translator__alone",
        "translator__batch",
        "greedy__batch",
        "subword__batch",
    }


def test_a_classifier_serves_the_probabilities_its_keras_model_predicts(served):
    _, ids, _, local, out = served
    x = ids["classifier__8"]
    expected = local["classifier"].predict(x, verbose=0)
    np.testing.assert_allclose(out["arrays"]["classifier__8"], expected, atol=1e-5)


def test_a_translation_run_translates_text_by_beam_search_unless_told_greedy(served):
    *_, local, out = served
    beam = local["translator"].translate(TEXTS, beam_width=4, length_penalty=0.6)
    greedy = local["translator"].translate(TEXTS)
    assert beam != greedy  # these texts tell the two decodings apart
    assert out["translations"]["translator__alone"] == beam[:1]
    assert out["translations"]["translator__batch"] == [*beam, "", ""]  # no token: ""
    assert out["translations"]["greedy__batch"] == [*greedy, "", ""]


def test_subword_pieces_are_cut_and_joined_in_the_graph_as_the_translator_does(served):
    *_, local, out = served
    expected = local["subword"].translate(SUBWORD_TEXTS, beam_width=4, length_penalty=0.6)
    assert out["translations"]["subword__batch"] == [*expected, ""]


def _decoded(translator, source, greedy):
    """The ids `serve` must give: `greedy_decode`'s, or `beam_search`'s at width 4, α = 0.6."""
    from keras_seq.models import beam_search, greedy_decode

    if greedy:
        result = greedy_decode(translator.model, source, translator.max_length)
    else:
        result = beam_search(
            translator.model, source, translator.max_length, beam_width=4, length_penalty=0.6
        )
    return keras.ops.convert_to_numpy(result.ids)


def test_serve_gives_the_translators_ids_of_its_decoding_on_padded_batches(served):
    _, ids, _, local, out = served
    checked = 0
    for key, source in ids.items():
        name = key.split("__")[0]
        if name == "classifier":
            continue
        got = out["arrays"][key]
        assert got.dtype == np.int32, (key, got.dtype)
        np.testing.assert_array_equal(got, _decoded(local[name], source, greedy=name == "greedy"))
        checked += 1
    assert checked == 5
    # The batch served both ways decodes differently by beam search and greedily (row 3).
    assert (out["arrays"]["translator__4"] != out["arrays"]["greedy__4"]).any()


def test_a_translator_savedmodel_says_how_it_decodes(served):
    directory, _, _, local, out = served
    beam = {"method": "beam", "width": 4, "length_penalty": 0.6, "coverage_penalty": 0.0}
    expected = {
        "translator": {**beam, "max_length": local["translator"].max_length},
        "greedy": {"method": "greedy", "max_length": local["translator"].max_length},
        "subword": {**beam, "max_length": 12},
    }
    assert out["decodings"] == expected  # its `decoding` signature, read by TensorFlow alone
    for name, decoding in expected.items():  # and beside the vocabularies, for any reader
        path = directory / name / "assets.extra" / "decoding.json"
        assert json.loads(path.read_text("utf-8")) == decoding


def test_an_export_refuses_sampling_and_a_decoding_it_cannot_apply(runs, tmp_path):
    from keras_seq.models import Beam, Greedy, Sample, Translator

    store, records = runs
    translator, classifier = records["export-translator"].id, records["export-bilstm"].id
    with pytest.raises(export.ExportError, match=r"`decoding`, expected Greedy\(\) or Beam"):
        export.export(store, translator, "savedmodel", out=tmp_path / "s", decoding=Sample(seed=1))
    with pytest.raises(export.ExportError, match="decoding: only for the 'savedmodel', 'onnx'"):
        export.export(store, translator, "python", decoding=Greedy())
    with pytest.raises(export.ExportError, match=r"has no decode loop; export it without one"):
        export.export(store, classifier, "savedmodel", out=tmp_path / "c", decoding=Beam())
    task = export.stored_task(store, translator)
    local = Translator(
        export.load_trained_model(store, translator),
        task.source_vocabulary,
        task.target_vocabulary,
    )
    with pytest.raises(ValueError, match=r"`decoding`, expected Greedy\(\) or Beam"):
        local.export_saved_model(tmp_path / "t", decoding=Sample(seed=1))
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing was written


def test_export_saved_model_replaces_an_older_export_only_when_told(served):
    directory, *_, out = served
    assert not (directory / "subword" / "stale.txt").exists()
    assert (directory / "subword" / "saved_model.pb").is_file()
    # Written through temporary directories: nothing else is left beside the exports.
    assert out["written"] == ["classifier", "greedy", "subword", "translator"]


def test_the_translator_savedmodel_carries_both_vocabularies_as_json(runs, served):
    store, records = runs
    directory, *_ = served
    task = export.stored_task(store, records["export-translator"].id)
    path = directory / "translator" / "assets.extra" / "vocabularies.json"
    assert json.loads(path.read_text("utf-8")) == {
        "source_vocabulary": task.source_vocabulary.get_config(),
        "target_vocabulary": task.target_vocabulary.get_config(),
    }


def test_savedmodel_is_zipped_and_every_export_is_a_recorded_artifact(runs):
    store, records = runs
    run_id = records["export-bilstm"].id
    directory = export.export(store, run_id, "savedmodel")
    export.export(store, run_id, "python")
    recorded = store.get(run_id).artifacts
    assert recorded["savedmodel"] == f"{run_id}/export/savedmodel"
    assert recorded["savedmodel.zip"] == f"{run_id}/export/savedmodel.zip"
    assert recorded["model.py"] == f"{run_id}/export/model.py"
    with zipfile.ZipFile(artifacts.artifact_path(store, run_id, "savedmodel.zip")) as archive:
        names = set(archive.namelist())
    assert "savedmodel/saved_model.pb" in names
    on_disk = {
        f"savedmodel/{p.relative_to(directory).as_posix()}"
        for p in directory.rglob("*")
        if p.is_file()
    }
    assert on_disk <= names
    leftovers = [p.name for p in (directory.parent).iterdir() if p.name.startswith(".")]
    assert leftovers == []  # every temporary name was renamed or removed


def test_keras_export_is_the_engines_file_and_out_copies_it(runs, tmp_path):
    store, records = runs
    run_id = records["export-transformer"].id
    assert export.export(store, run_id, "keras") == artifacts.artifact_path(
        store, run_id, "model.keras"
    )
    copied = export.export(store, run_id, "keras", out=tmp_path / "copies" / "t.keras")
    assert copied == tmp_path / "copies" / "t.keras"
    model = keras.saving.load_model(copied, safe_mode=True)
    assert model.count_params() == records["export-transformer"].params
    into_dir = export.export(store, run_id, "python", out=tmp_path / "copies")
    assert into_dir == tmp_path / "copies" / "model.py"
    assert sorted(p.name for p in (tmp_path / "copies").iterdir()) == ["model.py", "t.keras"]


@pytest.mark.parametrize("format", ["keras", "savedmodel", "python"])
def test_a_diverged_run_exports_nothing(runs, format):
    store, records = runs
    run_id = records["diverged"].id
    with pytest.raises(export.ExportError) as excinfo:
        export.export(store, run_id, format)
    message = str(excinfo.value)
    assert f"Run {run_id!r} is 'diverged'" in message
    assert "only a finished ('done') run can be exported" in message
    assert "NaN or infinite" in message
    assert store.get(run_id).artifacts == {}
    assert not store.artifact_dir(run_id).exists()


def test_unknown_run_and_unknown_format_are_refused(runs):
    store, records = runs
    with pytest.raises(export.ExportError, match="No run with id 'nope'"):
        export.export(store, "nope", "keras")
    with pytest.raises(export.ExportError, match="expected one of 'keras', 'savedmodel'"):
        export.export(store, records["export-bilstm"].id, "torchscript")


# --- where an export may write -----------------------------------------------------------------


def test_a_file_export_gets_its_suffix_and_never_replaces_a_file_unasked(runs, tmp_path):
    store, records = runs
    run_id = records["export-bilstm"].id
    written = export.export(store, run_id, "keras", out=tmp_path / "bilstm")
    assert written == tmp_path / "bilstm.keras"  # load_model refuses a name without .keras
    assert keras.saving.load_model(written, safe_mode=True).count_params() > 0
    with pytest.raises(export.ExportError, match=r"out: .* must end in \.keras"):
        export.export(store, run_id, "keras", out=tmp_path / "bilstm.h5")
    mine = tmp_path / "notes.py"
    mine.write_text("# the user's own file\n", encoding="utf-8")
    with pytest.raises(export.ExportError, match=r"out: .*notes\.py' exists; pass force"):
        export.export(store, run_id, "python", out=mine)
    assert mine.read_text(encoding="utf-8") == "# the user's own file\n"
    export.export(store, run_id, "python", out=mine, force=True)
    assert "def build_model" in mine.read_text(encoding="utf-8")


def test_a_savedmodel_export_never_empties_a_directory_of_other_files(runs, tmp_path):
    store, records = runs
    run_id = records["export-bilstm"].id
    home = tmp_path / "home"
    (home / "documents").mkdir(parents=True)
    (home / "documents" / "thesis.tex").write_text("years of work", encoding="utf-8")
    for force in (False, True):
        with pytest.raises(export.ExportError, match=r"holds other files .* never replaces it"):
            export.export(store, run_id, "savedmodel", out=home, force=force)
    assert (home / "documents" / "thesis.tex").read_text(encoding="utf-8") == "years of work"
    target = tmp_path / "served"
    export.export(store, run_id, "savedmodel", out=target)
    assert (target / "saved_model.pb").is_file()
    with pytest.raises(export.ExportError, match="holds a SavedModel; pass force"):
        export.export(store, run_id, "savedmodel", out=target)
    assert export.export(store, run_id, "savedmodel", out=target, force=True) == target
    assert (target / "saved_model.pb").is_file()


def test_a_damaged_model_file_is_one_clear_error_exit_2(tmp_path, capsys):
    from builder_ui import cli

    store = RunStore(tmp_path)
    record = engine.run({**BILSTM, "name": "damaged"}, store=store)
    artifacts.artifact_path(store, record.id, "model.keras").write_bytes(b"not a zip archive")
    # Refused before Keras reads it (`artifacts.check_model_archive`), not "File not found".
    with pytest.raises(export.ExportError, match=r"model file .* is not a Keras model file"):
        export.export(store, record.id, "python")
    store.close()
    argv = ["export", record.id, "--format", "savedmodel", "--runs", str(tmp_path)]
    assert cli.main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "is not a Keras model file (a zip archive)" in line and "Traceback" not in line
