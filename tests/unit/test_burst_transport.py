"""iperf3 from 3.16 ends a test at its next report tick: a scenario that leaves the transport to the
default runs over standing connections there, and says so; one that asks for iperf3 is refused."""

from pathlib import Path

import pytest

from apps import iperf
from scenarios import spec
from scenarios.errors import InputError
from scenarios.runnable import burst_transport_here

REPO = Path(__file__).resolve().parents[2]
CLASSROOM = REPO / "scenarios" / "classroom.yaml"


def test_the_version_is_read_as_iperf3_prints_it():
    version = iperf.installed_version()
    assert version is None or (version[0] == 3 and version[1] >= 0)


@pytest.mark.parametrize("version", [(3, 12), (3, 15), None])
def test_an_iperf3_that_ends_tests_on_time_changes_nothing(version):
    scenario, text = spec.load(CLASSROOM), CLASSROOM.read_text()
    assert not scenario.transport_given and scenario.transport == "iperf3"
    assert burst_transport_here(scenario, text, version or (3, 12)) == (scenario, text)


def test_the_default_transport_becomes_standing_connections_and_the_kept_file_says_so(capsys):
    scenario, text = spec.load(CLASSROOM), CLASSROOM.read_text()
    changed, kept = burst_transport_here(scenario, text, (3, 18))
    assert changed.transport == "persistent" and changed.jobs == scenario.jobs
    assert kept.startswith(text.rstrip("\n")) and spec.parse(kept).transport == "persistent"
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "iperf3 3.18" in said[0] and "persistent" in said[0]


def test_a_scenario_that_asks_for_iperf3_is_refused_in_one_line():
    text = CLASSROOM.read_text() + "transport: iperf3\n"
    scenario = spec.parse(text, str(CLASSROOM))
    assert scenario.transport_given
    with pytest.raises(InputError) as info:
        burst_transport_here(scenario, text, (3, 18))
    assert "transport: iperf3" in str(info.value) and "\n" not in str(info.value)
    given = spec.parse(CLASSROOM.read_text() + "transport: persistent\n")
    assert burst_transport_here(given, "", (3, 18)) == (given, "")
