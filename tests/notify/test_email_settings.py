"""``Email`` refuses, when it is made, a server no message could reach, naming the argument."""

from __future__ import annotations

from typing import Any

import pytest

from roomkit.notify import Email


def _email(**options: Any) -> Email:
    return Email(**{"host": "smtp.example.com", "sender": "desk@example.com", **options})


@pytest.mark.parametrize("port", [70000, 65536, 0, -1], ids=repr)
def test_a_port_outside_the_tcp_range_is_refused(port: int) -> None:
    with pytest.raises(ValueError, match=r"^Email\(port=\.\.\.\) must be a port from 1 to 65535"):
        _email(port=port)


@pytest.mark.parametrize("port", [True, "587", 587.0, None], ids=repr)
def test_a_port_that_is_no_whole_number_is_refused(port: object) -> None:
    """A bool is no port, though Python counts it an int."""
    with pytest.raises(TypeError, match=r"^Email\(port=\.\.\.\) must be a whole number"):
        _email(port=port)


@pytest.mark.parametrize("host", ["", " ", "smtp example.com", "smtp\n.example.com", "smtp\udc80"])
def test_a_host_no_server_has_is_refused(host: str) -> None:
    with pytest.raises(ValueError, match=r"^Email\(host=\.\.\.\) names the SMTP server"):
        _email(host=host)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"username": 5, "password": "secret"}, "username"),
        ({"username": "me", "password": b"secret"}, "password"),
        ({"cafile": 5}, "cafile"),
        ({"tls_context": "TLS"}, "tls_context"),
    ],
    ids=["username", "password", "cafile", "tls_context"],
)
def test_settings_of_another_type_are_refused_by_name(options: dict[str, Any], named: str) -> None:
    with pytest.raises(TypeError, match=rf"^Email\({named}=\.\.\.\) must be"):
        _email(**options)


@pytest.mark.parametrize("port", [1, 25, 465, 587, 65535])
def test_every_tcp_port_is_taken(port: int) -> None:
    assert _email(port=port).port == port
