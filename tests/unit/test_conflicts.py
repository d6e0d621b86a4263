"""The conflict graph of jobs over directed links (controller.theory.conflicts)."""

import pytest

from controller.theory.conflicts import ConflictGraph, components

UP1, UP2, UP3 = ("up", 1, 1), ("up", 2, 1), ("up", 3, 1)


def chain():
    return ConflictGraph.from_links({"a": {UP1, UP2}, "b": {UP2, UP3, ("host-up", "h4")}, "c": {UP3}, "d": set()})


def test_shared_links_list_their_jobs():
    assert chain().shared_links() == {UP2: ["a", "b"], UP3: ["b", "c"]}


def test_pairs_are_only_the_jobs_that_meet():
    graph = chain()
    assert graph.pairs() == {("a", "b"): [UP2], ("b", "c"): [UP3]}
    assert graph.pair_weights() == {frozenset("ab"): 1, frozenset("bc"): 1}


def test_weight_counts_shared_links():
    graph = ConflictGraph.from_links({"a": {UP1, UP2, UP3}, "b": {UP1, UP3}, "c": {("host-up", "h9")}})
    assert graph.weight("a", "b") == graph.weight("b", "a") == 2
    assert graph.weight("a", "c") == 0
    with pytest.raises(KeyError, match="no job 'z'"):
        graph.weight("a", "z")


def test_components_keep_lonely_jobs_apart():
    assert chain().components() == [["a", "b", "c"], ["d"]]
    two = ConflictGraph.from_links({"x": {UP1}, "y": {UP1}, "p": {UP2}, "q": {UP2}})
    assert two.components() == [["p", "q"], ["x", "y"]]


def test_components_of_plain_edges():
    assert components(["e", "d", "c", "b", "a"], [("a", "c"), frozenset("de")]) == [["a", "c"], ["b"], ["d", "e"]]


def test_links_of_mixed_kinds_sort_stably():
    graph = ConflictGraph.from_links({"a": {("up", 1, 1), ("host-up", "h1"), "x"}, "b": {("up", 1, 1), "x"}})
    assert graph.pairs()[("a", "b")] == sorted([("up", 1, 1), "x"], key=repr)
