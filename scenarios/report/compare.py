"""``shiftbed compare``'s figure: every run's policies side by side, drawn from the comparison table alone.

Top: each policy's throughput change against ``none``, measured (a dot with its
95 % interval) beside the model's (◆). Bottom: each job's prediction error.
One group per run, labelled with its scenario and run; a run that lost
fidelity is drawn hollow and labelled so. Deterministic, as the report's
figures are (``plots._default_style``, ``plots._save``).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from scenarios.analysis.compare import BASELINE
from scenarios.report.plots import (
    WIDTH_IN,
    _default_style,
    _placeholder,
    _save,
    job_colors,
    policy_order,
)

COMPARE_PNG = "compare.png"


@_default_style
def draw_compare(table: pd.DataFrame, path: Path) -> Path:
    """The figure of a :func:`scenarios.analysis.compare.compare_table` table, as a PNG at ``path``."""
    if table.empty:
        return _placeholder(path, "shiftbed compare", "no policy in these runs has a measurement")
    runs = list(table.groupby("results_dir", sort=False))
    slots = sum(rows["policy"].nunique() for _, rows in runs)
    fig = Figure(figsize=(max(WIDTH_IN, 0.55 * slots + 2), 7.5), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    colors = job_colors(sorted(table["job"].unique()))
    ticks, labels, x = [], [], 0
    for _, rows in runs:
        fidelity_ok = bool(rows["fidelity_ok"].iloc[0])
        start = x
        for policy in policy_order(rows["policy"].unique()):
            mine = rows[rows["policy"] == policy]
            first = mine.iloc[0]
            face = "black" if fidelity_ok else "white"
            if policy != BASELINE and pd.notna(first["throughput_change_vs_none_pct"]):
                change = first["throughput_change_vs_none_pct"]
                low, high = first["throughput_change_low_pct"], first["throughput_change_high_pct"]
                err = [[change - low], [high - change]] if pd.notna(low) else None
                top.errorbar([x], [change], yerr=err, fmt="o", color="black", mfc=face, capsize=4)
                if pd.notna(first["predicted_throughput_change_vs_none_pct"]):
                    top.plot([x + 0.2], [first["predicted_throughput_change_vs_none_pct"]], "D", color="0.55")
            for _, job_row in mine.iterrows():
                if pd.notna(job_row["error_pct"]):
                    bottom.plot([x], [job_row["error_pct"]], "o", color=colors[job_row["job"]],
                                mfc=colors[job_row["job"]] if fidelity_ok else "white")
            ticks.append(x)
            labels.append(policy)
            x += 1
        title = f"{rows['scenario'].iloc[0]}\n{rows['run'].iloc[0]}" + ("" if fidelity_ok else "\n(fidelity lost)")
        top.text((start + x - 1) / 2, 1.02, title, transform=top.get_xaxis_transform(), ha="center", va="bottom",
                 fontsize=8)
        if x < slots:
            for ax in (top, bottom):
                ax.axvline(x - 0.5, color="0.7", lw=0.8)
    for ax in (top, bottom):
        ax.axhline(0, color="0.4", lw=0.8)
        ax.grid(axis="y", alpha=0.3)
    top.set_ylabel("throughput vs none (%)")
    top.plot([], [], "o", color="black", label="measured, 95 % interval")
    top.plot([], [], "o", color="black", mfc="white", label="measured, fidelity lost")
    top.plot([], [], "D", color="0.55", label="predicted")
    top.legend(loc="upper left", fontsize=8, bbox_to_anchor=(1.01, 1.0))
    for job, color in colors.items():
        bottom.plot([], [], "o", color=color, label=job)
    bottom.legend(title="job", loc="upper left", fontsize=8, bbox_to_anchor=(1.01, 1.0))
    bottom.set_ylabel("prediction error (%)\n(measured - predicted) / predicted")
    bottom.set_xticks(ticks, labels, rotation=30, ha="right")
    bottom.set_xlim(-0.6, slots - 0.4)
    return _save(fig, path)
