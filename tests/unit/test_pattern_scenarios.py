"""Pattern jobs in the scenario format: `phases:` and `profile:`, decided exactly by `plan`.

A job given by its phases (the shape `shiftbed trace --out` writes) or by a model profile is planned on
its busy quanta (`arcs`, `patternschedule`); every bad pattern is one line and exit status 2; `run`
refuses one it cannot run (over iperf3, under a policy other than none, shift and gate, at a time scale),
and the batch and the explorer refuse every pattern job, before anything is built. No root.
"""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.theory import arcs, profiles
from scenarios import cli, spec
from scenarios.errors import InputError

TRACES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"
SHIFTBED = Path(sys.executable).with_name("shiftbed")
MS_AT_10G = 1_250_000  # a 2-worker all-reduce of this many bytes keeps a link at 10000 Mbit/s busy 1 ms


def job(name, period_ms, busy_ms, workers):
    """A phases job on 1 ms quanta: one phase per (start_ms, length_ms), each exactly that long on the link."""
    phases = [{"start_ms": start, "message_bytes": length * MS_AT_10G, "collective": "allreduce"}
              for start, length in busy_ms]
    return {"name": name, "period_ms": period_ms, "phases": phases, "workers": workers}


# the worked examples: the busy total decides nothing either way
NEVER_APART = [job("a", 12, [(0, 1), (2, 1), (4, 1)], ["h1", "h2"]), job("b", 18, [(0, 2)], ["h3", "h4"])]
APART_AT_0_1_2 = [job("a", 12, [(0, 2), (6, 2)], ["h1", "h2"]),
                  job("b", 18, [(2, 2), (8, 2), (14, 2)], ["h3", "h4"])]


def write(tmp_path, jobs, **top):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"name": "patterns", **top, "jobs": jobs}, sort_keys=False))
    return path


def plan_json(capsys, path, *args):
    assert cli.main(["plan", str(path), "--json", *args]) == 0
    out = capsys.readouterr()
    assert out.err == ""
    return json.loads(out.out)


def test_never_apart_though_the_busy_total_fits_the_gcd(tmp_path, capsys):
    path = write(tmp_path, NEVER_APART)
    plan = plan_json(capsys, path)
    (pair,) = plan["pairs"]
    assert pair["gcd_ms"] == 6 and pair["busy_ms"] == [3, 2]
    assert pair["rectangle_rule_separable"] is True and pair["rectangle_rule_agrees"] is False
    assert pair["separable"] is False and pair["separating_shifts_ms"] == [] and pair["separating_shift_count"] == 0
    assert plan["feasible"] is False and plan["overlap_ms"] > 0 and 0 < plan["compatibility"] < 1
    a, b = spec.load(path).busy_patterns()
    assert a == arcs.Pattern(12, ((0, 1), (2, 1), (4, 1))) and b == arcs.Pattern(18, ((0, 2),))
    assert arcs.brute_force_separating_shifts(a, b) == ()
    assert cli.main(["plan", str(path)]) == 0
    text = capsys.readouterr().out
    assert "not separable" in text and "the rectangle rule would say separable" in text
    assert "predicted iteration time" in text
    # no shift keeps them apart, so the best one still stretches someone
    plan = plan_json(capsys, path)
    period = {j["name"]: j["period_ms"] for j in plan["jobs"]}
    for policy in ("shift", "gate"):
        assert max(job["predicted_iteration_ms"] / period[name]
                   for name, job in plan["policies"][policy].items()) > 1.001


def test_pattern_jobs_are_predicted_over_a_horizon_not_a_count(tmp_path, capsys):
    path = write(tmp_path, NEVER_APART)
    assert cli.main(["plan", str(path), "--iterations", "10"]) == 2
    assert "--iterations" in capsys.readouterr().err


