"""load_parallel_text on real files: the Tatoeba/Anki format, errors, the split, vocabularies."""

import numpy as np
import pytest

from keras_seq.tasks import (
    Vocabulary,
    load_parallel_text,
    parallel_text,
    read_parallel_text,
    split_pairs,
    task_from_pairs,
)
from keras_seq.tasks.vocabulary import tokenize


def cased(text: str) -> list[str]:
    return tokenize(text, lowercase=False)


ATTRIBUTION = "CC-BY 2.0 (France) Attribution: tatoeba.org #2877272 (CM) & #1158250 (Wittydev)"

ANKI = [
    ("Go.", "Va !"),
    ("Go.", "Marche."),
    ("Hi.", "Salut !"),
    ("Run!", "Cours !"),
    ("Who?", "Qui ?"),
    ("Wow!", "Ça alors !"),
    ("Fire!", "Au feu !"),
    ("Help!", "À l'aide !"),
    ("Jump.", "Saute."),
    ("Stop!", "Ça suffit !"),
    ("Wait!", "Attends !"),
    ("I'm cold.", "J'ai froid."),
    ("Hello!", "Bonjour !"),
    ("I won!", "J'ai gagné !"),
    ("Got it?", "Compris ?"),
    ("He ran.", "Il a couru."),
    ("I fell.", "Je suis tombé."),
    ("I know.", "Je sais."),
    ("I lied.", "J'ai menti."),
    ("I lost.", "J'ai perdu."),
]


def _write(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding))
    return path


def _anki_file(tmp_path, pairs=ANKI, name="fra.txt"):
    lines = [f"{en}\t{fr}\t{ATTRIBUTION}" for en, fr in pairs]
    return _write(tmp_path / name, "\n".join(lines) + "\n")


def test_reads_tatoeba_lines_ignoring_attribution_columns(tmp_path):
    path = _anki_file(tmp_path)
    assert read_parallel_text(path) == ANKI
    assert read_parallel_text(str(path)) == ANKI


def test_accepts_a_byte_order_mark_crlf_blank_lines_and_two_columns(tmp_path):
    text = "\ufeffHi.\tSalut !\r\n\r\n   \r\nI'm cold. \t J'ai froid.\r\nRun!\tCours !"
    path = _write(tmp_path / "bom.txt", text)
    assert read_parallel_text(path) == [
        ("Hi.", "Salut !"),
        ("I'm cold.", "J'ai froid."),
        ("Run!", "Cours !"),
    ]


def test_malformed_lines_are_reported_with_their_numbers(tmp_path):
    text = "Hi.\tSalut !\n\nno tab here\n\tonly a target\nonly a source\t  \nRun!\tCours !\n"
    path = _write(tmp_path / "bad.txt", text)
    message = (
        "has 3 malformed line\\(s\\), expected `source<TAB>target`: line 3: no TAB between "
        "source and target; line 4: empty source; line 5: empty target\\. Fix them"
    )
    with pytest.raises(ValueError, match=message):
        read_parallel_text(path)
    with pytest.raises(ValueError, match="line 3: no TAB"):
        load_parallel_text(path)
    with pytest.warns(UserWarning, match="line 3: no TAB .* They were skipped"):
        pairs = read_parallel_text(path, malformed="skip")
    assert pairs == [("Hi.", "Salut !"), ("Run!", "Cours !")]


def test_many_malformed_lines_name_the_first_five(tmp_path):
    path = _write(tmp_path / "bad.txt", "ok\tok\n" + "broken\n" * 9)
    with pytest.raises(ValueError, match=r"9 malformed .* line 6: no TAB .*\(and 4 more\)"):
        read_parallel_text(path)


def test_a_file_that_is_not_utf8_is_refused_with_the_offset_and_line(tmp_path):
    good = b"Hi.\tSalut !\n"
    path = tmp_path / "latin1.txt"
    path.write_bytes(good + "Café.\tCafé.\n".encode("latin-1"))
    offset = len(good) + 3  # "Caf" then the latin-1 byte of "é"
    with pytest.raises(
        ValueError, match=rf"is not UTF-8 text: byte {offset} \(line 2\) is b'\\xe9'"
    ):
        read_parallel_text(path)


def test_empty_missing_and_pairless_files_are_refused(tmp_path):
    with pytest.raises(ValueError, match="is empty"):
        read_parallel_text(_write(tmp_path / "empty.txt", ""))
    with pytest.raises(ValueError, match="is empty"):
        read_parallel_text(_write(tmp_path / "blank.txt", "\n  \n\t\n"))
    with pytest.raises(ValueError, match="expected an existing file"):
        read_parallel_text(tmp_path / "missing.txt")
    with pytest.raises(ValueError, match="expected an existing file"):
        read_parallel_text(tmp_path)
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="holds no"):
        read_parallel_text(_write(tmp_path / "tabless.txt", "a\nb\n"), malformed="skip")
    with pytest.raises(ValueError, match="`path`, expected a file path"):
        read_parallel_text(42)


