"""A toy English→French corpus from a small grammar, with what makes translation hard.

Real corpora are large and their hard cases rare; this grammar makes the
hard cases common and the vocabulary small, so that a model trains in
seconds and its failures can be read:

- Word order: French puts most adjectives after the noun ("the black cat" →
  "le chat noir"), a few before it ("the small cat" → "le petit chat"), so
  "the small black cat" → "le petit chat noir".
- Agreement: articles and adjectives take the noun's gender and number
  ("la maison blanche", "les maisons blanches"); verbs take the subject's
  number, also across a relative clause ("the cats that see the dog sleep"
  → "les chats qui voient le chien dorment").
- Lengths differ: "does not" / "doesn't" → "ne … pas" around the verb,
  "to the" → "au", "near the" → "près du" / "près de la", "because" → "parce
  que", elision ("the man" → "l'homme", "does not love" → "n'aime pas"), and
  negation turns an indefinite object into "de" ("a dog" → "pas de chien").
- Long sentences: clauses joined by "and", "but", "because", "while" and
  relative clauses ("that"/"who" → "qui" for a subject, "que" for an object)
  reach 40 tokens and more, past what a fixed-vector encoder keeps.

Every English sentence has exactly one French translation (the grammar is
deterministic given the English), so a perfect model can reach BLEU 100.
French forms follow standard grammar for the words used; the meanings are
random ("the sad bottle laughs").

Length control, in source tokens (as `Vocabulary.tokenize` counts them, the
final "." included): for each sentence a target length `L` is drawn uniformly
from `[min_len, max_len]`; a first clause that fits in `L − 1` tokens is
generated, then clauses are joined with a conjunction while at least 4 tokens
of room are left, each drawn (up to 30 tries, simpler on each try) to fit the
room left. The sentence is kept if its length is within `[min_len, max_len]`
and its English is new, otherwise a new one is drawn.
"""

from __future__ import annotations

import random

from keras_seq import argument_checks
from keras_seq.tasks.base import split_sizes
from keras_seq.tasks.parallel_text import split_pairs, task_from_pairs

# The shortest sentence: "the cat sleeps ." is 4 tokens.
MIN_SENTENCE_LENGTH = 4

# The longest sentence the generator is asked for.
MAX_SENTENCE_LENGTH = 200

# Most pairs one call makes.
MAX_PAIRS = 1_000_000

# ------------------------------------------------------------------------------------ lexicon
# Nouns: English singular, English plural, French singular, French plural,
# gender ("m"/"f"), human (English "who" in subject relative clauses).
NOUNS = (
    ("cat", "cats", "chat", "chats", "m", False),
    ("dog", "dogs", "chien", "chiens", "m", False),
    ("house", "houses", "maison", "maisons", "f", False),
    ("car", "cars", "voiture", "voitures", "f", False),
    ("man", "men", "homme", "hommes", "m", True),
    ("woman", "women", "femme", "femmes", "f", True),
    ("child", "children", "enfant", "enfants", "m", True),
    ("bird", "birds", "oiseau", "oiseaux", "m", False),
    ("tree", "trees", "arbre", "arbres", "m", False),
    ("flower", "flowers", "fleur", "fleurs", "f", False),
    ("book", "books", "livre", "livres", "m", False),
    ("table", "tables", "table", "tables", "f", False),
    ("city", "cities", "ville", "villes", "f", False),
    ("garden", "gardens", "jardin", "jardins", "m", False),
    ("horse", "horses", "cheval", "chevaux", "m", False),
    ("friend", "friends", "ami", "amis", "m", True),
    ("teacher", "teachers", "professeur", "professeurs", "m", True),
    ("student", "students", "étudiant", "étudiants", "m", True),
    ("boy", "boys", "garçon", "garçons", "m", True),
    ("girl", "girls", "fille", "filles", "f", True),
    ("apple", "apples", "pomme", "pommes", "f", False),
    ("bottle", "bottles", "bouteille", "bouteilles", "f", False),
    ("letter", "letters", "lettre", "lettres", "f", False),
    ("door", "doors", "porte", "portes", "f", False),
    ("window", "windows", "fenêtre", "fenêtres", "f", False),
    ("chair", "chairs", "chaise", "chaises", "f", False),
    ("river", "rivers", "rivière", "rivières", "f", False),
    ("mountain", "mountains", "montagne", "montagnes", "f", False),
    ("boat", "boats", "bateau", "bateaux", "m", False),
    ("train", "trains", "train", "trains", "m", False),
    ("road", "roads", "route", "routes", "f", False),
    ("song", "songs", "chanson", "chansons", "f", False),
    ("king", "kings", "roi", "rois", "m", True),
    ("queen", "queens", "reine", "reines", "f", True),
    ("doctor", "doctors", "médecin", "médecins", "m", True),
    ("mouse", "mice", "souris", "souris", "f", False),
    ("wolf", "wolves", "loup", "loups", "m", False),
    ("shirt", "shirts", "chemise", "chemises", "f", False),
    ("hat", "hats", "chapeau", "chapeaux", "m", False),
    ("island", "islands", "île", "îles", "f", False),
)