def test_apart_at_three_shifts_though_the_busy_total_exceeds_the_gcd(tmp_path, capsys):
    path = write(tmp_path, APART_AT_0_1_2)
    plan = plan_json(capsys, path)
    (pair,) = plan["pairs"]
    a, b = spec.load(path).busy_patterns()
    assert pair["separating_shifts_ms"] == list(arcs.brute_force_separating_shifts(a, b)) == [0, 1, 2]
    assert pair["busy_ms"] == [4, 6] and pair["rectangle_rule_separable"] is False
    assert pair["rectangle_rule_agrees"] is False
    assert plan["feasible"] is True and plan["overlap_ms"] == 0 and plan["compatibility"] == 1
    shift = {j["name"]: j["shift_ms"] for j in plan["jobs"]}
    assert (shift["b"] - shift["a"]) % 6 in (0, 1, 2)
    # apart at the shifts found: every policy that keeps them there predicts each job's own iteration
    iteration = {j["name"]: j["period_ms"] for j in plan["jobs"]}
    for policy in ("shift", "gate"):
        for name, job_plan in plan["policies"][policy].items():
            assert job_plan["predicted_iteration_ms"] == pytest.approx(iteration[name])
        assert plan["overlap"][policy] == 0
    assert cli.main(["plan", str(path)]) == 0
    assert "relative shift of b in {0, 1, 2} ms mod 6 ms" in capsys.readouterr().out


