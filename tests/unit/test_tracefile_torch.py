"""A fresh DDP-over-gloo trace, made now with torch, read like the committed fixture.

torch is not in the product's venv, so where ``import torch`` fails this module defines no test at all
(a skip would fail ``make test``, tests/conftest.py). With a torch at hand, e.g. the throwaway venv of
tests/fixtures/traces/make_gloo_trace.py on the path, it checks that the generator still makes a trace
``read_trace`` understands: DDP's buckets, in order, within the iteration.
"""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

if importlib.util.find_spec("torch"):
    from test_tracefile import GENERATOR, check_gloo_trace, generator

    from scenarios.tracefile import read_trace

    @pytest.mark.slow
    def test_a_fresh_gloo_trace_gives_ddps_buckets(tmp_path):
        made = subprocess.run([sys.executable, str(GENERATOR), str(tmp_path)], capture_output=True, text=True,
                              timeout=600, cwd=tmp_path)
        assert made.returncode == 0, made.stderr[-3000:]
        path = Path(made.stdout.strip().splitlines()[-1])
        assert path.parent == tmp_path and path.name.startswith("gloo_ddp_rank0.json")
        module = generator()
        check_gloo_trace(read_trace(path), module.LAYERS, module.BUCKET_CAP_MB)
