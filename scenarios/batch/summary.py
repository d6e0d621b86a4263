"""What a batch found, from its table (``table.py``): per policy how often it helps, is neutral or hurts
on the wire beside the model's word before the run, how often the two agree, each kind of
prediction's error, and each scenario where they disagree with its likely cause.

Which scenarios count. The fractions and the agreement are over the
scenarios *compared*: the run kept fidelity, the wire's change has an interval
(so a verdict) and the model predicted the policy. The others are counted and
named, never dropped: a scenario whose fidelity was lost (after its one retry)
is listed with its verdicts and "fidelity lost" as the first cause.

Likely causes of a disagreement, each from the run's own data (all that apply):

- *knife edge*: the model's change lies within the wire's half-width of the
  threshold (±1 %), so a difference the wire cannot resolve moves the verdict;
  or the run marked the policy's prediction a knife edge (``knife_edge``);
- *too short to tell*: the wire's change is neutral with an interval wider
  than the threshold (``verdict.PolicyChange.too_wide``): a longer run could
  still find it helps or hurts;
- *jobs sorting themselves apart*: under ``none`` some job ran apart
  (``apart_share`` > 0), so the baseline beat the "together" the model
  predicted before the run;
- *transient*: the share of a burst spent beside another job's changed by
  ``MEETING_CHANGE`` or more between the first and the last third of the run,
  under the policy or under ``none``;
- *declared timings*: the run's own prediction, made from calibration, gives the
  wire's verdict: the jobs as calibrated on the fabric, not as declared, decide it;
- otherwise *model error*: none of the above explains it.
"""

from __future__ import annotations

import math

import pandas as pd

from scenarios.analysis.verdict import BASELINE, THRESHOLD_PCT, PolicyChange
from scenarios.batch import stats
from scenarios.batch.predict import FABRIC, model_verdict
from scenarios.report.document import MEETING_CHANGE
from scenarios.report.story import AFTERWARDS, BEFORE, CALIBRATION

KINDS = {BEFORE: "before_ms", FABRIC: "fabric_ms", CALIBRATION: "calibration_ms", AFTERWARDS: "afterwards_ms"}
FIDELITY_LOST, KNIFE_EDGE, TOO_SHORT, APART, TRANSIENT, DECLARED, MODEL_ERROR = (
    "fidelity lost", "knife edge", "too short to tell", "jobs sorting themselves apart", "transient",
    "declared timings", "model error")


def policy_frame(table: pd.DataFrame) -> pd.DataFrame:
    """One row per scenario and policy (``none`` left out), with what the causes need from its jobs."""
    jobs = table.assign(met_change=(table["met_share_last"] - table["met_share_first"]).abs())
    by = jobs.groupby(["scenario", "policy"], sort=False)
    per = by.first()[["fidelity_ok", "wire_verdict", "model_verdict", "fabric_verdict", "wire_change_pct",
                      "wire_low_pct", "wire_high_pct", "model_change_pct", "run_predicted_change_pct"]]
    per = per.assign(knife_edge=by["knife_edge"].any(), met_change=by["met_change"].max()).reset_index()
    none = per[per["policy"] == BASELINE].set_index("scenario")
    apart = table[table["policy"] == BASELINE].groupby("scenario")["apart_share"].max()
    per = per[per["policy"] != BASELINE].copy()
    per["none_apart_share"] = per["scenario"].map(apart)
    per["none_met_change"] = per["scenario"].map(none["met_change"]) if not none.empty else math.nan
    return per.reset_index(drop=True)


def _compared(per: pd.DataFrame) -> pd.DataFrame:
    return per[per["fidelity_ok"] & per["wire_verdict"].notna() & per["model_verdict"].notna()]


def causes(row, threshold_pct: float = THRESHOLD_PCT) -> list[str]:
    """The likely causes of one scenario's and policy's disagreement (module docstring)."""
    found = [] if row["fidelity_ok"] else [FIDELITY_LOST]
    half = (row["wire_high_pct"] - row["wire_low_pct"]) / 2
    model = row["model_change_pct"]
    if row["knife_edge"] or (math.isfinite(model) and math.isfinite(half)
                             and min(abs(model - threshold_pct), abs(model + threshold_pct)) <= half):
        found.append(KNIFE_EDGE)
    if PolicyChange(row["policy"], row["wire_change_pct"], half, threshold_pct).too_wide:
        found.append(TOO_SHORT)
    if row["none_apart_share"] > 0:
        found.append(APART)
    if any(x >= MEETING_CHANGE for x in (row["met_change"], row["none_met_change"]) if math.isfinite(x)):
        found.append(TRANSIENT)
    run_verdict = model_verdict(row["policy"], row["run_predicted_change_pct"], threshold_pct) \
        if math.isfinite(row["run_predicted_change_pct"]) else None
    if run_verdict is not None and run_verdict == row["wire_verdict"]:
        found.append(DECLARED)
    return found or [MODEL_ERROR]


