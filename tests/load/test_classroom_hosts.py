"""The README's classroom command, run for real on 127.0.0.1: the teacher's own browser
(Host: localhost or 127.0.0.1) and the students' (the laptop's address) all reach the
app, and a host name nobody listed does not.

The command is read from README.md, with the laptop's example address replaced by
127.0.0.2: a stand-in for the room's network address, apart from the loopback names.
The server itself listens on 127.0.0.1. Streamlit checks the Host header when a page
opens its websocket: a host not in server.allowedHosts gets 403 there (every plain
page answers 200 whatever the host), so that handshake is what is checked.
"""

from __future__ import annotations

import base64
import http.client
import os
import shlex

import pytest

from bench.server import HOST, REPO_ROOT, Server

pytestmark = pytest.mark.slow

README = REPO_ROOT / "README.md"
LAPTOP = "192.168.1.20"  # the example address in the README's classroom section
STAND_IN = "127.0.0.2"


def classroom_command() -> list[str]:
    """The `streamlit run` line of the README's classroom section, split as a shell would."""
    section = README.read_text(encoding="utf-8").split("## Using it in a classroom", 1)[1]
    section = section.split("\n## ", 1)[0]
    line = next(
        line.strip() for line in section.splitlines() if line.strip().startswith("streamlit run")
    )
    return shlex.split(line)


def option_values(command: list[str], name: str) -> list[str]:
    return [command[i + 1] for i, word in enumerate(command[:-1]) if word == name]


def websocket_handshake(port: int, host: str) -> int:
    """The status of a websocket upgrade to 127.0.0.1:port sent with `Host: host:port`
    (101 when the server takes it). The TCP connection goes to 127.0.0.1 whatever the
    header says."""
    connection = http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        connection.request(
            "GET",
            "/_stcore/stream",
            headers={
                "Host": f"{host}:{port}",
                "Origin": f"http://{host}:{port}",
                "Connection": "Upgrade",
                "Upgrade": "websocket",
                "Sec-WebSocket-Version": "13",
                "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
                "Sec-WebSocket-Protocol": "streamlit",
            },
        )
        return connection.getresponse().status
    finally:
        connection.close()


@pytest.fixture(scope="module")
def classroom_server(running_server):
    command = classroom_command()
    listed = option_values(command, "--server.allowedHosts")
    hosts = [value.replace(LAPTOP, STAND_IN) for value in listed]
    assert hosts, "the classroom command lists no --server.allowedHosts"
    # Only the host list is taken from the README: this server listens on 127.0.0.1.
    extra = tuple(arg for host in hosts for arg in ("--server.allowedHosts", host))
    with running_server("streamlit-classroom-hosts", extra_args=extra) as srv:
        yield srv


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_the_teacher_on_the_laptop_is_not_locked_out(classroom_server: Server, host: str):
    assert websocket_handshake(classroom_server.port, host) == 101


def test_the_students_reach_it_by_the_laptops_address(classroom_server: Server):
    assert websocket_handshake(classroom_server.port, STAND_IN) == 101


def test_a_host_name_nobody_listed_is_refused(classroom_server: Server):
    assert websocket_handshake(classroom_server.port, "attacker.example") == 403


def test_the_classroom_command_listens_on_the_laptops_address_only():
    command = classroom_command()
    assert option_values(command, "--server.address") == [LAPTOP]
    assert LAPTOP in option_values(command, "--server.allowedHosts")
