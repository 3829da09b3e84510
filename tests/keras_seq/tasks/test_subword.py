"""`SubwordVocabulary`: BPE and unigram pieces (SentencePiece), the reserved ids of a `Vocabulary`.

The expectations are written independently of the code under test: the
normalised text is computed here with `unicodedata` and `str.split`, the
characters a text may use are counted here, and the reserved ids are those
`Vocabulary` documents.
"""

from __future__ import annotations

import json
import pathlib
import unicodedata

import pytest

pytest.importorskip("sentencepiece")

from keras_seq.tasks import SubwordVocabulary, Vocabulary, task_from_pairs

agnostic = pytest.mark.backend_agnostic

# Real-looking French with elisions, accents, punctuation attached or spaced (French typography).
FRENCH = [
    "Je suis fatigué.",
    "Je suis fatiguée.",
    "Il est fatigué.",
    "L'homme est là.",
    "L'homme est fatigué.",
    "J'ai froid.",
    "J'ai faim.",
    "Nous sommes fatigués.",
    "Elle est très fatiguée !",
    "Es-tu fatigué ?",
    "Où est l'école ?",
    "C'est l'heure.",
    "Qu'est-ce que c'est ?",
    "Je n'ai pas faim.",
    "Tu as froid ?",
    "Ils sont là-bas.",
    "Le chat  dort   sur le lit.",
    "  Les enfants jouent dehors. ",
]


def _normalized(text, lowercase=True):
    """NFC, lowercase, whitespace runs to one space, none at the ends: written out independently."""
    text = unicodedata.normalize("NFC", text)
    if lowercase:
        text = text.lower()
    return " ".join(text.split())


@pytest.fixture(scope="module", params=["bpe", "unigram"])
def vocab(request):
    # Unigram well below what its trainer can fill from this text (63 with SentencePiece 0.2.3).
    size = {"bpe": 120, "unigram": 50}[request.param]
    return SubwordVocabulary.train(FRENCH, size, request.param)


@agnostic
def test_decoding_the_encoding_of_a_training_sentence_gives_its_normalized_text(vocab):
    for text in FRENCH:
        assert vocab.decode(vocab.encode(text, add_end=True)) == _normalized(text)


@agnostic
def test_translations_read_as_written_text(vocab):
    # No space before the period, the elided article joined, the accents kept.
    assert vocab.decode(vocab.encode("Je suis fatigué.")) == "je suis fatigué."
    assert vocab.decode(vocab.encode("L'homme est là.")) == "l'homme est là."
    ids = vocab.encode("je suis fatigué.")
    # Decoding stops at END and skips PAD and START, as a word vocabulary does.
    assert vocab.decode([Vocabulary.START, *ids, Vocabulary.END, 5, 6, 0, 0]) == "je suis fatigué."


@agnostic
def test_text_spelt_with_training_characters_gets_no_unk(vocab):
    alphabet = set("".join(_normalized(text) for text in FRENCH)) - {" "}
    # Words the training text never holds, spelt with its characters only.
    unseen = "Les hommes sont très las. Où sont les chats ? Il faut l'été."
    assert set(_normalized(unseen)) - {" "} <= alphabet
    ids = vocab.encode(unseen)
    assert Vocabulary.UNK not in ids
    assert vocab.decode(ids) == _normalized(unseen)
    # A character training never saw is UNK, and decodes as "<unk>".
    assert "z" not in alphabet
    ids = vocab.encode("le zoo")
    assert Vocabulary.UNK in ids
    assert "<unk>" in vocab.decode(ids)


@agnostic
def test_reserved_ids_are_those_of_every_vocabulary(vocab):
    assert [vocab.id_to_token(i) for i in range(4)] == list(Vocabulary.SPECIAL_TOKENS)
    assert (vocab.PAD, vocab.START, vocab.END, vocab.UNK) == (0, 1, 2, 3)
    for text in FRENCH:
        ids = vocab.encode(text)
        assert ids and not {Vocabulary.PAD, Vocabulary.START, Vocabulary.END} & set(ids)
        assert vocab.encode(text, add_end=True) == [*ids, Vocabulary.END]
    assert isinstance(vocab, Vocabulary)
    # encode_batch (inherited) pads with PAD after END.
    batch = vocab.encode_batch(FRENCH[:3], 40, add_end=True)
    assert batch.shape == (3, 40) and batch[0, -1] == Vocabulary.PAD


