"""The product's layers, checked module by module on the source (docs/design.md, "Layers").

Every product module (``topo``, ``controller``, ``apps``, ``scenarios``) has a layer, given by
:data:`LAYER_OF` below; a module that no entry places fails, so a new package or a new module
directly under ``scenarios/`` is placed when it is added. Three rules hold:

- **downward only**: a module imports from its own layer and the layers below it, never above;
- **the command line is the top**: only ``scenarios/cli.py`` and ``scenarios/commands/`` import
  ``scenarios.commands`` (a decision a command needs elsewhere moves down, the command keeps
  its adapter);
- **no circle**: no product modules import each other in a circle, module by module (each
  strongly connected component of more than one module is reported; an import put inside a
  function to dodge a circle still counts).

Every import is read with ``ast``, those inside functions too, and relative imports are resolved
against the importing module's package. ``from a import b`` imports the module ``a.b`` when there
is one, else ``a``.
"""

import ast
from dataclasses import dataclass
from functools import cache

from test_layering import PACKAGES, REPO, module_name

# The layers, top to bottom. Each imports only from itself and the layers below it.
LAYERS = (
    "command line",         # `shiftbed` and one thin adapter per subcommand
    "batch and explorer",   # many scenarios on the wire; the classroom explorer
    "experiment",           # one run of one scenario: calibration, policies, results folder
    "report",               # a results folder drawn: report.md, report.html, plots
    "analysis",             # measurements -> numbers: pcap, tables, verdicts, meetings
    "scenario foundation",  # a scenario and its records: spec, routes, the model's plan, results
    "apps",                 # programs on the emulated hosts, and their data
    "controller",           # SDN decisions and their adapters; the theory in controller/theory/
    "topo",                 # the emulated fabric
)

# Each product module's layer. A name ending in ".*" places that package and every module in it;
# a plain name places that one module. The most specific entry wins; a module none places fails.
LAYER_OF = {
    "scenarios.cli": "command line",
    "scenarios.commands.*": "command line",
    "scenarios.batch.*": "batch and explorer",
    "scenarios.explore.*": "batch and explorer",
    "scenarios.experiment.*": "experiment",
    # whether this machine can run a scenario (run's and the batch's check before anything is
    # built): it asks the run's own schedules (scenarios.experiment.runner), so it sits with the run
    "scenarios.runnable": "experiment",
    "scenarios.report.*": "report",
    "scenarios.analysis.*": "analysis",
    "scenarios": "scenario foundation",  # the package itself: the release number
    "scenarios.spec": "scenario foundation",
    "scenarios.policyfiles": "scenario foundation",  # a user's policy files, which the spec names
    "scenarios.tracefile": "scenario foundation",  # a profiler trace -> a job's pattern
    "scenarios.patternjob": "scenario foundation",  # a pattern job's fields -> its phases, for the spec
    "scenarios.timescale": "scenario foundation",
    "scenarios.routes": "scenario foundation",
    "scenarios.sharedlink": "scenario foundation",
    "scenarios.runlinks": "scenario foundation",
    # the model's prediction for a scenario: the report words it, the batch and the explorer ask
    # it, `plan` prints it, so it sits below all of them, on the spec and the routes
    "scenarios.planning": "scenario foundation",
    "scenarios.results": "scenario foundation",
    "scenarios.files": "scenario foundation",  # files written whole, as plain JSON: every writer's
    "scenarios.throughput": "scenario foundation",  # a policy's change against none: the run's and the model's
    "scenarios.summary_record": "scenario foundation",
    "scenarios.schedule_record": "scenario foundation",
    "scenarios.errors": "scenario foundation",
    "scenarios.exitcodes": "scenario foundation",
    "scenarios.version": "scenario foundation",
    # option parsing shared by several commands and by the batch's settings: below the batch
    "scenarios.options": "scenario foundation",
    "scenarios.cluster": "scenario foundation",  # --dask-scheduler, for sweep, map and the batch's fleet
    # SIGTERM/SIGHUP as Ctrl-C, for run and for the batch (here and on a fleet's workers)
    "scenarios.interrupts": "scenario foundation",
    # logging and a command's problems as one line each: the command line, and a fleet worker's child
    "scenarios.console": "scenario foundation",
    # the shipped scenario files and the demo's two: the demo reads them, the batch's settings too
    "scenarios.shipped": "scenario foundation",
    "apps.*": "apps",
    "controller.*": "controller",
    "topo.*": "topo",
}