# Adjectives: English, French masculine singular, feminine singular,
# masculine plural, feminine plural, and whether French puts it before the
# noun (the few "beauty, age, goodness, size" adjectives) rather than after.
ADJECTIVES = (
    ("black", "noir", "noire", "noirs", "noires", False),
    ("white", "blanc", "blanche", "blancs", "blanches", False),
    ("red", "rouge", "rouge", "rouges", "rouges", False),
    ("green", "vert", "verte", "verts", "vertes", False),
    ("blue", "bleu", "bleue", "bleus", "bleues", False),
    ("yellow", "jaune", "jaune", "jaunes", "jaunes", False),
    ("happy", "heureux", "heureuse", "heureux", "heureuses", False),
    ("sad", "triste", "triste", "tristes", "tristes", False),
    ("tired", "fatigué", "fatiguée", "fatigués", "fatiguées", False),
    ("rich", "riche", "riche", "riches", "riches", False),
    ("strong", "fort", "forte", "forts", "fortes", False),
    ("fast", "rapide", "rapide", "rapides", "rapides", False),
    ("slow", "lent", "lente", "lents", "lentes", False),
    ("heavy", "lourd", "lourde", "lourds", "lourdes", False),
    ("brave", "courageux", "courageuse", "courageux", "courageuses", False),
    ("angry", "fâché", "fâchée", "fâchés", "fâchées", False),
    ("cold", "froid", "froide", "froids", "froides", False),
    ("famous", "célèbre", "célèbre", "célèbres", "célèbres", False),
    ("small", "petit", "petite", "petits", "petites", True),
    ("big", "grand", "grande", "grands", "grandes", True),
    ("young", "jeune", "jeune", "jeunes", "jeunes", True),
    ("good", "bon", "bonne", "bons", "bonnes", True),
)

# Verbs: English third person singular, English base form (plural and after
# "does not"), French third person singular, French third person plural, and
# the kind: "intransitive", "transitive" or "ditransitive" (… X to Y → … X à Y).
VERBS = (
    ("sleeps", "sleep", "dort", "dorment", "intransitive"),
    ("runs", "run", "court", "courent", "intransitive"),
    ("sings", "sing", "chante", "chantent", "intransitive"),
    ("dances", "dance", "danse", "dansent", "intransitive"),
    ("laughs", "laugh", "rit", "rient", "intransitive"),
    ("arrives", "arrive", "arrive", "arrivent", "intransitive"),
    ("waits", "wait", "attend", "attendent", "intransitive"),
    ("sees", "see", "voit", "voient", "transitive"),
    ("loves", "love", "aime", "aiment", "transitive"),
    ("eats", "eat", "mange", "mangent", "transitive"),
    ("watches", "watch", "regarde", "regardent", "transitive"),
    ("finds", "find", "trouve", "trouvent", "transitive"),
    ("takes", "take", "prend", "prennent", "transitive"),
    ("carries", "carry", "porte", "portent", "transitive"),
    ("follows", "follow", "suit", "suivent", "transitive"),
    ("knows", "know", "connaît", "connaissent", "transitive"),
    ("hears", "hear", "entend", "entendent", "transitive"),
    ("opens", "open", "ouvre", "ouvrent", "transitive"),
    ("buys", "buy", "achète", "achètent", "transitive"),
    ("draws", "draw", "dessine", "dessinent", "transitive"),
    ("gives", "give", "donne", "donnent", "ditransitive"),
    ("shows", "show", "montre", "montrent", "ditransitive"),
    ("sends", "send", "envoie", "envoient", "ditransitive"),
)

