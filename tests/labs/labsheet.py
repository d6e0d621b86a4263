"""Lab sheets as data: the commands a student types and the numbers the sheet promises.

A sheet (docs/labs/lab*.md) marks what the tests run with the info string of
its fenced blocks (docs/labs/README.md):

- ```` ```sh lab ````: commands a student runs at the repository root, no root needed;
- ```` ```sh lab-root ````: the same, for the parts that need root (``sudo ...``);
- ```` ```sh lab-background ````: a command left running in a second terminal
  (the controller); the test starts it, and ends it by its PID afterwards;
- ```` ```text lab-mininet ````: what is typed at the ``mininet>`` prompt of the
  ``mn`` command just before it; the test hands these lines to that same
  command as ``--test none --post FILE`` (``exit`` is left out).

Its "What you should see" table promises numbers: rows ``| what | `key` |
expected |`` where the commands print ``key = value`` lines and *expected*
is ``X ± T`` (a unit may follow), ``X to Y``, ``at least X``, ``at most X``,
an exact number or word
(``true``, ``300``), or, with ``(output)`` as the key, a `` `literal` ``
that must appear in the output.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from scenarios.exitcodes import FIDELITY_LOST

REPO = Path(__file__).resolve().parents[2]
LABS = REPO / "docs" / "labs"
FENCE = re.compile(r"^```(\w+) (lab(?:-root|-background|-mininet)?)\s*$")
KEY_LINE = re.compile(r"^([A-Za-z0-9_.\-]+) = (\S+)\s*$")
NUMBER = r"[-+]?\d+(?:\.\d+)?"


@dataclass(frozen=True)
class Block:
    kind: str  # lab | lab-root | lab-background | lab-mininet
    lines: tuple[str, ...]
    line_no: int

    def commands(self) -> list[str]:
        """Non-empty lines, comments dropped, ``\\`` continuations joined."""
        out, pending = [], ""
        for raw in self.lines:
            line = raw.rstrip()
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            out.append(pending + line)
            pending = ""
        return out


@dataclass(frozen=True)
class Expectation:
    what: str
    key: str | None  # None: a literal that must appear in the output
    expected: str

    def form(self) -> str:
        """literal | tolerance | range | number | word (true, false or a name such as a job's);
        ValueError for anything else (a placeholder)."""
        if self.key is None:
            if self.expected.startswith("`") and self.expected.endswith("`"):
                return "literal"
        elif re.fullmatch(rf"{NUMBER}\s*±\s*{NUMBER}.*", self.expected):
            return "tolerance"
        elif re.fullmatch(rf"{NUMBER}\s+to\s+{NUMBER}.*", self.expected):
            return "range"
        elif re.fullmatch(rf"at (least|most)\s+{NUMBER}.*", self.expected):
            return "bound"
        elif re.fullmatch(rf"{NUMBER}(\s+\S+)?", self.expected):
            return "number"
        elif self.expected in ("true", "false") or re.fullmatch(r"[A-Za-z][A-Za-z0-9_.-]*", self.expected):
            return "word"
        raise ValueError(f"{self.what}: cannot read the promise {self.expected!r}")

    def check(self, values: dict[str, str], output: str) -> str | None:
        """None if the promise holds, else what was wrong (one line)."""
        if self.key is None:
            literal = self.expected.strip("`")
            return None if literal in output else f"{self.what}: {literal!r} not in the output"
        if self.key not in values:
            return f"{self.what}: no line '{self.key} = ...' in the output"
        got = values[self.key]
        m = re.fullmatch(rf"({NUMBER})\s*±\s*({NUMBER}).*", self.expected)
        if m:
            centre, tol = float(m.group(1)), float(m.group(2))
            ok = abs(float(got) - centre) <= tol + 1e-9
            return None if ok else f"{self.what}: {self.key} = {got}, promised {self.expected}"
        m = re.fullmatch(rf"({NUMBER})\s+to\s+({NUMBER}).*", self.expected)
        if m:
            lo, hi = float(m.group(1)), float(m.group(2))
            ok = lo - 1e-9 <= float(got) <= hi + 1e-9
            return None if ok else f"{self.what}: {self.key} = {got}, promised {self.expected}"
        m = re.fullmatch(rf"at (least|most)\s+({NUMBER}).*", self.expected)
        if m:
            bound = float(m.group(2))
            ok = float(got) >= bound - 1e-9 if m.group(1) == "least" else float(got) <= bound + 1e-9
            return None if ok else f"{self.what}: {self.key} = {got}, promised {self.expected}"
        m = re.fullmatch(rf"({NUMBER})(\s+\S+)?", self.expected)
        if m:
            ok = abs(float(got) - float(m.group(1))) < 1e-9
            return None if ok else f"{self.what}: {self.key} = {got}, promised {self.expected}"
        return None if got == self.expected else f"{self.what}: {self.key} = {got}, promised {self.expected}"


@dataclass
class Sheet:
    path: Path
    blocks: list[Block]
    expectations: list[Expectation]

    @property
    def needs_root(self) -> bool:
        return any(b.kind != "lab" for b in self.blocks)


def parse(path: Path) -> Sheet:
    text = Path(path).read_text()
    blocks, lines, kind, start = [], [], None, 0
    for i, line in enumerate(text.splitlines(), 1):
        if kind is None:
            m = FENCE.match(line)
            if m:
                kind, lines, start = m.group(2), [], i
        elif line.strip() == "```":
            blocks.append(Block(kind, tuple(lines), start))
            kind = None
        else:
            lines.append(line)
    expectations = []
    section = re.search(r"^## What you should see\s*$(.*?)(?=^## |\Z)", text, re.S | re.M)
    if section:
        for row in section.group(1).splitlines():
            cells = [c.strip() for c in row.strip().strip("|").split("|")]
            if len(cells) != 3 or set(cells[1]) <= {"-", " "} or cells[1] == "key":
                continue
            key = None if cells[1] == "(output)" else cells[1].strip("`")
            expectations.append(Expectation(cells[0], key, cells[2]))
    return Sheet(Path(path), blocks, expectations)


def host_disturbed(results_dirs) -> dict[str, float]:
    """The measurements of these ``shiftbed run`` results folders that the machine's host disturbed
    in every attempt (``fidelity.disturbed``), named ``"<scenario> <measurement>"``, each with the
    CPU the host took (%). Only the host counts: a job whose bursts drifted (``fidelity.drifted``)
    ran as shiftbed made it run."""
    out = {}
    for folder in results_dirs:
        try:
            fidelity = json.loads((Path(folder) / "summary.json").read_text()).get("fidelity") or {}
        except (OSError, ValueError):
            continue
        steal = fidelity.get("host_steal_pct") or {}
        out.update({f"{Path(folder).parent.name} {what}": float(steal.get(what, fidelity.get("host_steal_max_pct", 0)))
                    for what in fidelity.get("disturbed") or ()})
    return out


def sheets() -> list[Path]:
    return sorted(LABS.glob("lab[0-9]*.md"))


def as_run(command: str) -> str:
    """The command as the test runs it: ``sudo`` is dropped when already root (CI runs as root), and a
    bare ``shiftbed`` (``sudo shiftbed run ...``: the link ``make install`` puts on the PATH) is this
    checkout's ``.venv/bin/shiftbed``, whichever checkout the PATH's link points to."""
    if os.geteuid() == 0 and command.startswith("sudo "):
        command = command[len("sudo "):]
    for prefix in ("shiftbed ", "sudo shiftbed "):
        if command.startswith(prefix):
            return prefix.replace("shiftbed ", f"{shlex.quote(str(REPO / '.venv' / 'bin' / 'shiftbed'))} ") \
                + command[len(prefix):]
    return command


# Where the tier without root leaves each sheet's no-root output for the real-fabric tier (`make test` sets it),
# so that the root test runs only the sheet's root parts and judges every promise on both outputs together.
NO_ROOT_OUTPUT_ENV = "SHIFTBED_LAB_OUTPUT"


def no_root_output_path(sheet: Sheet) -> Path | None:
    folder = os.environ.get(NO_ROOT_OUTPUT_ENV)
    return Path(folder) / f"{sheet.path.stem}.out" if folder else None


def keep_no_root_output(sheet: Sheet, output: str) -> None:
    """The output of the sheet's no-root commands, for the root test of the same `make test`."""
    path = no_root_output_path(sheet)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(output)


def kept_no_root_output(sheet: Sheet) -> str | None:
    """What :func:`keep_no_root_output` kept of the sheet in this `make test`, or None (run them again)."""
    path = no_root_output_path(sheet)
    return path.read_text() if path is not None and path.is_file() else None


def key_values(output: str) -> dict[str, str]:
    values = {}
    for line in output.splitlines():
        m = KEY_LINE.match(line.strip())
        if m:
            values[m.group(1)] = m.group(2)
    return values


class LabTimeout(AssertionError):
    """A sheet's command ran past the test's deadline (ended with SIGTERM); ``output``: what it printed."""

    def __init__(self, message: str, output: str):
        super().__init__(message)
        self.output = output


@dataclass
class LabRun:
    """Runs a sheet's blocks in order; collects output; ends what it started, by PID."""

    sheet: Sheet
    kinds: tuple[str, ...] = ("lab",)
    timeout_s: float = 300.0
    output: str = ""
    background: list[subprocess.Popen] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    def run(self) -> dict[str, str]:
        try:
            blocks = self.sheet.blocks
            for i, block in enumerate(blocks):
                if block.kind not in self.kinds or block.kind == "lab-mininet":
                    continue
                if block.kind == "lab-background":
                    for command in block.commands():
                        self.start_background(command)
                    continue
                after = blocks[i + 1] if i + 1 < len(blocks) else None
                for command in block.commands():
                    cli = None
                    if re.match(r"^(sudo )?mn ", command) and after is not None and after.kind == "lab-mininet":
                        cli = [c for c in after.commands() if c.strip() != "exit"]
                    self.run_command(command, cli)
        finally:
            self.stop_background()
        return key_values(self.output)

    def run_command(self, command: str, cli: list[str] | None = None) -> None:
        command = as_run(command)
        script = None
        if cli is not None:
            script = tempfile.NamedTemporaryFile("w", suffix=".mn", delete=False)
            script.write("\n".join(cli) + "\n")
            script.close()
            command += f" --test none --post {shlex.quote(script.name)}"
        started = time.monotonic()
        # stdin: a pipe nobody writes, so a command mn runs in a host never reads the test's input
        proc = subprocess.Popen(["bash", "-c", command], cwd=REPO, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, stdin=subprocess.PIPE)
        try:
            stdout, stderr = proc.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            # SIGTERM, as a user's Ctrl-C: the run keeps what it measured and removes what it built
            proc.send_signal(signal.SIGTERM)
            try:
                stdout, stderr = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                stdout, stderr = proc.communicate()
            self.output += stdout + stderr
            raise LabTimeout(f"{self.sheet.path.name}: `{command}` took more than {self.timeout_s:g} s:\n"
                             f"{(stdout + stderr)[-3000:]}", stdout + stderr) from None
        finally:
            if script is not None:
                os.unlink(script.name)
        # exit 3: a `shiftbed run` measured but lost fidelity; its promises, and whether the host
        # disturbed it (host_disturbed), judge it as any other run
        measured = proc.returncode == FIDELITY_LOST and re.search(r"\bshiftbed (run|demo)\b", command)
        self.log.append(f"{time.monotonic() - started:6.1f} s  {command}" + (" (exit 3: fidelity lost)" if measured else ""))
        self.output += stdout + stderr
        if proc.returncode != 0 and not measured:
            raise AssertionError(f"{self.sheet.path.name}: `{command}` exited {proc.returncode}:\n"
                                 f"{(stdout + stderr)[-3000:]}")

    def start_background(self, command: str, ready_s: float = 8.0) -> None:
        log = tempfile.NamedTemporaryFile("w+", suffix=".bg", delete=False)
        proc = subprocess.Popen(["bash", "-c", "exec " + as_run(command)], cwd=REPO, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.background.append(proc)
        deadline = time.monotonic() + ready_s
        while time.monotonic() < deadline and proc.poll() is None:
            if "starting up" in Path(log.name).read_text(errors="replace"):  # the controller's REST server is up
                break
            time.sleep(0.2)
        if proc.poll() is not None:
            raise AssertionError(f"`{command}` exited at once:\n{Path(log.name).read_text()[-2000:]}")
        self.log.append(f"background pid {proc.pid}: {command}")
        os.unlink(log.name)

    def stop_background(self) -> None:
        for proc in self.background:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.background.clear()

    def failures(self, values: dict[str, str], keys_only_from_output: bool = False) -> list[str]:
        """Broken promises; with ``keys_only_from_output`` rows whose key was not printed are skipped."""
        out = []
        for e in self.sheet.expectations:
            if keys_only_from_output and (e.key is None or e.key not in values):
                continue
            problem = e.check(values, self.output)
            if problem:
                out.append(problem)
        return out
