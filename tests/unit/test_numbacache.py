"""The compiled model's cache is dropped when any of the package's sources changes
(controller/theory/numbacache.py): numba alone would keep a caller's copy of a changed callee."""

import subprocess
import sys
import textwrap

from controller.theory import numbacache

CALLEE = "import numba\n\n@numba.njit(cache=True)\ndef f():\n    return {}\n"
CALLER = "import numba\nimport callee\n\n@numba.njit(cache=True)\ndef g():\n    return callee.f()\n"
RUN = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    if sys.argv[2] == "drop":
        from controller.theory.numbacache import drop_stale
        from pathlib import Path
        drop_stale(Path(sys.argv[1]))
    import caller
    print(caller.g())
""")


def run(package, how):
    out = subprocess.run([sys.executable, "-c", RUN, str(package), how], capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def test_a_callers_cache_keeps_an_edited_callee_unless_dropped(tmp_path):
    (tmp_path / "caller.py").write_text(CALLER)
    (tmp_path / "callee.py").write_text(CALLEE.format(1))
    assert run(tmp_path, "keep") == 1
    (tmp_path / "callee.py").write_text(CALLEE.format(2))
    assert run(tmp_path, "keep") == 1  # numba's own cache: the caller still runs the old callee
    assert run(tmp_path, "drop") == 2
    assert run(tmp_path, "drop") == 2


def test_the_cache_is_dropped_once_per_change_of_the_sources(tmp_path):
    (tmp_path / "model.py").write_text("x = 1\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    (cache / "model.f-3.py311.nbi").write_bytes(b"index")
    (cache / "model.f-3.py311.1.nbc").write_bytes(b"code")
    (cache / "model.cpython-311.pyc").write_bytes(b"bytecode")
    assert numbacache.drop_stale(tmp_path)
    assert sorted(p.name for p in cache.iterdir()) == ["model.cpython-311.pyc", "numba-sources.sha256"]
    (cache / "model.f-3.py311.nbi").write_bytes(b"index")
    assert not numbacache.drop_stale(tmp_path) and (cache / "model.f-3.py311.nbi").exists()
    (tmp_path / "model.py").write_text("x = 2\n")
    assert numbacache.drop_stale(tmp_path) and not (cache / "model.f-3.py311.nbi").exists()