# Prepositions: English words, French words (before the article).
PREPOSITIONS = (
    (("near",), ("près", "de")),
    (("next", "to"), ("à", "côté", "de")),
    (("in",), ("dans",)),
    (("under",), ("sous",)),
    (("behind",), ("derrière",)),
    (("with",), ("avec",)),
)

# Conjunctions joining clauses.
CONJUNCTIONS = (
    (("and",), ("et",)),
    (("but",), ("mais",)),
    (("because",), ("parce", "que")),
    (("while",), ("pendant", "que")),
)

# French words that lose their vowel before a vowel or a mute h ("le homme"
# → "l'homme"), and the contractions of "à"/"de" with the definite article.
_ELIDED = {"le": "l'", "la": "l'", "de": "d'", "que": "qu'", "ne": "n'"}
_CONTRACTED = {("à", "le"): "au", ("à", "les"): "aux", ("de", "le"): "du", ("de", "les"): "des"}
# "de" absorbs a following indefinite "des"/"de" ("près de chats", not "près
# de des chats"); done before elision, so that "de des étudiants" → "d'étudiants".
_ABSORBED = {("de", "des"), ("de", "de")}
_FRENCH_VOWELS = frozenset("aeiouyàâéèêëîïôûh")
_ENGLISH_VOWELS = frozenset("aeiou")

_TRANSITIVE = tuple(v for v in VERBS if v[4] != "intransitive")
_INTRANSITIVE = tuple(v for v in VERBS if v[4] == "intransitive")
_PRE_ADJECTIVES = tuple(a for a in ADJECTIVES if a[5])
_POST_ADJECTIVES = tuple(a for a in ADJECTIVES if not a[5])


