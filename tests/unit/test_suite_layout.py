"""The suite collects as one: pytest imports test modules by their file name (no packages here), so
two test files with one name in different folders stop the whole run at collection."""

import collections
import pathlib

TESTS = pathlib.Path(__file__).resolve().parents[1]


def test_every_test_module_name_is_unique():
    names = collections.Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert not [name for name, count in names.items() if count > 1]