COMMAND_LINE = ("scenarios.cli", "scenarios.commands")  # all that may import scenarios.commands
COMMANDS = "scenarios.commands"


def places(key: str, name: str) -> bool:
    """Whether the entry ``key`` of :data:`LAYER_OF` places module ``name``."""
    return name == key.removesuffix(".*") or (key.endswith(".*") and name.startswith(key[:-1]))


def layer_of(name: str) -> str | None:
    """The layer :data:`LAYER_OF` gives module ``name``, or None when no entry places it."""
    keys = [key for key in LAYER_OF if places(key, name)]
    return LAYER_OF[max(keys, key=len)] if keys else None


def rank(layer: str) -> int:
    """Higher is further up: the command line has the highest rank, topo 0."""
    return len(LAYERS) - 1 - LAYERS.index(layer)


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int

    def __str__(self):
        return f"{self.importer} (line {self.line}) imports {self.imported}"


def import_statements(source: str, name: str, is_package: bool) -> list[tuple[int, list[str]]]:
    """Each import statement in ``source`` (module ``name``), anywhere in it: its line and every
    module name it may denote. Relative imports are resolved."""
    package = name if is_package else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.append((node.lineno, [alias.name for alias in node.names]))
        elif isinstance(node, ast.ImportFrom):
            module = node.module
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - (node.level - 1)])
                module = f"{base}.{node.module}" if node.module else base
            found.append((node.lineno, [module, *(f"{module}.{alias.name}"
                                                  for alias in node.names if alias.name != "*")]))
    return sorted(found)


def resolve(candidate: str, modules) -> str | None:
    """The product module ``candidate`` denotes: itself, else its longest prefix that is one."""
    while candidate and candidate not in modules:
        candidate = candidate.rpartition(".")[0]
    return candidate or None


def imports_between(sources: dict[str, tuple[str, bool]]) -> list[Import]:
    """Every import from one module of ``sources`` (name -> (source, is_package)) to another. A
    statement that names a package and a module in it (``from a import b``) counts as importing
    the module."""
    found = set()
    for name, (source, is_package) in sources.items():
        for line, candidates in import_statements(source, name, is_package):
            targets = {t for c in candidates if (t := resolve(c, sources)) and t != name}
            found.update(Import(name, t, line) for t in targets
                         if not any(other.startswith(t + ".") for other in targets))
    return sorted(found, key=lambda i: (i.importer, i.line, i.imported))


@cache
def product_sources() -> dict[str, tuple[str, bool]]:
    return {module_name(path): (path.read_text(), path.name == "__init__.py")
            for package in PACKAGES for path in sorted((REPO / package).rglob("*.py"))}


def upward_imports(imports: list[Import]) -> list[str]:
    """Rule 1: each import from a layer into one above it."""
    broken = []
    for i in imports:
        here, there = layer_of(i.importer), layer_of(i.imported)
        if here and there and rank(there) > rank(here):
            broken.append(f"{i}: upward, from layer '{here}' into '{there}' above it "
                          "(a module imports only from its own layer and those below)")
    return broken


def imports_of_the_commands(imports: list[Import]) -> list[str]:
    """Rule 2: each import of ``scenarios.commands`` from outside the command line."""
    def within(name, prefixes):
        return any(name == p or name.startswith(p + ".") for p in prefixes)

    return [f"{i}: only the command line ({', '.join(COMMAND_LINE)}) imports {COMMANDS}"
            for i in imports
            if within(i.imported, (COMMANDS,)) and not within(i.importer, COMMAND_LINE)]