# ------------------------------------------------------------------------------------ grammar
class _Grammar:
    """Draws English clauses and their French translations as token lists."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def noun_phrase(self, richness, depth, *, negated_object=False):
        """Returns (english, french, plural) for one noun phrase."""
        rng = self.rng
        noun = rng.choice(NOUNS)
        en_sg, en_pl, fr_sg, fr_pl, gender, human = noun
        plural = rng.random() < 0.4
        definite = rng.random() < 0.7
        feminine = gender == "f"
        pre = rng.choice(_PRE_ADJECTIVES) if rng.random() < 0.3 * richness else None
        post = rng.choice(_POST_ADJECTIVES) if rng.random() < 0.6 * richness else None
        form = 2 * plural + feminine + 1  # index of the French adjective form

        english_adjectives = [a[0] for a in (pre, post) if a is not None]
        english_noun = en_pl if plural else en_sg
        if definite:
            english = ["the"]
        elif plural:
            english = ["some"]
        else:
            first = (english_adjectives or [english_noun])[0]
            english = ["an" if first[0] in _ENGLISH_VOWELS else "a"]
        english += [*english_adjectives, english_noun]

        if negated_object and not definite:
            article = "de"  # "ne … pas de chien": negation replaces un/une/des
        elif definite:
            article = "les" if plural else ("la" if feminine else "le")
        elif plural:
            article = "de" if pre is not None else "des"  # "de petits chats"
        else:
            article = "une" if feminine else "un"
        french = [article]
        if pre is not None:
            french.append(pre[form])
        french.append(fr_pl if plural else fr_sg)
        if post is not None:
            french.append(post[form])

        if depth < 2 and rng.random() < 0.25 * richness:
            en_pp, fr_pp = self.prepositional_phrase(richness * 0.6, depth + 1)
            english += en_pp
            french += fr_pp
        if depth < 2 and rng.random() < 0.35 * richness:
            en_rel, fr_rel = self.relative_clause(plural, human, richness * 0.6, depth + 1)
            english += en_rel
            french += fr_rel
        return english, french, plural

    def prepositional_phrase(self, richness, depth):
        en_prep, fr_prep = self.rng.choice(PREPOSITIONS)
        english, french, _ = self.noun_phrase(richness, depth)
        return [*en_prep, *english], [*fr_prep, *french]

    def relative_clause(self, head_plural, head_human, richness, depth):
        """A subject ("that sees the dog") or object ("that the dog sees") relative clause."""
        rng = self.rng
        negated = rng.random() < 0.2
        if rng.random() < 0.6:
            # Subject relative: the verb agrees with the head noun.
            verb = rng.choice(VERBS)
            en_verb, fr_verb = self.verb_group(verb, head_plural, negated)
            en_obj, fr_obj = self.objects(verb, richness, depth, negated)
            english = ["who" if head_human else "that", *en_verb, *en_obj]
            french = ["qui", *fr_verb, *fr_obj]
        else:
            # Object relative: the verb agrees with the relative clause's subject.
            verb = rng.choice(_TRANSITIVE)
            en_subj, fr_subj, subj_plural = self.noun_phrase(richness * 0.5, depth + 1)
            en_verb, fr_verb = self.verb_group(verb, subj_plural, negated)
            english = ["that", *en_subj, *en_verb]
            french = ["que", *fr_subj, *fr_verb]
            if verb[4] == "ditransitive":
                en_io, fr_io = self.indirect_object(richness, depth)
                english += en_io
                french += fr_io
        return english, french

    def verb_group(self, verb, plural, negated):
        en_3sg, en_base, fr_3sg, fr_3pl, _ = verb
        fr_verb = fr_3pl if plural else fr_3sg
        if not negated:
            return [en_base if plural else en_3sg], [fr_verb]
        if self.rng.random() < 0.5:
            auxiliary = ["do", "not"] if plural else ["does", "not"]
        else:
            auxiliary = ["don't"] if plural else ["doesn't"]
        return [*auxiliary, en_base], ["ne", fr_verb, "pas"]

    def indirect_object(self, richness, depth):
        english, french, _ = self.noun_phrase(richness * 0.5, depth + 1)
        return ["to", *english], ["à", *french]

    def objects(self, verb, richness, depth, negated):
        kind = verb[4]
        if kind == "intransitive":
            return [], []
        en_obj, fr_obj, _ = self.noun_phrase(richness, depth, negated_object=negated)
        if kind == "ditransitive":
            en_io, fr_io = self.indirect_object(richness, depth)
            en_obj += en_io
            fr_obj += fr_io
        return en_obj, fr_obj

    def clause(self, richness, short=False):
        rng = self.rng
        en_subj, fr_subj, plural = self.noun_phrase(richness, 0)
        verb = rng.choice(_INTRANSITIVE if short or rng.random() < 0.25 else _TRANSITIVE)
        negated = rng.random() < 0.3 * richness
        en_verb, fr_verb = self.verb_group(verb, plural, negated)
        en_obj, fr_obj = self.objects(verb, richness, 0, negated)
        return [*en_subj, *en_verb, *en_obj], [*fr_subj, *fr_verb, *fr_obj]

    def fitting_clause(self, budget):
        """A clause of at most `budget` English tokens (budget ≥ 3), simpler on each try."""
        # Rich clauses for a large budget, plain ones (intransitive, few
        # modifiers) for a small one.
        richness = min(1.0, budget / 12)
        for _ in range(30):
            english, french = self.clause(richness, short=budget < 6)
            if len(english) <= budget:
                return english, french
            richness *= 0.8
        # The shortest clause: article, noun, intransitive verb.
        en_sg, _, fr_sg, _, gender, _ = self.rng.choice(NOUNS)
        en_verb, _, fr_verb, _, _ = self.rng.choice(_INTRANSITIVE)
        return ["the", en_sg, en_verb], ["la" if gender == "f" else "le", fr_sg, fr_verb]

    def sentence(self, target_length):
        """An English and a French sentence, the English of at most `target_length` tokens."""
        english, french = self.fitting_clause(target_length - 1)
        while target_length - 1 - len(english) >= 4:
            en_conj, fr_conj = self.rng.choice(CONJUNCTIONS)
            room = target_length - 1 - len(english) - len(en_conj)
            en_clause, fr_clause = self.fitting_clause(room)
            english += [*en_conj, *en_clause]
            french += [*fr_conj, *fr_clause]
        return [*english, "."], [*french, "."]


def _french_text(words):
    """Joins French words, applying elision and the article contractions.

    In this order: "de des" → "de"; elision ("le homme" → "l'homme"); then
    "à/de" + "le/les" → "au/aux/du/des", which elision has already ruled out
    before a vowel ("de l'homme", not "du homme").
    """
    absorbed = []
    for word in words:
        if absorbed and (absorbed[-1], word) in _ABSORBED:
            continue
        absorbed.append(word)
    words = absorbed
    elided = []
    for i, word in enumerate(words):
        if elided and elided[-1].endswith("'"):
            elided[-1] += word
            continue
        following = words[i + 1] if i + 1 < len(words) else ""
        if word in _ELIDED and following[:1] in _FRENCH_VOWELS:
            elided.append(_ELIDED[word])
        else:
            elided.append(word)
    joined = []
    for word in elided:
        if joined and (joined[-1], word) in _CONTRACTED:
            joined[-1] = _CONTRACTED[(joined[-1], word)]
        else:
            joined.append(word)
    return " ".join(joined)


# ------------------------------------------------------------------------------------ public
def toy_translation_pairs(n, min_len=5, max_len=20, seed=0):
    """`n` distinct English→French sentence pairs from the toy grammar.

    See the module docstring for the grammar and the length control.

    Args:
        n: Number of pairs, from 1 to `MAX_PAIRS`.
        min_len: Shortest English sentence in tokens (the final "." counted),
            from `MIN_SENTENCE_LENGTH` (4). Default 5.
        max_len: Longest English sentence, from `min_len` to
            `MAX_SENTENCE_LENGTH` (200). Default 20.
        seed: Non-negative integer seed of the generator (`random.Random`).

    Returns:
        A list of `n` `(english, french)` string pairs, tokens separated by
        single spaces, no two with the same English sentence.

    Raises:
        ValueError: On a bad argument, or if the grammar cannot make `n`
            distinct sentences in the length range (only for very short
            ranges and very large `n`).

    Example:

    >>> pairs = toy_translation_pairs(3, 4, 8, seed=0)
    >>> all(4 <= len(en.split()) <= 8 for en, fr in pairs)
    True
    """
    n = argument_checks.positive_int("n", n, MAX_PAIRS)
    min_len, max_len = _check_lengths(min_len, max_len)
    seed = argument_checks.seed("seed", seed)
    grammar = _Grammar(random.Random(seed))
    seen = set()
    pairs = []
    # Distinct short sentences run out first; allow many redraws before giving up.
    budget = 50 * n + 1000
    for _ in range(budget):
        english, french = grammar.sentence(grammar.rng.randint(min_len, max_len))
        if not min_len <= len(english) <= max_len:
            continue
        source = " ".join(english)
        if source in seen:
            continue
        seen.add(source)
        pairs.append((source, _french_text(french)))
        if len(pairs) == n:
            return pairs
    raise ValueError(
        f"Received an invalid value for argument `n`: the toy grammar made only {len(pairs)} "
        f"distinct sentences of {min_len} to {max_len} tokens in {budget} draws, fewer than "
        f"n={n}. Widen the length range or ask for fewer pairs."
    )


def toy_translation(
    n, min_len=5, max_len=20, seed=0, *, validation_split=0.1, tokenizer="word", vocab_size=None
):
    """An English→French translation task from a small grammar: `toy_translation_pairs` encoded.

    The pairs are those of `toy_translation_pairs(n, min_len, max_len,
    seed)`, split by `split_pairs(pairs, validation_split, seed)` (every
    English sentence is distinct, so validation shares no sentence with
    training) and encoded by `task_from_pairs` with vocabularies built from
    the training split. To get the validation text, call those two functions
    with the same arguments.

    With `max_len` of 40 and more, the longest sentences are long enough that
    a model encoding the source into one fixed vector loses them, while an
    attention model does not (Bahdanau, Cho & Bengio 2015, figure 2).

    Args:
        n: Number of pairs, train and validation together.
        min_len: Shortest English sentence in tokens, at least 4. Default 5.
        max_len: Longest English sentence in tokens, at most 200. Default 20.
        seed: Non-negative integer seed of the sentences and of the split.
        validation_split: Fraction of the pairs for validation, in (0, 1).
            Default 0.1.
        tokenizer: `"word"` (default), `"bpe"` or `"unigram"`: the
            vocabularies' tokens (see `task_from_pairs`); the lengths above
            count words either way.
        vocab_size: Ids per subword vocabulary (`"bpe"`, `"unigram"`).

    Returns:
        A `TaskData` named `"toy_translation"`: `x` int32 `(n, S)` English ids,
        `y` int32 `(n, T)` French ids followed by END, both right-padded with
        PAD, `TargetSpec("sequence")`, and the English (`source_vocabulary`)
        and French (`target_vocabulary`) vocabularies.

    Example:

    >>> task = toy_translation(200, 5, 12, seed=0)
    >>> task.num_train, task.num_val
    (180, 20)
    >>> task.x_train.shape[1] <= 12
    True

    References:
        - Bahdanau, Cho & Bengio, "Neural Machine Translation by Jointly
          Learning to Align and Translate", ICLR 2015.
        - Sutskever, Vinyals & Le, "Sequence to Sequence Learning with Neural
          Networks", NeurIPS 2014.
    """
    n = argument_checks.positive_int("n", n, MAX_PAIRS)
    min_len, max_len = _check_lengths(min_len, max_len)
    seed = argument_checks.seed("seed", seed)
    validation_split, _, _ = split_sizes(n, validation_split)
    pairs = toy_translation_pairs(n, min_len, max_len, seed)
    train, val = split_pairs(pairs, validation_split, seed)
    params = {
        "n": n,
        "min_len": min_len,
        "max_len": max_len,
        "seed": seed,
        "validation_split": validation_split,
    }
    if tokenizer != "word" or vocab_size is not None:
        params.update(tokenizer=tokenizer, vocab_size=vocab_size)  # word tasks' params as before
    return task_from_pairs(
        train,
        val,
        tokenizer=tokenizer,
        vocab_size=vocab_size,
        name="toy_translation",
        params=params,
        description=(
            f"Translate English sentences of {min_len} to {max_len} tokens, generated from a "
            "small grammar, into French: adjectives after the noun, gender and number "
            "agreement, ne … pas, elision and contractions, relative clauses and "
            "conjunctions. Validation shares no sentence with training."
        ),
    )


def _check_lengths(min_len, max_len):
    min_len = argument_checks.int_in_range(
        "min_len", min_len, MIN_SENTENCE_LENGTH, MAX_SENTENCE_LENGTH
    )
    max_len = argument_checks.int_in_range("max_len", max_len, min_len, MAX_SENTENCE_LENGTH)
    return min_len, max_len