@pytest.mark.parametrize("fixture", ["nccl_hand_built.json", "gloo_ddp_rank0.json.gz"])
def test_the_scenario_trace_writes_is_planned(tmp_path, capsys, fixture):
    out = tmp_path / "traced.yaml"
    done = subprocess.run([str(SHIFTBED), "trace", str(TRACES / fixture), "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    plan = plan_json(capsys, out)
    (traced,) = plan["jobs"]
    assert traced["phases"] == len(yaml.safe_load(out.read_text())["jobs"][0]["phases"])
    assert plan["pattern_jobs"] == [traced["name"]] and plan["feasible"] is True and plan["pairs"] == []
    # beside a second job, as a user adds one
    doc = yaml.safe_load(out.read_text())
    doc["jobs"].append({"name": "other", "period_ms": 50, "comm_ms": 5})
    out.write_text(yaml.safe_dump(doc))
    plan = plan_json(capsys, out)
    assert plan["jobs"][1]["busy_ms"] == [[0, 5]]  # a comm_ms job is its one arc at 0
    assert len(plan["pairs"]) == 1


def test_a_profile_job_gets_its_phases_and_iteration_from_the_profile(tmp_path, capsys):
    path = write(tmp_path, [{"name": "r", "profile": "resnet50", "workers": ["h1", "h2"], "dtype": "fp16",
                             "bucket_cap_mb": 10, "model_link_mbps": 25000},
                            {"name": "p", "profile": "pipeline", "profile_workers": 4}])
    scenario = spec.load(path)
    resnet = profiles.profile_pattern("resnet50", 2, bucket_cap_mb=10, dtype="fp16", link_mbps=25000,
                                      first_bucket_mb=10)
    assert scenario.jobs[0].comm_pattern == resnet and scenario.jobs[0].period_ms == resnet.iteration_ms
    assert scenario.jobs[1].comm_pattern == profiles.profile_pattern("pipeline", 4)
    plan = plan_json(capsys, path)
    assert [j["profile"] for j in plan["jobs"]] == ["resnet50", "pipeline"]
    assert plan["jobs"][0]["phases"] == len(resnet.phases)


def test_pattern_jobs_on_a_fabric_meet_where_their_routes_do(tmp_path, capsys):
    fabric = {"spines": 1, "leaves": 2, "hosts_per_leaf": 2, "host_link_mbps": 50, "fabric_link_mbps": 50}
    jobs = [dict(NEVER_APART[0], workers=["h1", "h3"]), dict(NEVER_APART[1], workers=["h2", "h4"])]
    plan = plan_json(capsys, write(tmp_path, jobs, fabric=fabric))
    assert plan["links"] and plan["conflicts"][0]["jobs"] == ["a", "b"] and plan["feasible"] is False


def phases_job(**changes):
    entry = job("a", 12, [(0, 1)], ["h1", "h2"])
    entry.update(changes)
    return entry


BAD = [
    (phases_job(phases=[{"start_ms": 12, "message_bytes": 1000}]), "jobs[0].phases[0].start_ms",
     "must be less than the iteration (period_ms 12), got 12"),
    (phases_job(phases=[{"start_ms": 30, "message_bytes": 1000}]), "jobs[0].phases[0].start_ms",
     "must be less than the iteration"),
    (phases_job(phases=[{"start_ms": -1, "message_bytes": 1000}]), "jobs[0].phases[0].start_ms", "must be >= 0"),
    (phases_job(phases=[{"start_ms": 0, "message_bytes": 0}]), "jobs[0].phases[0].message_bytes", "must be >= 1"),
    (phases_job(phases=[{"start_ms": 0, "message_bytes": -5}]), "jobs[0].phases[0].message_bytes", "must be >= 1"),
    (phases_job(phases=[{"start_ms": 0, "message_bytes": 1000, "collective": "broadcast"}]),
     "jobs[0].phases[0].collective", "must be one of allreduce, alltoall, p2p, got 'broadcast'"),
    (phases_job(phases=[{"start_ms": 0, "message_bytes": 20 * MS_AT_10G}]), "jobs[0].phases",
     "keep each worker's link busy 20.000 ms per iteration, not less than the iteration (12 ms)"),
    (phases_job(phases=[]), "jobs[0].phases", "expected a non-empty list"),
    (phases_job(phases=[{"start_ms": 0}]), "jobs[0].phases[0].message_bytes", "missing required key"),
    (phases_job(workers=["h1"]), "jobs[0].workers", "at least two workers"),
    ({"name": "a", "profile": "resnet-9000", "workers": ["h1", "h2"]}, "jobs[0].profile",
     "unknown profile 'resnet-9000' (known: resnet50, resnet101"),
    ({"name": "a", "profile": "pipeline", "workers": ["h1", "h2"]}, "jobs[0].workers", "needs 3 workers"),
    ({"name": "a", "profile": "resnet50", "period_ms": 100, "workers": ["h1", "h2"]}, "jobs[0].period_ms",
     "give either 'profile'"),
    ({"name": "a", "period_ms": 100, "comm_ms": 10, "bucket_cap_mb": 5}, "jobs[0].bucket_cap_mb", "only with 'profile'"),
    (phases_job(comm_ms=1), "jobs[0].comm_ms", "give either 'phases' or comm_ms/model, not both"),
    ({"name": "a", "period_ms": 12, "workers": ["h1", "h2"]}, "jobs[0].comm_ms",
     "missing required key (or give 'model', 'phases' or 'profile')"),
]


@pytest.mark.parametrize("entry, field, words", BAD)
def test_a_bad_pattern_is_one_line_and_exit_2(tmp_path, capsys, entry, field, words):
    path = write(tmp_path, [entry])
    assert cli.main(["plan", str(path)]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    (line,) = out.err.strip().splitlines()
    assert line.startswith(f"shiftbed plan: {path}: {field}: ") and words in line, line
    assert list(tmp_path.iterdir()) == [path]  # nothing written


def test_a_coarse_grid_that_leaves_a_pattern_job_no_idle_time_is_refused(tmp_path, capsys):
    path = write(tmp_path, [job("a", 12, [(0, 1), (6, 1)], ["h1", "h2"])], quantum_ms=6)
    assert cli.main(["plan", str(path)]) == 2
    assert "jobs[0].phases: on the 6 ms grid its phases keep the link busy the whole period" in capsys.readouterr().err


def test_the_command_line_module_refuses_a_bad_pattern_with_exit_2(tmp_path):
    path = write(tmp_path, [phases_job(phases=[{"start_ms": 0, "message_bytes": 1000, "collective": "gather"}])])
    done = subprocess.run([sys.executable, "-m", "scenarios.cli", "plan", str(path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == (f"shiftbed plan: {path}: jobs[0].phases[0].collective: must be one of allreduce, "
                                   "alltoall, p2p, got 'gather'")


def run_refusal(tmp_path, capsys, *args, **top) -> str:
    """``shiftbed run`` of a pattern job and a classic one, refused: its one line (nothing built)."""
    fabric = {"spines": 1, "leaves": 2, "hosts_per_leaf": 2, "host_link_mbps": 50, "fabric_link_mbps": 50}
    path = write(tmp_path, [dict(NEVER_APART[0], workers=["h1", "h3"]), {"name": "b", "period_ms": 300,
                                                                         "comm_ms": 100, "workers": ["h2", "h4"]}],
                 fabric=fabric, **top)
    results = tmp_path / "results"
    assert cli.main(["run", str(path), "--out", str(results), "--duration", "1", *args]) == 2
    out = capsys.readouterr()
    (line,) = out.err.strip().splitlines()
    assert out.out == "" and not results.exists()
    return line.replace(str(path), "S")


def test_run_refuses_a_pattern_job_over_iperf3_or_under_a_policy_it_does_not_run(tmp_path, capsys):
    assert run_refusal(tmp_path, capsys).startswith("shiftbed run: S: transport: a pattern job (a) sends each "
                                                    "phase over standing connections: give transport: persistent")
    assert run_refusal(tmp_path, capsys, "--policy", "none,random", transport="persistent") == (
        "shiftbed run: --policy: random: not run with pattern jobs (S); use none, shift, gate")
    assert run_refusal(tmp_path, capsys, "--time-scale", "2", transport="persistent").startswith(
        "shiftbed run: S: jobs[0].phases: a pattern job runs at time scale 1 only")


def test_the_batch_keeps_refusing_a_pattern_job(tmp_path):
    with pytest.raises(InputError, match=r"jobs\[0\]\.phases: a pattern job runs with shiftbed run only"):
        spec.load(write(tmp_path, NEVER_APART)).require_runnable()


def test_the_explorer_refuses_a_pattern_job(tmp_path):
    from scenarios.explore.inputs import load

    with pytest.raises(InputError, match=r"jobs\[0\]\.phases: the explorer edits jobs of one burst"):
        load(write(tmp_path, NEVER_APART))


JUNK = st.one_of(st.none(), st.booleans(), st.text(max_size=6), st.lists(st.integers(), max_size=2),
                 st.dictionaries(st.text(max_size=3), st.integers(), max_size=1),
                 st.sampled_from([10**400, 1e300, -1e300, math.inf, math.nan]))
PHASE = st.fixed_dictionaries({"start_ms": st.one_of(st.floats(0, 30), st.integers(-2, 40), JUNK),
                               "message_bytes": st.one_of(st.integers(-2, 10**8), st.just(10**400), JUNK)},
                              optional={"collective": st.one_of(st.sampled_from(["allreduce", "alltoall", "p2p",
                                                                                 "gather"]), JUNK)})
PHASES = st.one_of(st.lists(PHASE, max_size=3), JUNK)
PROFILE = st.one_of(st.sampled_from(["resnet50", "pipeline", "dlrm", "resnet-9000"]), JUNK)
OTHERS = {"period_ms": st.one_of(st.floats(1, 100), JUNK), "comm_ms": st.floats(0.1, 5),
          "bucket_cap_mb": st.one_of(st.floats(1e-9, 100), JUNK), "dtype": st.one_of(st.just("fp16"), JUNK),
          "profile_workers": st.one_of(st.integers(-1, 6), JUNK), "model": st.just("resnet50"),
          "model_link_mbps": st.one_of(st.floats(1e-6, 1e6), JUNK),
          "workers": st.one_of(st.just(["h1", "h2"]), st.just(["h1"]), JUNK)}
PATTERN_JOB = st.one_of(st.fixed_dictionaries({"name": st.just("a"), "phases": PHASES},
                                              optional={"profile": PROFILE, **OTHERS}),
                        st.fixed_dictionaries({"name": st.just("a"), "profile": PROFILE},
                                              optional={"phases": PHASES, **OTHERS}))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(PATTERN_JOB)
def test_plan_answers_every_generated_pattern_job_in_one_line(tmp_path, capsys, entry):
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump({"name": "g", "jobs": [entry, {"name": "b", "period_ms": 18, "comm_ms": 2}]}))
    capsys.readouterr()
    status = cli.main(["plan", str(path), "--json"])
    out = capsys.readouterr()
    if status == 0:
        assert json.loads(out.out)["pattern_jobs"] == ["a"]
    else:
        assert status == 2 and len(out.err.strip().splitlines()) == 1, out.err
        assert out.err.startswith(f"shiftbed plan: {path}: ") and "Traceback" not in out.err


def test_the_example_in_the_docs_is_a_scenario_plan_takes(tmp_path, capsys):
    page = (Path(__file__).resolve().parents[2] / "docs" / "scenarios.md").read_text()
    example = page.split("```yaml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "example.yaml"
    path.write_text(example)
    plan = plan_json(capsys, path)
    assert plan["pattern_jobs"] == ["dlrm", "resnet"] and len(plan["pairs"]) == 1
