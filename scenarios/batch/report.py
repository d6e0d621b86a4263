"""The batch's report.md and report.html: the findings of ``summary.py`` as sections of words and
tables, written once as Markdown and once as a page in the style of a run's (``report.html.STYLE``).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from pathlib import Path

from controller.theory.tally import OUTCOMES
from scenarios.batch.summary import KINDS
from scenarios.files import atomic_write_bytes
from scenarios.report.html import STYLE, inline_markdown
from scenarios.results import REPORT_FILE, REPORT_HTML_FILE


@dataclass
class Section:
    title: str
    words: list[str] = field(default_factory=list)  # paragraphs (Markdown phrases: **bold**, `code`)
    tables: list[tuple[str, list[str], list[list[str]]]] = field(default_factory=list)  # caption, header, rows


def _pct(x: float | None, signed: bool = False) -> str:
    if x is None or not math.isfinite(x):
        return "n/a"
    return f"{x:+.1f} %" if signed else f"{x:.1f} %"


def _fraction(entry: dict) -> str:
    """``40 % [22, 61]`` (the 95 % Wilson interval in points), ``n/a`` without scenarios."""
    if not entry["n"]:
        return "n/a"
    low, high = entry["ci95"]
    return f"{100 * entry['fraction']:.0f} % [{100 * low:.0f}, {100 * high:.0f}]"


def _kappa(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:.2f}"


def sections(found: dict, record: dict) -> list[Section]:
    """The report's sections, in order."""
    policies = list(found["policies"])
    out = [_in_short(found, record)]
    counts = Section("How often each policy helps", [
        "Per policy, the share of the compared scenarios where it helps, is neutral or hurts against `none` "
        "on the wire (its 95 % interval decides: docs/results.md, \"A policy's verdict\"), beside the model's "
        "share for exactly these scenarios, predicted **before the run** from the scenario file alone, and "
        "the sweep's for the distribution they were drawn from. Brackets: 95 % Wilson intervals."])
    header = ["policy", "compared", *(f"wire {o}" for o in OUTCOMES), *(f"model {o}" for o in OUTCOMES),
              "left out"]
    rows = []
    for policy, p in found["policies"].items():
        left = f"{p['no_wire_verdict']} without an interval, {p['no_model_verdict']} without a prediction"
        rows.append([policy, str(p["compared"]), *(_fraction(p["wire"][o]) for o in OUTCOMES),
                     *(_fraction(p["model"][o]) for o in OUTCOMES), left])
    counts.tables.append(("", header, rows))
    if found.get("sweep"):
        sweep = found["sweep"]
        draws = next(iter(sweep.values()))[OUTCOMES[0]]["n"]
        caption = (f"The sweep's fractions for the distribution these scenarios were drawn from, in the ideal model "
                   f"(bursts as declared, max-min fair sharing; the same sampling arguments, seed and quantum; "
                   f"{draws} draws for the first policy, scenarios/batch/distribution.py)")
        counts.tables.append((caption, ["policy", *(f"sweep {o}" for o in OUTCOMES)],
                              [[policy, *(_fraction(f[o]) for o in OUTCOMES)] for policy, f in sweep.items()]))
    out.append(counts)
    agreement = Section("The model's verdict against the wire's", [
        "Rows: the model's verdict before the run; columns: the wire's. Cohen's kappa is the agreement "
        "beyond what chance would give (1: always, 0: no better than chance)."])
    for name, a in [("every policy", found["agreement"]),
                    *((f"`{p}`", found["policies"][p]["agreement"]) for p in policies)]:
        caption = f"{name}: {a['n']} compared, agreement {_pct(100 * a['share'])}, kappa {_kappa(a['kappa'])}"
        agreement.tables.append((caption, ["model \\ wire", *OUTCOMES],
                                 [[o, *(str(c) for c in a["table"][i])] for i, o in enumerate(OUTCOMES)]))
    run = found["agreement_from_the_run"]
    agreement.words.append(f"For contrast, the run's own prediction (from calibration; for `none` explained "
                           f"afterwards) gives the wire's verdict in {_pct(100 * run['share'])} of {run['n']} "
                           f"(kappa {_kappa(run['kappa'])}).")
    fabric = found.get("agreement_from_the_fabric")
    if fabric and fabric["n"]:
        agreement.words.append(f"The prediction before the run from the fabric (the jobs as the batch's earlier "
                               f"scenarios measured the fabric running them) gives it in "
                               f"{_pct(100 * fabric['share'])} of {fabric['n']} (kappa {_kappa(fabric['kappa'])}).")
    out.append(agreement)
    out.append(_errors(found, policies))
    out.append(_disagreements(found))
    out.append(_cost(found["cost"], record.get("settings", {})))
    settings = Section("Settings", ["The data: `batch.parquet` (one row per scenario, policy and job), each "
                                    "scenario's folder (`prediction.json`, its run's results folder, "
                                    "`outcome.json`); docs/batch.md."])
    settings.tables.append(("", ["setting", "value"],
                            [[key, f"`{value}`"] for key, value in record.get("settings", {}).items()]))
    out.append(settings)
    return out


