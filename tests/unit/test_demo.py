"""`shiftbed demo` hands `shiftbed run` the arguments its own parser makes (no root needed)."""

import pytest

from scenarios.commands import demo
from scenarios.commands import run as run_command
from scenarios.errors import EnvironmentProblem


@pytest.mark.parametrize("name", demo.DEMO_SCENARIOS)
def test_every_demo_scenario_passes_the_run_commands_input_checks(name, tmp_path, monkeypatch):
    args = demo.run_arguments(demo.SCENARIOS_DIR / name, 6.0, str(tmp_path))
    assert (args.duration, args.out, args.policy) == ("6", str(tmp_path), None)
    monkeypatch.setattr(run_command.os, "geteuid", lambda: 1000)  # stop where the fabric would be built
    with pytest.raises(EnvironmentProblem, match="needs root"):
        run_command.run(args)