def test_files_over_the_size_or_line_limits_are_refused(tmp_path, monkeypatch):
    assert parallel_text.MAX_FILE_BYTES == 50_000_000
    path = _anki_file(tmp_path)
    monkeypatch.setattr(parallel_text, "MAX_FILE_BYTES", 100)
    with pytest.raises(ValueError, match=r"more than the 100 bytes \(MAX_FILE_BYTES\)"):
        read_parallel_text(path)
    monkeypatch.setattr(parallel_text, "MAX_FILE_BYTES", 50_000_000)
    monkeypatch.setattr(parallel_text, "MAX_LINES", 10)
    with pytest.raises(ValueError, match=r"has 20 lines, more than the 10 \(MAX_LINES\)"):
        read_parallel_text(path)


def test_split_keeps_every_source_sentence_on_one_side(tmp_path):
    # Each source appears with three translations, differing only in case.
    pairs = [
        (source, f"{target} {k}")
        for source, target in ANKI[2:]
        for k, source in enumerate((source, source.upper(), source.lower()))
    ]
    train, val = split_pairs(pairs, 0.25, seed=3)
    assert len(train) + len(val) == len(pairs) and len(val) >= round(0.25 * len(pairs))
    train_keys = {tuple(tokenize(s)) for s, _ in train}
    val_keys = {tuple(tokenize(s)) for s, _ in val}
    assert not train_keys & val_keys
    assert len(val) % 3 == 0  # whole groups
    assert split_pairs(pairs, 0.25, seed=3) == (train, val)
    assert split_pairs(pairs, 0.25, seed=4) != (train, val)
    with pytest.raises(ValueError, match="at least one pair in each split"):
        split_pairs([("a", "b"), ("A", "c")], 0.5)


def test_load_builds_vocabularies_from_the_training_split_only(tmp_path):
    """Case kept by default (translations come out cased); the split compares sources
    without case."""
    task = load_parallel_text(_anki_file(tmp_path), validation_split=0.25, seed=1)
    train, val = split_pairs(ANKI, 0.25, seed=1)
    assert (task.num_train, task.num_val) == (len(train), len(val))
    english = {t for s, _ in train for t in cased(s)}
    french = {t for _, t in train for t in cased(t)}
    assert set(task.source_vocabulary.tokens[4:]) == english
    assert set(task.target_vocabulary.tokens[4:]) == french
    # A word seen only in validation is UNK there.
    val_only = {t for s, _ in val for t in cased(s)} - english
    assert val_only and np.any(task.x_val == Vocabulary.UNK)
    assert not np.any(task.x_train == Vocabulary.UNK)
    # Rows decode to the tokens of their sentences, case kept.
    for (source, target), x, y in zip(train, task.x_train, task.y_train, strict=True):
        assert task.source_vocabulary.decode(x) == " ".join(cased(source))
        assert task.target_vocabulary.decode(y) == " ".join(cased(target))
    assert task.inputs.length == max(len(tokenize(s)) for s, _ in ANKI)
    assert task.targets.length == max(len(tokenize(t)) for _, t in ANKI) + 1
    assert task.params["pairs_read"] == 20 and task.params["pairs_too_long"] == 0


def test_length_limits_drop_long_pairs_and_case_can_be_lowered(tmp_path):
    path = _anki_file(tmp_path)
    task = load_parallel_text(path, max_source_length=2, max_target_length=3, lowercase=True)
    kept = [(s, t) for s, t in ANKI if len(tokenize(s)) <= 2 and len(tokenize(t)) <= 3]
    assert task.num_train + task.num_val == len(kept)
    assert task.params["pairs_too_long"] == len(ANKI) - len(kept)
    assert task.inputs.length <= 2 and task.targets.length <= 4
    assert "go" in task.source_vocabulary and "Go" not in task.source_vocabulary
    with pytest.raises(ValueError, match=r"Only 0 of the 20 pairs .* fit max_source_length=1"):
        load_parallel_text(path, max_source_length=1, max_target_length=1)
    with pytest.raises(ValueError, match="`max_source_length`, expected a positive integer"):
        load_parallel_text(path, max_source_length=0)


def test_max_vocab_size_sends_rare_words_to_unk(tmp_path):
    task = load_parallel_text(_anki_file(tmp_path), max_vocab_size=8)
    assert len(task.source_vocabulary) == 8 and len(task.target_vocabulary) == 8
    assert np.any(task.x_train == Vocabulary.UNK)
    with pytest.raises(ValueError, match="`max_vocab_size`, expected an integer from 5"):
        load_parallel_text(_anki_file(tmp_path), max_vocab_size=4)


def test_task_from_pairs_checks_its_pairs():
    with pytest.raises(ValueError, match="string pairs, got \\('a',\\) at position 1"):
        task_from_pairs([("a", "b"), ("a",)], [("c", "d")])
    with pytest.raises(ValueError, match="`val_pairs`, expected at least one"):
        task_from_pairs([("a", "b")], [])
