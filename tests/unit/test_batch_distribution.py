"""The batch report's sweep fractions (``scenarios/batch/distribution.py``): what ``shiftbed sweep`` says of
the distribution a batch draws from, for the batch's own settings, and where the report shows it."""

import json
import pathlib
import subprocess
import sys

import pytest

from controller.theory import zoo
from scenarios.analysis.verdict import THRESHOLD_PCT
from scenarios.batch.distribution import sweep_fractions

SHIFTBED = str(pathlib.Path(sys.executable).with_name("shiftbed"))
SETTINGS = {"jobs": [2, 3], "period_ms": [100, 1000], "comm_frac": [0.1, 0.5], "quantum_ms": 1.0, "seed": 3,
            "zoo": False, "zoo_link_mbps": zoo.DEFAULT_MODEL_LINK_MBPS, "policies": ["none", "shift", "gate"],
            "threshold_pct": THRESHOLD_PCT}


@pytest.fixture(scope="module")
def fractions():
    return sweep_fractions(SETTINGS, samples=100)


def test_the_fractions_are_shiftbed_sweeps_for_the_batchs_settings(fractions):
    result = subprocess.run([SHIFTBED, "sweep", "--policy", "shift,gate", "--samples", "100", "--seed", "3",
                             "--jobs", "2,3", "--period-ms", "100:1000", "--comm-frac", "0.1:0.5", "--quantum-ms", "1",
                             "--json"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    swept = json.loads(result.stdout)["policies"]
    assert set(fractions) == {"shift", "gate"} == set(swept)
    for policy, outcomes in fractions.items():
        for outcome, f in outcomes.items():
            assert f["n"] == 200 and f["count"] == round(f["fraction"] * 200)
            assert f["fraction"] == pytest.approx(swept[policy][f"{outcome}_fraction"])
            assert f["ci95"] == pytest.approx(swept[policy]["ci95"][outcome], abs=1e-4)


def test_another_seed_draws_another_sample():
    assert sweep_fractions({**SETTINGS, "seed": 4}, samples=100) != sweep_fractions(SETTINGS, samples=100)


def test_with_a_mix_the_fractions_are_shiftbed_sweeps_at_that_mix():
    mixed = {**SETTINGS, "mix": 0.5}
    result = subprocess.run([SHIFTBED, "sweep", "--policy", "shift,gate", "--samples", "60", "--seed", "3",
                             "--jobs", "2,3", "--comm-frac", "0.1:0.5", "--quantum-ms", "1", "--mix", "0.5",
                             "--json"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    swept = json.loads(result.stdout)
    assert swept["settings"]["mix"] == 0.5
    fractions = sweep_fractions(mixed, samples=60)
    for policy, outcomes in fractions.items():
        for outcome, f in outcomes.items():
            assert f["fraction"] == pytest.approx(swept["policies"][policy][f"{outcome}_fraction"])
    assert fractions != sweep_fractions(SETTINGS, samples=60)
