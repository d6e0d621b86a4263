"""The `shiftbed` dispatcher: bad command lines exit 2 with a short message."""

import os
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


def test_a_reader_that_has_gone_gets_no_traceback():
    """`shiftbed plan ... | head -1`: the pipe's reader has closed before we write."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "scenarios.cli", "plan", "scenarios/three-jobs.yaml"],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60,
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1
