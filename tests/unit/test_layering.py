"""The layout's promises, checked on the source: no import cycle between the top-level folders,
and the scheduling theory imports nothing from the emulation.

Folders are layered bottom to top: ``topo`` (the fabric) ← ``controller`` (its decisions and Ryu
adapters; the theory lives in ``controller/theory``) ← ``apps`` (programs on emulated hosts) ←
``scenarios`` (the runner, analysis, report and command line). Every import, including those
inside functions, is read with ``ast``.
"""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("topo", "controller", "apps", "scenarios")
THEORY = "controller.theory"


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every module named by an import statement in ``path`` (``from a import b`` gives ``a`` and ``a.b``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def source_modules() -> dict[str, set[str]]:
    return {module_name(path): imports_of(path)
            for package in PACKAGES for path in sorted((REPO / package).rglob("*.py"))}


def folder_graph(modules: dict[str, set[str]]) -> dict[str, set[str]]:
    graph = {package: set() for package in PACKAGES}
    for name, imported in modules.items():
        top = name.split(".")[0]
        graph[top].update(i.split(".")[0] for i in imported if i.split(".")[0] in PACKAGES)
        graph[top].discard(top)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle in ``graph`` as a list of nodes (first repeated at the end), or None."""
    state: dict[str, str] = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return [*path[path.index(nxt):], nxt] if nxt in path else [node, nxt]
            if nxt not in state and (cycle := visit(nxt, [*path, nxt])):
                return cycle
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start, [start])):
            return cycle
    return None


def test_find_cycle_sees_a_cycle_and_its_absence():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_imports_of_reads_imports_inside_functions(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from topo import wiring\n    import apps.iperf\n")
    assert imports_of(source) == {"topo", "topo.wiring", "apps.iperf"}


def test_no_import_cycle_between_top_level_folders():
    graph = folder_graph(source_modules())
    assert find_cycle(graph) is None, f"import cycle between folders: {' -> '.join(find_cycle(graph))}"


def test_folders_import_only_downwards():
    below = {package: set(PACKAGES[:i]) for i, package in enumerate(PACKAGES)}
    graph = folder_graph(source_modules())
    upward = {f"{a} -> {b}" for a, targets in graph.items() for b in targets if b not in below[a]}
    assert not upward, f"imports against the layering topo <- controller <- apps <- scenarios: {sorted(upward)}"


@pytest.mark.parametrize("name", sorted(n for n in source_modules() if n.startswith(THEORY)))
def test_theory_imports_nothing_from_the_emulation(name):
    outside = {i for i in source_modules()[name]
               if i.split(".")[0] in PACKAGES and not i.startswith(THEORY)}
    assert not outside, f"{name} imports {sorted(outside)}; the theory must stand alone"


# The size guide (docs/CONTRIBUTING.md, "Conventions"): modules, classes and functions past it,
# each with the sentence in CONTRIBUTING.md that says why. The only exceptions are compiled event
# loops (numba), one function each so that the compiler keeps every array local; each says so in its
# docstring, in a paragraph that starts "Why one long loop:". A new one is added here by name.
MAX_MODULE_LINES, MAX_CLASS_LINES, MAX_FUNCTION_LINES = 500, 300, 80
SIZE_EXCEPTIONS = {
    "controller.theory.fastfluid.simulate_means",
    "controller.theory.fastlanes.simulate_weighted_pairs",
    "controller.theory.fastpatterns.simulate",
}
WHY_LONG = "Why one long loop:"


def oversized() -> list[str]:
    """Every module, class and function of the product past the size guide, as dotted names."""
    found = []
    for package in (*PACKAGES, "bench"):
        for path in sorted((REPO / package).rglob("*.py")):
            source = path.read_text()
            module = module_name(path)
            if len(source.splitlines()) > MAX_MODULE_LINES:
                found.append(module)
            for node in ast.walk(ast.parse(source)):
                limit = (MAX_CLASS_LINES if isinstance(node, ast.ClassDef) else
                         MAX_FUNCTION_LINES if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else None)
                if limit and node.end_lineno - node.lineno + 1 > limit:
                    found.append(f"{module}.{node.name}")
    return found


def test_the_size_guide_holds_but_for_the_exceptions_contributing_explains():
    assert set(oversized()) == SIZE_EXCEPTIONS
    contributing = (REPO / "docs" / "CONTRIBUTING.md").read_text()
    for name in SIZE_EXCEPTIONS:
        assert f"`{name.rsplit('.', 2)[-2]}.{name.rsplit('.', 1)[-1]}`" in contributing, name


def function_node(dotted: str) -> ast.FunctionDef:
    """The top-level function ``dotted`` (``package.module.function``) of the product, read with ``ast``."""
    module, _, function = dotted.rpartition(".")
    tree = ast.parse((REPO / (module.replace(".", "/") + ".py")).read_text())
    return next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == function)


@pytest.mark.parametrize("name", sorted(SIZE_EXCEPTIONS))
def test_each_long_function_is_a_compiled_loop_that_says_why(name):
    node = function_node(name)
    decorators = [ast.unparse(d) for d in node.decorator_list]
    assert any(d.startswith(("numba.njit", "numba.jit", "njit")) for d in decorators), (
        f"{name}: only compiled loops may pass {MAX_FUNCTION_LINES} lines, its decorators are {decorators}")
    assert WHY_LONG in (ast.get_docstring(node) or ""), f"{name}: its docstring must say why ({WHY_LONG!r})"


# The front door stays one: the README a page, docs/accuracy.md the current figures only (older
# figures live in the git history).
MAX_DOC_BYTES = {"README.md": 10_000, "docs/accuracy.md": 30_000}


@pytest.mark.parametrize("page", sorted(MAX_DOC_BYTES))
def test_the_readme_and_the_accuracy_page_stay_short(page):
    size = len((REPO / page).read_bytes())
    assert size <= MAX_DOC_BYTES[page], f"{page} is {size} bytes, more than {MAX_DOC_BYTES[page]}"


FRAMEWORK_ADAPTER = {"controller.framework", "controller.ryu_compat", "controller.ryu_hook"}


def test_only_the_adapter_imports_ryu_os_ken_or_eventlet():
    """The apps are written once: which framework runs them is known to ``controller/framework.py``
    alone (``ryu_compat``/``ryu_hook``: Ryu's eventlet shim), in the product and in bench/."""
    offenders = []
    for path in sorted(p for folder in (*PACKAGES, "bench") for p in (REPO / folder).rglob("*.py")):
        name = module_name(path)
        if name in FRAMEWORK_ADAPTER:
            continue
        hit = sorted(i for i in imports_of(path) if i.split(".")[0] in ("ryu", "os_ken", "eventlet"))
        if hit:
            offenders.append(f"{name}: {', '.join(hit)}")
    assert not offenders, offenders
    # and the check can fail: the adapter itself does import the frameworks' packages
    assert any(i.split(".")[0] == "eventlet" for i in imports_of(REPO / "controller" / "framework.py"))
