"""What a platform must show to carry shiftbed: `shiftbed check --json` clean with a faithful link, and
the demo's two scenarios keeping fidelity, every job's iteration time within 10 % of the model under
every policy.

Shared by the lab VM's test (tests/vm) and the Debian 13 root's run (topo/debian13/in-root.sh), which
runs it as a script on a saved JSON object: the problems, one line each, and exit status 1 if any.

    python tests/platform_verdict.py check FILE [FRAMEWORK]   (FRAMEWORK: the controller's that check must name)
    python tests/platform_verdict.py demo FILE
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# Seconds per policy in a platform's demo run: long enough for ~20 iterations of the coprime pair's
# 401-ms job, the sample behind the 10 % accuracy check.
DEMO_DURATION_S = 10
MAX_ERROR_PCT = 10.0
MIN_CHECK_RATIO = 0.9
DEMO_SCENARIOS = {"classroom", "two-jobs-coprime"}


def check_problems(report: dict, framework: str | None = None) -> list[str]:
    """`shiftbed check --json`'s object: its own problems, a realized rate below 90 % of the link's, or
    a controller framework other than ``framework`` (when given)."""
    problems = [f"check: {problem}" for problem in report.get("problems", [])]
    found = (report.get("controller") or {}).get("framework")
    if framework and found != framework:
        problems.append(f"check: the controller runs on {found}, not {framework}")
    if report.get("ok") is not True and not problems:
        problems.append("check: not ok")
    if report.get("ratio") is None or report["ratio"] < MIN_CHECK_RATIO:
        problems.append(f"check: realized/configured rate {report.get('ratio')} < {MIN_CHECK_RATIO}")
    return problems


def job_errors_pct(runs: dict) -> dict[str, float]:
    """``"<scenario> <policy> <job>"`` -> the job's measured iteration time against the model's, in %."""
    return {f"{name} {policy} {job}": figures["error_pct"]
            for name, run in runs.items()
            for policy, policy_figures in run["policies"].items()
            for job, figures in policy_figures["jobs"].items()}


def demo_problems(doc: dict) -> list[str]:
    """`shiftbed demo --json`'s object: a scenario missing, fidelity lost, or a job off the model by > 10 %."""
    runs = doc.get("runs", {})
    problems = []
    if set(runs) != DEMO_SCENARIOS:
        problems.append(f"demo: ran {sorted(runs)}, not {sorted(DEMO_SCENARIOS)}")
    for name, run in runs.items():
        if run.get("fidelity_ok") is not True:
            problems.append(f"demo: {name} lost fidelity ({run.get('crosschecks')})")
    for pair, error_pct in job_errors_pct(runs).items():
        if abs(error_pct) > MAX_ERROR_PCT:
            problems.append(f"demo: {pair} off the model by {error_pct:+.1f} % (more than {MAX_ERROR_PCT:g} %)")
    return problems


def main(argv: list[str]) -> int:
    if argv[:1] not in (["check"], ["demo"]) or len(argv) not in (2, 3) or (argv[0] == "demo" and len(argv) == 3):
        print("usage: python tests/platform_verdict.py check FILE [FRAMEWORK], or demo FILE", file=sys.stderr)
        return 2
    text = Path(argv[1]).read_text().strip()
    try:
        doc = json.loads(text.splitlines()[-1]) if text else {}
    except json.JSONDecodeError as exc:
        print(f"{argv[0]}: {argv[1]} holds no JSON object ({exc})")
        return 1
    problems = check_problems(doc, *argv[2:]) if argv[0] == "check" else demo_problems(doc)
    print("\n".join(problems) if problems else f"{argv[0]}: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
