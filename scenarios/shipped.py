"""The scenario files shipped with shiftbed, and the demo's two among them.

The demo runs those two; a batch places its drawn jobs on the first one's fabric unless
``--fabric`` names another file.
"""

from pathlib import Path

SCENARIOS_DIR = Path(__file__).resolve().parent
DEMO_SCENARIOS = ("classroom.yaml", "two-jobs-coprime.yaml")