def _agreement(pairs: list[tuple[str, str]]) -> dict:
    table = stats.agreement_table(pairs)
    return {"n": len(pairs), "table": table, "share": stats.share_of_agreement(table),
            "kappa": stats.cohen_kappa(table)}


def summarise(table: pd.DataFrame, policies: list[str], threshold_pct: float = THRESHOLD_PCT) -> dict:
    """The batch's findings as a JSON-ready dict (what report.md and report.html say)."""
    per = policy_frame(table)
    compared = _compared(per)
    out = {"scenarios": int(table["scenario"].nunique()) if not table.empty else 0,
           "fidelity_lost": sorted(table.loc[~table["fidelity_ok"], "scenario"].unique()) if not table.empty else [],
           "retried": sorted(table.loc[table["attempts"] > 1, "scenario"].unique()) if not table.empty else [],
           "policies": {}, "errors": {}, "disagreements": []}
    for policy in (p for p in policies if p != BASELINE):
        mine, all_mine = compared[compared["policy"] == policy], per[per["policy"] == policy]
        out["policies"][policy] = {
            "compared": len(mine),
            "no_wire_verdict": int((all_mine["fidelity_ok"] & all_mine["wire_verdict"].isna()).sum()),
            "no_model_verdict": int(all_mine["model_verdict"].isna().sum()),
            "wire": stats.fractions(list(mine["wire_verdict"])),
            "model": stats.fractions(list(mine["model_verdict"])),
            "agreement": _agreement(list(zip(mine["model_verdict"], mine["wire_verdict"], strict=True)))}
    out["agreement"] = _agreement(list(zip(compared["model_verdict"], compared["wire_verdict"], strict=True)))
    calibrated = [(model_verdict(p, c, threshold_pct), w) for p, c, w in
                  zip(compared["policy"], compared["run_predicted_change_pct"], compared["wire_verdict"], strict=True)
                  if math.isfinite(c)]
    out["agreement_from_the_run"] = _agreement(calibrated)  # the run's own prediction's verdict, for contrast
    fabric = compared[compared["fabric_verdict"].notna()] if "fabric_verdict" in compared else compared.iloc[:0]
    out["agreement_from_the_fabric"] = _agreement(list(zip(fabric["fabric_verdict"], fabric["wire_verdict"],
                                                           strict=True)))
    kept = table[table["fidelity_ok"]] if not table.empty else table
    for kind, column in KINDS.items():
        out["errors"][kind] = {"all": stats.error_quantiles(stats.relative_errors(kept["measured_iteration_ms"],
                                                                                   kept[column]))}
        for policy in policies:
            sel = kept[kept["policy"] == policy]
            out["errors"][kind][policy] = stats.error_quantiles(
                stats.relative_errors(sel["measured_iteration_ms"], sel[column]))
    out["cost"] = cost(table, policies)
    both = per[per["wire_verdict"].notna() & per["model_verdict"].notna()]
    for _, row in both[both["wire_verdict"] != both["model_verdict"]].iterrows():
        out["disagreements"].append({
            "scenario": row["scenario"], "policy": row["policy"], "model": row["model_verdict"],
            "wire": row["wire_verdict"], "model_change_pct": row["model_change_pct"],
            "wire_change_pct": row["wire_change_pct"], "wire_ci95": [row["wire_low_pct"], row["wire_high_pct"]],
            "run_predicted_change_pct": row["run_predicted_change_pct"], "causes": causes(row, threshold_pct)})
    return out


def cost(table: pd.DataFrame, policies: list[str]) -> dict:
    """What made the scenarios cheaper, said so nothing is hidden: per policy how many runs stopped at the
    target standard error and how many at the ceiling, with the median seconds run; and how many jobs
    reused a calibration measured in an earlier scenario (docs/batch.md)."""
    stops = {}
    if "stopped_by" in table and not table.empty:
        runs = table.drop_duplicates(["scenario", "policy"])
        for policy in policies:
            mine = runs[runs["policy"] == policy]
            at = mine[mine["stopped_by"].notna()]
            if len(at):
                stops[policy] = {"target": int((at["stopped_by"] == "target").sum()),
                                 "ceiling": int((at["stopped_by"] == "ceiling").sum()),
                                 "median_s": float(at["stopped_after_s"].median())}
    jobs = table.drop_duplicates(["scenario", "job"]) if not table.empty else table
    reused = jobs[jobs["calibration_reused_from"].notna()] if "calibration_reused_from" in jobs else jobs.iloc[:0]
    return {"stopped": stops, "jobs": len(jobs), "reused": len(reused)}


def running_agreement(table: pd.DataFrame) -> tuple[int, int]:
    """(agreeing, compared) over every policy of the scenarios done so far: the progress display's figure."""
    compared = _compared(policy_frame(table))
    return int((compared["model_verdict"] == compared["wire_verdict"]).sum()), len(compared)

