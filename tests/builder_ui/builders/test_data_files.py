"""The `csv_sequences` task: labelled sequences from CSV/TSV files, checked line by line."""

from __future__ import annotations

import math

import numpy as np
import pytest

from builder_ui.builders import prepare
from builder_ui.builders.data_files import DataFileError, load_csv_sequences
from builder_ui.specs import SpecError


def write(tmp_path, text, name="data.csv"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def test_numeric_rows_become_steps_of_features_with_sorted_class_ids(tmp_path):
    rows = {  # first value → (label, values): the first value identifies a row after the shuffle
        "10": ("dog", [10, 11, 12, 13]),
        "20": ("cat", [20, 21, 22, 23]),
        "30": ("dog", [30, 31, 32, 33]),
        "40": ("emu", [40, 41, 42, 43]),
        "50": ("cat", [50, 51, 52, 53]),
    }
    text = "".join(f"{label},{','.join(map(str, v))}\n" for label, v in rows.values())
    task = load_csv_sequences(
        write(tmp_path, text), inputs="numeric", target="classification", features=2
    )
    assert task.inputs.shape == (2, 2)  # 4 values = 2 steps of 2 features
    assert task.targets.num_classes == 3
    assert task.params["classes"] == ["cat", "dog", "emu"]
    x = np.concatenate([task.x_train, task.x_val])
    y = np.concatenate([task.y_train, task.y_val])
    assert (task.num_train, task.num_val) == (4, 1)
    for sequence, label in zip(x, y, strict=True):
        name, values = rows[str(int(sequence[0, 0]))]
        np.testing.assert_array_equal(sequence, np.array(values, "float32").reshape(2, 2))
        assert task.params["classes"][label] == name


def test_tsv_regression_with_header_and_blank_lines(tmp_path):
    text = "target\tv1\tv2\n0.5\t1\t2\n\n1.5\t3\t4\n-2\t5\t6\n"
    task = load_csv_sequences(
        write(tmp_path, text, "series.tsv"),
        inputs="numeric",
        target="regression",
        header=True,
        validation_split=0.3,
    )
    assert task.targets.kind == "regression" and task.y_train.shape[1:] == (1,)
    pairs = {
        float(t[0]): tuple(s[:, 0])
        for s, t in zip(
            np.concatenate([task.x_train, task.x_val]),
            np.concatenate([task.y_train, task.y_val]),
            strict=True,
        )
    }
    assert pairs == {0.5: (1.0, 2.0), 1.5: (3.0, 4.0), -2.0: (5.0, 6.0)}


def test_token_texts_are_encoded_with_a_training_vocabulary_and_padded_with_zero(tmp_path):
    lines = [f"pos,the cat sat {i}" for i in range(4)] + ['neg,"no, the dog"', "neg,a dog ran"]
    task = load_csv_sequences(
        write(tmp_path, "\n".join(lines)), inputs="tokens", target="classification", seed=1
    )
    vocabulary = task.source_vocabulary
    assert task.inputs.kind == "tokens" and task.inputs.vocab_size == len(vocabulary)
    x = np.concatenate([task.x_train, task.x_val])
    assert task.inputs.length == 4  # "the cat sat 0", "no , the dog"
    texts = sorted(vocabulary.decode(row) for row in x)
    expected = sorted(
        vocabulary.decode(vocabulary.encode(t.split(",", 1)[1].strip('"'))) for t in lines
    )
    assert texts == expected
    shorter = x[np.count_nonzero(x, axis=1) == 3]
    assert shorter.size and np.all(shorter[:, 3] == 0)  # right-padded with PAD


@pytest.mark.parametrize(
    ("content", "options", "message"),
    [
        ("a,1,2,3\nb,4,5\n", {}, "line 2: ragged row: 3 columns, expected 4 columns like line 1"),
        ("a,1,2\n\nb,3,nan\n", {}, "line 3: column 3: expected a finite number, got 'nan'"),
        ("a,1,2\nb,3,-inf\n", {}, "line 2: column 3: expected a finite number, got '-inf'"),
        ("a,1,2\nb,3,x\n", {}, "line 2: column 3: expected a number, got 'x'"),
        ("v,x1,x2\n1,2,3\n", {"target": "regression"}, "line 1: column 1: expected a number"),
        ("a,1,2,3\nb,4,5,6\n", {"features": 2}, "line 1: 3 values is not a multiple of features=2"),
        ("a,1\nb,2\nc,3\nd,4\n", {"max_rows": 3}, "line 4: more than max_rows=3 rows"),
        ("a,1,2,3\nb,4,5,6\n", {"max_columns": 3}, "line 1: 4 columns, more than max_columns=3"),
        ("a,1\na,2\n", {}, "one class only ('a'); need at least 2"),
        ("a,1\n", {}, "1 row; need at least 2 (one per split)"),
        ("\n\n", {}, "no rows"),
        ("a,1\nb,2\x00\n", {}, "line 2: holds a NUL character"),
        (b"a,1\nb,2\nc,\xe9\n", {}, "line 3: not UTF-8 text (byte 0xe9"),
        ("a,1,2\n" * 20, {"max_bytes": 50}, "120 bytes, more than max_bytes=50"),
        ("a,one two\nb,x,y\n", {"inputs": "tokens"}, "line 2: ragged row: 3 columns, expected 2"),
        (
            "a,one two three\nb,x\n",
            {"inputs": "tokens", "max_length": 2},
            "line 1: column 2: 3 tokens, more than max_length=2",
        ),
        ('a,"1\nb,2\n', {}, "unreadable CSV"),
    ],
)
def test_bad_files_are_refused_with_the_line_of_the_first_problem(
    tmp_path, content, options, message
):
    path = write(tmp_path, content)
    arguments = {"inputs": "numeric", "target": "classification", **options}
    with pytest.raises(DataFileError) as excinfo:
        load_csv_sequences(path, **arguments)
    assert str(excinfo.value).startswith(f"{path}")
    assert message in str(excinfo.value)


def test_a_missing_file_is_refused(tmp_path):
    with pytest.raises(DataFileError, match=r"absent\.csv: no such file"):
        load_csv_sequences(tmp_path / "absent.csv", inputs="numeric", target="regression")


def spec_for(path, **task):
    return {
        "version": 1,
        "name": "csv",
        "task": {"type": "csv_sequences", "path": str(path), **task},
        "model": {"type": "sequence_classifier", "encoder": {"type": "rnn", "units": 4}},
        "train": {"epochs": 1, "batch_size": 8},
    }


def test_prepare_reports_a_data_file_problem_at_task_path(tmp_path):
    path = write(tmp_path, "a,1,2\nb,1\n")
    with pytest.raises(SpecError) as excinfo:
        prepare(spec_for(path))
    assert str(excinfo.value) == (
        f"task.path: {path}, line 2: ragged row: 2 columns, expected 3 columns like line 1"
    )


def test_prepare_refuses_features_for_token_texts(tmp_path):
    with pytest.raises(SpecError, match=r"^task\.features: only for numeric inputs, got 2$"):
        prepare(spec_for(tmp_path / "x.csv", inputs="tokens", features=2))


def test_a_token_csv_trains_a_masked_classifier(tmp_path):
    rng = np.random.default_rng(0)
    words = ["red", "green", "blue", "dark", "light"]
    lines = []
    for i in range(60):
        label = "warm" if i % 2 else "cold"
        text = " ".join(rng.choice(words, size=rng.integers(2, 6)))
        lines.append(f"{label},{text}")
    path = write(tmp_path, "\n".join(lines))
    data = spec_for(path, inputs="tokens")
    data["model"]["mask_zero"] = True
    prepared = prepare(data)
    model = prepared.build()
    assert model.get_layer("token_embedding").mask_zero
    history = model.fit(prepared.x_train, prepared.y_train, epochs=1, verbose=0)
    assert math.isfinite(history.history["loss"][0])
