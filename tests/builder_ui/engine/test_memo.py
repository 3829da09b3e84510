"""`StoreMemo`: a value read from a run store is kept until the store changes, never longer."""

from __future__ import annotations

from builder_ui.engine.memo import StoreMemo
from builder_ui.engine.store import RunStore

SPEC = {"task": {"type": "long_lag"}, "model": {"type": "sequence_classifier"}}


def test_a_value_is_made_once_while_the_store_is_unchanged_and_again_after_a_change(tmp_path):
    with RunStore(tmp_path / "runs") as store:
        memo = StoreMemo(store)
        made = []

        def names():
            made.append(1)
            return [record.name for record in store.list_runs()]

        assert memo.get("names", names) == [] and memo.get("names", names) == []
        assert len(made) == 2  # no database yet: nothing is kept
        store.create_run(SPEC, name="first")
        assert memo.get("names", names) == ["first"]
        assert memo.get("names", names) == ["first"]
        assert len(made) == 3
        store.create_run(SPEC, name="second")
        assert memo.get("names", names) == ["first", "second"]
        assert len(made) == 4


def test_keys_are_kept_apart_and_the_least_recently_used_goes_first(tmp_path):
    with RunStore(tmp_path / "runs") as store:
        store.create_run(SPEC, name="only")
        memo = StoreMemo(store, size=2)
        made = []

        def make(key):
            return lambda: made.append(key) or key

        assert [memo.get(key, make(key)) for key in "aba"] == ["a", "b", "a"]
        assert made == ["a", "b"]
        memo.get("c", make("c"))  # "b" was used least recently: it goes
        memo.get("a", make("a"))
        memo.get("b", make("b"))
        assert made == ["a", "b", "c", "b"]