def _in_short(found: dict, record: dict) -> Section:
    a = found["agreement"]
    words = [f"{found['scenarios']} of {len(record.get('scenarios', []))} scenarios done; "
             f"{a['n']} scenario-policy pairs compared: the model's verdict before the run agreed with the "
             f"wire's in {_pct(100 * a['share'])} (kappa {_kappa(a['kappa'])})."]
    for policy, p in found["policies"].items():
        words.append(f"`{policy}` helps on the wire in {_fraction(p['wire']['helps'])} of the compared "
                     f"scenarios; the model said {_fraction(p['model']['helps'])}.")
    if found["fidelity_lost"]:
        words.append(f"**Fidelity lost** (after one retry) in {', '.join(found['fidelity_lost'])}: kept, "
                     "left out of the fractions and the agreement.")
    if len(record.get("scenarios", [])) > found["scenarios"]:
        words.append("**Incomplete batch**: `shiftbed batch --resume` runs the rest.")
    return Section("In short", words)


def _errors(found: dict, policies: list[str]) -> Section:
    section = Section("Each kind of prediction's error", [
        "|measured − predicted| / measured over every job of the scenarios that kept fidelity: median and "
        "90th percentile (n: jobs). *Before the run*: the scenario file alone; *before the run, from the "
        "fabric*: the jobs as the batch's earlier scenarios measured the fabric running them; *from "
        "calibration*: the fluid model fed the jobs measured alone (for `none`, its \"together\" state); "
        "*explained afterwards*: "
        "free-running policies' two states weighed by the share apart counted in the run (docs/report.md)."])
    header = ["kind", *(f"{p}" for p in ("all", *policies))]
    rows = []
    for kind in KINDS:
        cells = []
        for key in ("all", *policies):
            q = found["errors"][kind][key]
            cells.append("n/a" if not q["n"] else
                         f"{100 * q['median']:.1f} / {100 * q['p90']:.1f} % (n {q['n']})")
        rows.append([kind, *cells])
    section.tables.append(("", header, rows))
    return section


def _disagreements(found: dict) -> Section:
    section = Section("Where the model and the wire disagree", [
        "Each scenario and policy whose verdicts differ, with its likely causes (docs/batch.md: knife edge, "
        "too short to tell, fidelity lost, jobs sorting themselves apart, transient, declared timings, model "
        "error)."])
    rows = [[d["scenario"], d["policy"], f"{d['model']} ({_pct(d['model_change_pct'], True)})",
             f"{d['wire']} ({_pct(d['wire_change_pct'], True)} [{_pct(d['wire_ci95'][0], True)}, "
             f"{_pct(d['wire_ci95'][1], True)}])", _pct(d["run_predicted_change_pct"], True), ", ".join(d["causes"])]
            for d in found["disagreements"]]
    if rows:
        section.tables.append(("", ["scenario", "policy", "model before the run", "wire (95 % interval)",
                                "run's prediction", "likely causes"], rows))
    else:
        section.words.append("None.")
    return section


def _cost(cost: dict, settings: dict) -> Section:
    """How each policy's run ended and how many calibrations were reused (docs/batch.md, "Cheap per scenario")."""
    target = settings.get("target_se_pct")
    section = Section("What each scenario cost", [
        (f"Each policy ran until every job's mean iteration time had a standard error of at most {target:g} % "
         f"of it, or to the ceiling of {settings.get('duration_s', 0):g} s." if target is not None else
         "Each policy ran its full duration (no target standard error)."),
        (f"Calibrations reused (the same job shape on the same fabric, measured in an earlier scenario of this "
         f"batch run): {cost['reused']} of {cost['jobs']} jobs." if settings.get("reuse_calibration") else
         "Every scenario's jobs were calibrated anew.")])
    if cost["stopped"]:
        section.tables.append(("", ["policy", "stopped at the target", "at the ceiling", "median seconds run"],
                               [[p, str(c["target"]), str(c["ceiling"]), f"{c['median_s']:.1f}"]
                                for p, c in cost["stopped"].items()]))
    return section


def render_markdown(title: str, parts: list[Section]) -> str:
    lines = [f"# {title}", ""]
    for s in parts:
        lines += [f"## {s.title}", ""]
        for w in s.words:
            lines += [w, ""]
        for caption, header, rows in s.tables:
            lines += [caption, ""] if caption else []
            lines.append("| " + " | ".join(header) + " |")
            lines.append("|" + "---|" * len(header))
            lines += ["| " + " | ".join(row) + " |" for row in rows]
            lines.append("")
    return "\n".join(lines)


def render_html(title: str, parts: list[Section]) -> str:
    body = [f"<h1>{html.escape(title)}</h1>"]
    for s in parts:
        body.append(f"<h2>{html.escape(s.title)}</h2>")
        body += [f"<p>{inline_markdown(w)}</p>" for w in s.words]
        for caption, header, rows in s.tables:
            body.append(f"<p>{inline_markdown(caption)}</p>" if caption else "")
            body.append("<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>")
            body += ["<tr>" + "".join(f"<td>{inline_markdown(c)}</td>" for c in row) + "</tr>" for row in rows]
            body.append("</table>")
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}"
            f"</title><style>{STYLE}</style></head><body><main>\n" + "\n".join(body) + "\n</main></body></html>\n")


def write_report(root: Path, found: dict, record: dict) -> tuple[Path, Path]:
    """report.md and report.html into the batch folder (each written atomically)."""
    title = f"shiftbed batch: {root.name}"
    parts = sections(found, record)
    md, page = root / REPORT_FILE, root / REPORT_HTML_FILE
    atomic_write_bytes(md, render_markdown(title, parts).encode())
    atomic_write_bytes(page, render_html(title, parts).encode())
    return md, page
