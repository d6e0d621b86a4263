"""One display for a whole batch: the runs' own (``experiment/display.py``), their stages estimated as a run
estimates them, and after each scenario a line with the scenarios done and the running agreement
between the model's verdicts before the run and the wire's."""

from __future__ import annotations

import sys

import pandas as pd

from scenarios import spec
from scenarios.batch.summary import policy_frame, running_agreement
from scenarios.batch.table import batch_table, scenario_rows
from scenarios.experiment.display import RunDisplay
from scenarios.experiment.estimate import Timeline, run_stages
from scenarios.experiment.progressview import duration_text


class BatchProgress:
    """The batch's display (:attr:`display`, handed to each run) and its tally of scenarios and verdicts."""

    def __init__(self, folder, pending: list[str], stream=None):
        self.folder = folder
        scenarios = [spec.load(folder.scenario_file(name)) for name in pending]
        stages = [stage for s in scenarios
                  for stage in run_stages(s.name, {j.name: j.period_ms for j in s.jobs}, s.policies,
                                          s.duration_s)]
        timeline = Timeline(stages)
        self.total, self.done = len(folder.names), len(folder.names) - len(pending)
        intro = (f"batch {folder.root}: {len(pending)} of {self.total} scenarios to run, about "
                 f"{duration_text(timeline.estimate_s)} in all")
        self.display = RunDisplay(stream or sys.stderr, timeline, intro)
        self.agreeing, self.compared = running_agreement(batch_table(folder)) if self.done else (0, 0)

    def status(self) -> str:
        """``3 of 10 scenarios done; model and wire agree on 5 of 6 verdicts (83 %)``."""
        share = f" ({self.agreeing / self.compared:.0%})" if self.compared else ""
        return (f"{self.done} of {self.total} scenarios done; model and wire agree on {self.agreeing} of "
                f"{self.compared} verdicts{share}")

    def introduce(self) -> None:
        self.display.introduce()
        self.display.note = self.status()
        self.display.record(self.status(), is_stage=False)

    def scenario_done(self, name: str) -> None:
        """Count ``name``'s verdicts and say them, with the batch so far."""
        table = pd.DataFrame(scenario_rows(self.folder, name))
        agreeing, compared = running_agreement(batch_table_like(table))
        self.agreeing, self.compared, self.done = self.agreeing + agreeing, self.compared + compared, self.done + 1
        said = "; ".join(f"{r.policy} {_word(r.wire_verdict, 'no interval')} on the wire, model "
                         f"{_word(r.model_verdict, 'no prediction')}"
                         for r in policy_frame(batch_table_like(table)).itertuples())
        self.display.note = self.status()
        self.display.record(f"{name} done: {said}. {self.status()}", is_stage=False)

    def finish(self) -> None:
        self.display.finish()


def _word(verdict, missing: str) -> str:
    return missing if pd.isna(verdict) else verdict


def batch_table_like(table: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``scenario_rows`` with the table's types (booleans as booleans)."""
    return table.astype({"fidelity_ok": bool, "knife_edge": bool})
