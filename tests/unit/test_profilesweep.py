"""`sweep --profiles`: mixes of model profiles, their patterns beside one rectangle each."""

import json
import math

import pytest

from controller.theory import profilesweep
from controller.theory.phases import busy_total_ms
from scenarios import cli

SMALL = profilesweep.ProfileSweep(models=("resnet50", "bert-base", "dlrm"), workers=(4, 8), jobs=(2, 3), samples=4,
                                  seed=5, horizon_periods=10)


def test_the_rectangle_form_sends_the_same_bytes_in_the_same_iteration():
    mix = profilesweep.draw_mix(SMALL, 3, 0)
    (patterns, _), (rectangles, grid) = profilesweep.forms(SMALL, mix).values()
    for (model, workers, cap), p, r, g in zip(mix, patterns, rectangles, grid, strict=True):
        found = profilesweep.job_pattern(model, workers, cap, SMALL.link_mbps, SMALL.dtype)
        assert r.period_ms == p.period_ms == found.iteration_ms
        assert r.comm_ms == pytest.approx(p.comm_ms) == pytest.approx(busy_total_ms(found, SMALL.link_mbps))
        assert len(r.phases) == 1 and len(p.phases) == len(found.phases)
        assert g.arcs == ((0, math.ceil(r.comm_ms / SMALL.quantum_ms - 1e-9)),)


def test_a_combination_depends_on_its_seed_jobs_and_index_only():
    assert profilesweep.draw_mix(SMALL, 2, 3) == profilesweep.draw_mix(SMALL, 2, 3)
    assert profilesweep.draw_mix(SMALL, 2, 3) != profilesweep.draw_mix(SMALL, 2, 2)
    one = profilesweep.run(SMALL, workers=1, chunk=3)
    assert [r.jobs for r in one] == [profilesweep.draw_mix(SMALL, n, k) for n in (2, 3) for k in range(4)]
    assert profilesweep.summarise(one, 0.01) == profilesweep.summarise(profilesweep.run(SMALL, workers=1, chunk=1), 0.01)


def test_the_command_reports_both_forms_and_refuses_bad_options(capsys):
    assert cli.main(["sweep", "--profiles", "resnet50,bert-base", "--jobs", "2", "--samples", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["combinations"] == 3
    for form in ("patterns", "rectangles"):
        assert set(out[form]["policies"]) == {"shift", "gate", "priority"}
        shift = out[form]["policies"]["shift"]
        assert shift["helps_fraction"] + shift["neutral_fraction"] + shift["hurts_fraction"] == pytest.approx(1)
    for bad, words in ((["--profiles", "resnet5"], "--profiles: unknown"),
                       (["--profiles", "pipeline", "--profile-workers", "2"], "--profile-workers"),
                       (["--profiles", "all", "--quantum-ms", "1,10"], "one quantum"),
                       (["--profiles", "all", "--horizon-s", "3"], "--horizon-s")):
        assert cli.main(["sweep", *bad]) == 2
        assert words in capsys.readouterr().err
