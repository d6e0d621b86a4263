"""The conflict graph of jobs over directed links (controller.theory.conflicts)."""

import pytest

from controller.theory.conflicts import ConflictGraph, components, index_components, weight_matrix

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


def test_weight_matrix_is_symmetric_and_zero_where_not_listed():
    w = weight_matrix(["a", "b", "c"], {frozenset("ab"): 2, frozenset("bc"): 1})
    assert w == [[0, 2, 0], [2, 0, 1], [0, 1, 0]]
    assert weight_matrix(["a", "b"], None) is None
    with pytest.raises(ValueError, match="names must be distinct"):
        weight_matrix(["a", "a"], {})


def test_index_components_follow_positive_weights():
    w = weight_matrix(list("abcd"), {frozenset("ad"): 1, frozenset("bc"): 0})
    assert index_components(4, w) == [[0, 3], [1], [2]]
    assert index_components(3, None) == [[0, 1, 2]]


def test_the_graph_gives_the_schedules_weights():
    graph = ConflictGraph.from_links({"a": {UP1, UP2}, "b": {UP1, UP2}, "c": {UP3}})
    assert graph.pair_weights() == {frozenset("ab"): 2}
    assert index_components(3, weight_matrix(graph.jobs, graph.pair_weights())) == [[0, 1], [2]]