@pytest.mark.parametrize("model_type,size", [("bpe", 120), ("unigram", 50)])
@agnostic
def test_the_vocabulary_has_vocab_size_ids_of_the_asked_model_type(model_type, size):
    vocab = SubwordVocabulary.train(FRENCH, size, model_type)
    assert len(vocab) == size == len(vocab.tokens)
    assert vocab.model_type == model_type
    # Every piece is made of characters of the training text ("▁" standing for a space).
    alphabet = set("".join(_normalized(text) for text in FRENCH)) | {"\u2581"}
    for piece in vocab.tokens[4:]:
        assert set(piece) <= alphabet, piece


@agnostic
def test_training_is_deterministic():
    first = SubwordVocabulary.train(FRENCH, 50, "unigram")
    second = SubwordVocabulary.train(list(FRENCH), 50, "unigram")
    assert first.model == second.model
    assert first == second


@agnostic
def test_config_round_trips_through_json_and_vocabulary_from_config(vocab):
    config = json.loads(json.dumps(vocab.get_config()))
    restored = Vocabulary.from_config(config)
    assert isinstance(restored, SubwordVocabulary)
    assert restored == vocab
    assert restored.tokens == vocab.tokens
    for text in FRENCH:
        assert restored.encode(text) == vocab.encode(text)
    # A word vocabulary's config still gives a word vocabulary, and the two never compare equal.
    words = Vocabulary.build(FRENCH)
    assert type(Vocabulary.from_config(words.get_config())) is Vocabulary
    assert words != vocab


@agnostic
def test_lowercase_false_keeps_case():
    vocab = SubwordVocabulary.train(FRENCH, 100, "bpe", lowercase=False)
    assert vocab.decode(vocab.encode("Je suis fatigué.")) == "Je suis fatigué."
    restored = Vocabulary.from_config(vocab.get_config())
    assert restored.lowercase is False


@agnostic
def test_bad_arguments_are_refused_naming_the_argument():
    with pytest.raises(ValueError, match=r"`vocab_size`.*from 8 to 65536, got 4"):
        SubwordVocabulary.train(FRENCH, 4, "bpe")
    with pytest.raises(ValueError, match=r"`vocab_size`.*got 100000"):
        SubwordVocabulary.train(FRENCH, 100_000, "bpe")
    with pytest.raises(ValueError, match=r"`vocab_size`: 5000 .*at most \d+ for this text"):
        SubwordVocabulary.train(FRENCH, 5000, "unigram")
    # Fewer ids than the text's characters and the 4 special ids need: raise it, not lower it.
    alphabet = ["Élève àbcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789 ÉÈÊ"]
    with pytest.raises(
        ValueError, match=r"`vocab_size`: 30 is fewer ids .* Raise `vocab_size` to at least 7\d\."
    ):
        SubwordVocabulary.train(alphabet * 5, 30, "unigram", lowercase=False)
    with pytest.raises(ValueError, match="`model_type`"):
        SubwordVocabulary.train(FRENCH, 60, "wordpiece")
    with pytest.raises(ValueError, match="`texts`"):
        SubwordVocabulary.train(["", "   "], 60, "bpe")
    with pytest.raises(ValueError, match="`model`"):
        SubwordVocabulary(b"not a model")
    with pytest.raises(ValueError, match="`config`"):
        Vocabulary.from_config({"subword": {"model": "AAAA", "extra": 1}})


def _pairs(sentences):
    """Each sentence on both sides (one `vocab_size` serves both vocabularies)."""
    return [(text, text) for text in sentences]


