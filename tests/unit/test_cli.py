"""The `shiftbed` dispatcher: bad command lines exit 2 with a short message."""

import subprocess
import sys

import pytest

from scenarios import cli


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "scenarios.cli", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("args", [[], ["bogus"], ["plan"], ["sweep", "--samples", "many"]])
def test_bad_command_lines_exit_2_with_a_short_message(args):
    result = run_cli(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 3, result.stderr
    assert "Traceback" not in result.stderr


def test_every_subcommand_module_has_the_interface():
    import importlib

    for name, (module_name, _help) in cli.SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        assert callable(module.add_arguments), name
        assert callable(module.run), name
