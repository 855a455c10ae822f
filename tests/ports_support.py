"""A TCP port for a distributed test launch (msrun's scheduler, torch's TCPStore), without the race of
"bind port 0, close, hand the number on".

That idiom takes the port from the kernel's ephemeral range, which every outgoing connection on the
machine draws from too (msrun's own workers connecting to the scheduler among them), so between the
close and the launcher's bind the port can be taken. Here a port is chosen BELOW the ephemeral range
(the kernel never hands those out by itself), different for each process and each call, and checked
by binding it; if the launch still reports the port taken, it is run again on the next port.
"""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

# What msrun's scheduler log / torch's TCPStore / a plain bind say when the port is taken.
PORT_TAKEN = ("address already in use", "eaddrinuse", "failed to init the tcp server", "ms_sched_port is occupied")
_LOW = 20000
_calls = itertools.count()


def ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def reserved_port() -> int:
    """A port below the ephemeral range that binds now; each process walks its own sequence (by pid),
    each call moves on, so parallel test workers and the sides of one test do not meet."""
    top = ephemeral_range()[0]
    span = top - _LOW
    start = (os.getpid() * 97) % span
    for step in range(span):
        port = _LOW + (start + (next(_calls) + step) * 7919) % span
        if _bindable(port):
            return port
    raise RuntimeError(f"no free port in {_LOW}..{top - 1}")


def port_taken(text: str) -> bool:
    low = text.lower()
    return any(marker in low for marker in PORT_TAKEN)


def run_on_a_port(
    launch: Callable[[int], tuple[list[str], dict[str, str]]],
    logs: Callable[[int], str] = lambda port: "",
    attempts: int = 3,
    **run_kwargs,
) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, env=env)`` with ``cmd, env = launch(port)`` on a reserved port; run again on
    another port when the launch failed because its port was taken (its output or ``logs(port)`` say
    so), at most ``attempts`` times."""
    run_kwargs.setdefault("capture_output", True)
    run_kwargs.setdefault("text", True)
    for _ in range(attempts):
        port = reserved_port()
        cmd, env = launch(port)
        run = subprocess.run(cmd, env=env, **run_kwargs)
        if run.returncode == 0 or not port_taken(f"{run.stdout}\n{run.stderr}\n{logs(port)}"):
            return run
    return run
