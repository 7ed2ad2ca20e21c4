"""A policy named in the notifier's TOML file is built, and parsed, when the file loads."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from engines import CEDAR, REGO

from roomkit.core.exceptions import NotifyConfigError
from roomkit.notify.config import load_notify_config
from roomkit.policy import CedarPolicy, Deny, OPAPolicy, PolicyCall, RegoPolicy

SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
HOOK = '[[webhook]]\nurl = "https://example.com/h"\nsecret_env = "HOOK_SECRET"\n'
ENV = {"HOOK_SECRET": SECRET}


def write(folder: Path, text: str) -> Path:
    path = folder / "notify.toml"
    path.write_text(HOOK + text, encoding="utf-8")
    return path


def test_a_cedar_policy_loads_from_the_file_beside_it(tmp_path: Path) -> None:
    (tmp_path / "pay.cedar").write_text(CEDAR, encoding="utf-8")
    table = '[policy]\nengine = "cedar"\nfile = "pay.cedar"\nshadow = true\nname = "pay"\n'
    config = load_notify_config(write(tmp_path, table), environ=ENV)
    policy = config.policy
    assert isinstance(policy, CedarPolicy)
    assert (policy.name, policy.shadow) == ("pay", True)
    call = PolicyCall("pay", {"to": "mallory", "amount": 5}, "d", "alice", "r", "c")
    assert isinstance(policy.decide(call), Deny)


def test_a_rego_policy_and_its_data_load(tmp_path: Path) -> None:
    (tmp_path / "pay.rego").write_text(REGO, encoding="utf-8")
    (tmp_path / "data.json").write_text("{}", encoding="utf-8")
    table = '[policy]\nengine = "rego"\nfile = ["pay.rego"]\ndata = "data.json"\n'
    config = load_notify_config(write(tmp_path, table), environ=ENV)
    assert isinstance(config.policy, RegoPolicy)


def test_a_policy_that_does_not_parse_is_refused_at_load_with_file_and_line(
    tmp_path: Path,
) -> None:
    policies = tmp_path / "pay.cedar"
    policies.write_text("permit(principal, action, resource);\nforbid(principal,\n")
    table = '[policy]\nengine = "cedar"\nfile = "pay.cedar"\n'
    with pytest.raises(NotifyConfigError, match=rf"\[policy\]: {policies}:2: "):
        load_notify_config(write(tmp_path, table), environ=ENV)


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('engine = "xacml"\n', "engine is 'cedar', 'rego' or 'opa'"),
        ('engine = "cedar"\n', "a cedar policy needs file"),
        ('engine = "opa"\n', "an opa policy needs url"),
        ('engine = "opa"\nurl = "http://127.0.0.1:1"\ncolour = 1\n', "unknown key 'colour'"),
        (
            'engine = "cedar"\nfile = "p.cedar"\nshadow = "false"\n',
            "shadow is true or false, a TOML boolean written without quotes, got 'false'",
        ),
        ('engine = "opa"\nurl = "http://u:pw@127.0.0.1:1"\n', "user name or password"),
        ('engine = "opa"\nurl = "http://127.0.0.1:1"\ntoken_env = "NONE"\n', "NONE is not set"),
        ('engine = "cedar"\nfile = "p.cedar"\ntoken_env = "OPA"\n', "token_env is for opa"),
    ],
)
def test_a_policy_table_with_a_mistake_is_refused_naming_it(
    tmp_path: Path, table: str, said: str
) -> None:
    with pytest.raises(NotifyConfigError, match=said):
        load_notify_config(write(tmp_path, "[policy]\n" + table), environ=ENV)


def test_an_opa_policy_sends_the_token_its_token_env_holds(tmp_path: Path) -> None:
    """A server that wants a token takes it from the environment, never from the URL (which
    every decision records as the policy's version)."""
    table = '[policy]\nengine = "opa"\nurl = "http://127.0.0.1:1"\ntoken_env = "OPA_TOKEN"\n'
    config = load_notify_config(write(tmp_path, table), environ={**ENV, "OPA_TOKEN": "tk_1"})
    policy = config.policy
    assert isinstance(policy, OPAPolicy)
    assert policy.headers == {"Authorization": "Bearer tk_1"}
    assert "tk_1" not in str(policy.version)


def test_a_token_env_holding_a_line_break_is_refused_when_loaded(tmp_path: Path) -> None:
    """A token read with its line break (a mounted secret) failed every query in HTTP."""
    table = '[policy]\nengine = "opa"\nurl = "http://127.0.0.1:1"\ntoken_env = "OPA_TOKEN"\n'
    with pytest.raises(NotifyConfigError, match=r"'Authorization'.* line break") as raised:
        load_notify_config(write(tmp_path, table), environ={**ENV, "OPA_TOKEN": "tk_1\n"})
    assert "tk_1" not in str(raised.value)


@pytest.mark.parametrize(
    ("engine", "library", "table"),
    [
        ("cedar", "cedarpy", 'file = "pay.cedar"\n'),
        ("rego", "regopy", 'file = "pay.rego"\n'),
        ("opa", "httpx", 'url = "http://127.0.0.1:8181"\n'),
    ],
)
def test_a_policy_engine_not_installed_is_a_mistake_of_the_file_naming_its_extra(
    engine: str, library: str, table: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a surface's missing extra: one line, and the extra ``roomkit notify`` names."""
    monkeypatch.setitem(sys.modules, library, None)
    path = write(tmp_path, f'[policy]\nengine = "{engine}"\n{table}')
    with pytest.raises(NotifyConfigError, match=rf"needs the {engine} extra") as raised:
        load_notify_config(path, environ=ENV)
    assert raised.value.missing_extras == {engine: frozenset({library})}
