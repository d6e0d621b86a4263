"""Calibration's solo-run counts, on their own so that the time and disk estimates need not import calibration."""

CALIBRATION_ITERATIONS = 6  # per solo run while a job's bursts are sized ...
# ... and for the solo run whose bursts the model draws from. A gated job misses
# a window about as often as the draws hold a slow burst, and 7 % of solo bursts
# are slow (8 ms or more over their run's median: 85 final solo runs). With 5
# bursts one slow one was a fifth of the draws; with 10, two were in 15 % of
# runs, and a classroom `gate` alpha was predicted to miss 20 % of its windows
# and missed 8 % (measured 2026-12-01, docs/accuracy.md).
MODEL_CALIBRATION_ITERATIONS = 21
SIZING_ROUNDS = 3  # solo runs at most while a job's bursts are sized
# Corrections at most. With one, a host that changed speed between the two solo runs left
# classroom alpha at 300.3 ms (target 288) and beta at 560.5 (target 576); commensurate jobs
# off their common margin drift apart under a static shift, and lab 3's `shift` met bursts
# in 11-12 % of busy bins where it promises at most 8 % (measured 2026-12-01, docs/accuracy.md).
PERIOD_CORRECTIONS = 2