@pytest.mark.parametrize("tokenizer", ["bpe", "unigram"])
@agnostic
def test_subword_vocabularies_are_learnt_from_the_training_split_only(tokenizer):
    train = _pairs(FRENCH)
    size = {"bpe": 120, "unigram": 50}[tokenizer]
    # Validation holds characters and words training never saw; it must not change the pieces.
    task_a = task_from_pairs(
        train, [("Zébu xylophone.", "Zébu xylophone kiwi.")], tokenizer=tokenizer, vocab_size=size
    )
    task_b = task_from_pairs(
        train, [("Wagon.", "Wagon yack.")], tokenizer=tokenizer, vocab_size=size
    )
    alone = SubwordVocabulary.train([t for _, t in train], size, tokenizer, lowercase=False)
    assert task_a.target_vocabulary == task_b.target_vocabulary == alone
    assert task_a.source_vocabulary == task_b.source_vocabulary == alone
    assert task_a.target_vocabulary.encode("zébu").count(Vocabulary.UNK) >= 1
    # The arrays hold the vocabularies' ids: row 0 of the targets is FRENCH[0] and END.
    row = task_a.y_train[0].tolist()
    assert row[: row.index(Vocabulary.END) + 1] == alone.encode(FRENCH[0], add_end=True)
    assert task_a.targets.vocab_size == size


@agnostic
def test_task_arguments_for_the_other_tokenizer_are_refused():
    train, val = _pairs(FRENCH), [("x", "Je suis là.")]
    with pytest.raises(ValueError, match=r"`vocab_size`.*needs one"):
        task_from_pairs(train, val, tokenizer="bpe")
    with pytest.raises(ValueError, match=r"`vocab_size`.*max_vocab_size"):
        task_from_pairs(train, val, vocab_size=100)
    with pytest.raises(ValueError, match="`max_vocab_size`"):
        task_from_pairs(train, val, tokenizer="unigram", vocab_size=60, max_vocab_size=50)
    with pytest.raises(ValueError, match="`tokenizer`"):
        task_from_pairs(train, val, tokenizer="chars", vocab_size=60)


REPOSITORY = pathlib.Path(__file__).resolve().parents[3]
TATOEBA = REPOSITORY.parent / "shared" / "data" / "tatoeba-eng-fra-sample.tsv"


@pytest.mark.skipif(not TATOEBA.is_file(), reason=f"the Tatoeba sample is not at {TATOEBA}")
@agnostic
def test_real_french_round_trips_and_unseen_sentences_get_no_unk():
    lines = TATOEBA.read_text(encoding="utf-8").splitlines()
    french = [line.split("\t")[1] for line in lines if "\t" in line]
    train, held_out = french[:8000], french[8000:]
    vocab = SubwordVocabulary.train(train, 2000, "bpe")
    for text in train[:500]:
        assert vocab.decode(vocab.encode(text)) == _normalized(text)
    alphabet = set("".join(_normalized(text) for text in train))
    spelt = [t for t in held_out if set(_normalized(t)) <= alphabet]
    assert len(spelt) > 0.9 * len(held_out)
    for text in spelt:
        ids = vocab.encode(text)
        assert Vocabulary.UNK not in ids
        assert vocab.decode(ids) == _normalized(text)


EDGE_CASES = ["", "   ", "xyz zzz ÿ", "Le  Chat\tNOIR!", "e\u0301te\u0301", "Qu'est-ce ?"]


def _held_out_french():
    """Sentences to encode in the graph: the Tatoeba sample's last French ones, or FRENCH."""
    if not TATOEBA.is_file():
        return FRENCH, FRENCH
    lines = TATOEBA.read_text(encoding="utf-8").splitlines()
    french = [line.split("\t")[1] for line in lines if "\t" in line]
    return french[:8000], french[8000:]


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_the_graph_encoder_gives_the_ids_of_sentencepiece(model_type):
    tf = pytest.importorskip("tensorflow")
    from keras_seq.tasks.subword_graph import tf_subword_encoder

    train, held_out = _held_out_french()
    size = 2000 if len(train) > 1000 else 60
    vocab = SubwordVocabulary.train(train, size, model_type)
    texts = [*held_out, *EDGE_CASES]
    encoded = tf.function(tf_subword_encoder(vocab))(tf.constant(texts)).to_list()
    for text, ids in zip(texts, encoded, strict=True):
        assert ids == vocab.encode(text), text
