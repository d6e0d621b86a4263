"""The controller starts on every framework installed here (python -m controller; on Ryu also the
stock ryu-manager) and its REST refuses bad pins.

No switches and no root needed: a real controller process on free ports, once per framework.
"""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from controller.fabric_config import CONFIG_ENV, FabricConfig
from controller.framework_choice import FRAMEWORK_ENV, installed
from controller.process import ControllerProcess, free_tcp_port
from topo.wiring import FabricParams

pytestmark = pytest.mark.xdist_group("serial")  # starts controllers and waits on them by the clock: one at a time (make test)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def config_path(tmp_path):
    path = tmp_path / "fabric.json"
    FabricConfig(FabricParams(spines=2, leaves=3, hosts_per_leaf=1)).write(str(path))
    return path


def put(url, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="PUT")
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return reply.status, json.load(reply)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def listening_addresses(port: int) -> list[str]:
    """Local addresses (hex, as /proc/net/tcp{,6} give them) of the sockets listening on ``port``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, port_hex = fields[1].rsplit(":", 1)
            if fields[3] == "0A" and int(port_hex, 16) == port:  # 0A: LISTEN
                found.append(address)
    return found


def test_the_command_line_listens_on_loopback_unless_told_otherwise():
    from controller.__main__ import manager_argv, parser

    apps, argv = manager_argv(parser().parse_args(["controller.scheduler_app", "--ofp-port", "6700"]))
    assert apps == ["controller.fabric_app", "controller.scheduler_app"]
    options = dict(zip(argv[::2], argv[1::2], strict=True))
    assert options == {"--ofp-listen-host": "127.0.0.1", "--ofp-tcp-listen-port": "6700",
                       "--wsapi-host": "127.0.0.1", "--wsapi-port": "8080"}
    _, argv = manager_argv(parser().parse_args(["--ofp-host", "0.0.0.0", "--wsapi-host", "::1"]))
    assert argv[argv.index("--ofp-listen-host") + 1] == "0.0.0.0" and argv[argv.index("--wsapi-host") + 1] == "::1"


def describe(framework: str | None) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if k != FRAMEWORK_ENV}
    argv = [sys.executable, "-m", "controller", "--describe"] + (["--framework", framework] if framework else [])
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=env, timeout=60)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("framework", installed())
def test_describe_names_the_framework_its_version_and_hub(framework):
    code, out, err = describe(framework)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["framework"] == framework and doc["version"] and doc["hub"] in ("eventlet", "native")
    assert doc["python"] == ".".join(map(str, sys.version_info[:3]))


def test_the_default_framework_is_the_first_installed_and_a_bad_name_is_one_line():
    code, out, _ = describe(None)
    assert code == 0 and json.loads(out)["framework"] == installed()[0]
    done = subprocess.run([sys.executable, "-m", "controller", "--describe"], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, FRAMEWORK_ENV: "floodlight"}, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().count("\n") == 0 and "must be one of ryu, os-ken" in done.stderr


@pytest.mark.parametrize("framework", installed())
def test_python_m_controller_serves_status_and_validates_pins(config_path, framework):
    controller = ControllerProcess(config_path, env={FRAMEWORK_ENV: framework})
    controller.start()
    try:
        # the framework took the option: OpenFlow and REST listen on 127.0.0.1 only
        assert listening_addresses(controller.ofp_port) == ["0100007F"]
        assert listening_addresses(controller.wsapi_port) == ["0100007F"]
        status = controller.status()
        assert status["expected_dpids"] == [0x101, 0x102, 0x103, 0x201, 0x202]
        assert status["ready"] is False and status["connected_dpids"] == []
        code, body = put(f"{controller.rest_url}/fabric/pins", [{"spine": 3}])
        assert code == 400 and "pins[0].spine" in body["error"]
        code, body = put(f"{controller.rest_url}/fabric/pins", {"not": "a list"})
        assert code == 400
        code, body = put(f"{controller.rest_url}/fabric/pins", [{"spine": 2, "dst_port_range": [5201, 5210]}])
        assert code == 200 and body["pins"][0]["spine"] == 2
        code, body = put(f"{controller.rest_url}/fabric/nothing", [])
        assert code == 404 and "no such resource" in body["error"]
        code, body = put(f"{controller.rest_url}/fabric/status", [])
        assert code == 405 and "GET" in body["error"]
        assert controller.alive()
    finally:
        controller.stop()
    assert not controller.alive()


def stock_ryu_manager_runs_the_app_file(config_path):
    """Where Ryu is installed, its own ``ryu-manager`` runs the app file and serves its REST."""
    ryu_manager = Path(sys.executable).parent / "ryu-manager"
    assert ryu_manager.exists(), "Ryu is installed but its ryu-manager is not next to this Python"
    import sysconfig

    from controller.ryu_hook import PTH_NAME
    assert (Path(sysconfig.get_paths()["purelib"]) / PTH_NAME).exists(), (
        "make install must run `.venv/bin/python -m controller.ryu_hook --install-pth`")
    wsapi_port = free_tcp_port()
    proc = subprocess.Popen(
        [str(ryu_manager), "controller/fabric_app.py", "--ofp-tcp-listen-port", str(free_tcp_port()),
         "--wsapi-host", "127.0.0.1", "--wsapi-port", str(wsapi_port)],
        cwd=REPO, env={"PATH": "/usr/bin:/bin", CONFIG_ENV: str(config_path)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stdout.read()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{wsapi_port}/fabric/status", timeout=1) as reply:
                    assert json.load(reply)["fabric"]["leaves"] == 3
                    return
            except OSError:
                time.sleep(0.1)
        pytest.fail("ryu-manager controller/fabric_app.py did not serve /fabric/status")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if "ryu" in installed():  # only where Ryu is (Python 3.11); os-ken 4.x has no manager script
    test_stock_ryu_manager_runs_the_app_file = stock_ryu_manager_runs_the_app_file
