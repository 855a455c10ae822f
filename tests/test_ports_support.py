"""tests/ports_support.py: the distributed tests' ports are reserved outside the kernel's ephemeral
range and a launch whose port was taken meanwhile runs again on another port. The port is stolen
for real (the test binds it between the choice and the launch), for each kind of launcher message."""

from __future__ import annotations

import socket
import sys

import pytest
from ports_support import ephemeral_range, reserved_port, run_on_a_port
from requires_support import require_module

BIND = "import socket, sys\ns = socket.socket()\ns.bind(('127.0.0.1', int(sys.argv[1])))\nprint('bound')\n"
TCPSTORE = (
    "import sys, datetime\nimport torch.distributed as d\n"
    "d.TCPStore('127.0.0.1', int(sys.argv[1]), 1, True, timeout=datetime.timedelta(seconds=20))\nprint('bound')\n"
)
# msrun's scheduler only logs that it could not listen; the launcher itself exits non-zero.
SILENT = "import sys\nsys.exit(0 if sys.argv[2] == 'free' else 1)\n"


def test_reserved_ports_are_below_the_ephemeral_range_bindable_and_distinct():
    low = ephemeral_range()[0]
    ports = [reserved_port() for _ in range(50)]
    assert len(set(ports)) == 50 and all(1024 < p < low for p in ports)
    for port in ports[:5]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


class Thief:
    """Takes the port of the first launch (bound and listening) before the launcher gets it."""

    def __init__(self, child: str) -> None:
        self.child, self.ports, self.held = child, [], []

    def launch(self, port: int) -> tuple[list[str], dict[str, str]]:
        self.ports.append(port)
        if len(self.ports) == 1:
            s = socket.socket()
            s.bind(("127.0.0.1", port))
            s.listen()
            self.held.append(s)
        state = "taken" if len(self.ports) == 1 else "free"
        return [sys.executable, "-c", self.child, str(port), state], {}

    def logs(self, port: int) -> str:
        return "Failed to init the tcp server." if port == self.ports[0] and self.child == SILENT else ""

    def close(self) -> None:
        for s in self.held:
            s.close()


@pytest.mark.parametrize("kind", ["bind", "tcpstore", "scheduler_log"])
def test_a_launch_whose_port_was_taken_runs_again_on_another(kind):
    if kind == "tcpstore":
        require_module("torch")
    thief = Thief({"bind": BIND, "tcpstore": TCPSTORE, "scheduler_log": SILENT}[kind])
    try:
        run = run_on_a_port(thief.launch, thief.logs, timeout=120)
    finally:
        thief.close()
    assert run.returncode == 0, run.stderr[-2000:]
    assert len(thief.ports) == 2 and thief.ports[0] != thief.ports[1]


def test_a_failure_that_is_not_the_port_is_not_retried():
    calls = []

    def launch(port: int) -> tuple[list[str], dict[str, str]]:
        calls.append(port)
        return [sys.executable, "-c", "import sys\nsys.exit('boom: a real failure')"], {}

    run = run_on_a_port(launch, timeout=60)
    assert run.returncode == 1 and "boom" in run.stderr and len(calls) == 1


def test_a_port_taken_every_time_gives_up_after_the_attempts():
    thief_ports = []

    def launch(port: int) -> tuple[list[str], dict[str, str]]:
        thief_ports.append(port)
        return [sys.executable, "-c", "import sys\nsys.exit('OSError: [Errno 98] Address already in use')"], {}

    run = run_on_a_port(launch, attempts=3, timeout=60)
    assert run.returncode == 1 and len(thief_ports) == 3