def circles(imports: list[Import]) -> list[list[str]]:
    """Rule 3: the strongly connected components of more than one module (Tarjan), each sorted,
    in order of their first module."""
    graph: dict[str, set[str]] = {}
    for i in imports:
        graph.setdefault(i.importer, set()).add(i.imported)
        graph.setdefault(i.imported, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def connect(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(found)


def circle_messages(imports: list[Import]) -> list[str]:
    messages = []
    for component in circles(imports):
        inside = [str(i) for i in imports if i.importer in component and i.imported in component]
        messages.append(f"import circle among {', '.join(component)}: "
                        + "; ".join(inside))
    return messages


def report(kind: str, broken: list[str]) -> str:
    return f"{len(broken)} {kind}:\n  " + "\n  ".join(broken)


# ---- the checks can fail: each rule on a small made-up tree ----

def made_up(**modules: str) -> list[Import]:
    return imports_between({name.replace("__", "."): (source, False)
                            for name, source in modules.items()})


def test_imports_inside_functions_and_relative_imports_are_read():
    found = import_statements("import topo.wiring\n"
                              "def f():\n    from ..spec import Scenario\n"
                              "class C:\n    from . import routes\n",
                              "scenarios.batch.draw", False)
    assert found == [(1, ["topo.wiring"]), (3, ["scenarios.spec", "scenarios.spec.Scenario"]),
                     (5, ["scenarios.batch", "scenarios.batch.routes"])]
    assert import_statements("from . import x", "scenarios.batch", True) == [
        (1, ["scenarios.batch", "scenarios.batch.x"])]


def test_a_statement_imports_the_module_it_names_not_its_package():
    imports = made_up(scenarios="", scenarios__spec="from scenarios import errors, routes",
                      scenarios__errors="", scenarios__routes="from scenarios.errors import E")
    assert [str(i) for i in imports] == [
        "scenarios.routes (line 1) imports scenarios.errors",
        "scenarios.spec (line 1) imports scenarios.errors",
        "scenarios.spec (line 1) imports scenarios.routes"]


def test_the_table_places_modules_by_their_most_specific_entry():
    assert layer_of("scenarios.commands.run") == "command line"
    assert layer_of("scenarios.spec") == "scenario foundation"
    assert layer_of("scenarios") == "scenario foundation"
    assert layer_of("controller.theory.fluid") == "controller"
    assert layer_of("scenarios.newthing") is None
    assert layer_of("scenarios.spec.inner") is None  # a plain entry places one module only
    assert set(LAYER_OF.values()) <= set(LAYERS)


def test_each_rule_sees_its_violation():
    imports = made_up(scenarios__report__story="from scenarios.commands.plan import build_plan",
                      scenarios__commands__plan="def f():\n    import scenarios.spec",
                      scenarios__spec="",
                      apps__dltjob="import apps.transports",
                      apps__transports="def f():\n    import apps.dltjob\nimport scenarios.spec")
    assert [m.split(":")[0] for m in upward_imports(imports)] == [
        "apps.transports (line 3) imports scenarios.spec",
        "scenarios.report.story (line 1) imports scenarios.commands.plan"]
    assert len(imports_of_the_commands(imports)) == 1
    assert circles(imports) == [["apps.dltjob", "apps.transports"]]  # one import inside a function
    assert circles(made_up(a="import b", b="import c", c="import a", d="import a")) == [["a", "b", "c"]]


# ---- the product ----

def test_every_product_module_has_a_layer():
    unplaced = [f"{name}: no entry of LAYER_OF places it (every product module has a layer)"
                for name in product_sources() if layer_of(name) is None]
    assert not unplaced, report("modules without a layer", unplaced)


def test_every_entry_of_the_table_places_a_module():
    stale = [key for key in LAYER_OF if not any(places(key, name) for name in product_sources())]
    assert not stale, f"entries of LAYER_OF that place no module: {stale}"


def test_no_module_imports_from_a_layer_above_its_own():
    broken = upward_imports(imports_between(product_sources()))
    assert not broken, report("upward imports", broken)


def test_only_the_command_line_imports_the_commands():
    broken = imports_of_the_commands(imports_between(product_sources()))
    assert not broken, report(f"imports of {COMMANDS} from outside the command line", broken)


def test_no_product_modules_import_each_other_in_a_circle():
    broken = circle_messages(imports_between(product_sources()))
    assert not broken, report("import circles", broken)


def test_the_layers_are_the_ones_docs_design_describes():
    design = (REPO / "docs" / "design.md").read_text()
    missing = [layer for layer in LAYERS if layer not in design]
    assert not missing, f"docs/design.md does not name the layers {missing}"

