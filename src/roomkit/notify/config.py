"""A notifier from a TOML file: its surfaces, the directory, the desk's address and a ladder.

::

    desk_url = "https://desk.example.com"     # where answer links point

    [[webhook]]                               # one table per webhook
    url = "https://example.com/hooks/roomkit"
    secret_env = "ROOMKIT_WEBHOOK_SECRET"     # holds the whsec_... signing secret

    [email]
    host = "smtp.example.com"
    port = 587
    username = "roomkit"
    password_env = "SMTP_PASSWORD"
    sender = "roomkit@example.com"
    tls = "starttls"                          # or "tls" (port 465), "none" (a local relay)
    # cafile = "/etc/roomkit/smtp-ca.pem"     # a private CA that signed the server's certificate

    # [email] directory = "outbox/"         # no mail server: each message an .eml file there

    [slack]
    token_env = "SLACK_BOT_TOKEN"
    signing_secret_env = "SLACK_SIGNING_SECRET"
    channel = "C0123456789"                   # leave out to message each person directly

    [[apprise]]
    urls = ["ntfy://roomkit-alerts"]

    [webpush]                                 # the devices people turned on in the desk's page
    subject = "mailto:ops@example.com"        # who runs the desk, for the push services
    data_dir = "/var/lib/roomkit/desk"        # the desk's data folder (its key, the devices)
    push_hosts = ["push.example.com"]         # a push service of your own (the browsers' are in)

    [ntfy]
    server = "https://ntfy.example.com"
    topic = "approvals-{actor}-k3v9q"         # each person's topic (or a [ntfy.topics] table)
    token_env = "NTFY_TOKEN"                  # an access token, when the topics need one

    [people.alice]
    email = "alice@example.com"
    slack_user = "U012AB3CD"
    manager = "bob"

    # [[people.alice.delegations]], [roles.NAME], [on_call.NAME]: the delegation how-to

    [ladder]
    remind_after = 600                        # seconds from the request's creation
    escalate_after = 1800
    escalate_to = "manager"                   # or an actor id
    default = "no"                            # the agent's answer on expiry

    [policy]                                  # who must approve: see roomkit.policy.config
    engine = "cedar"
    file = "payments.cedar"

Secrets never sit in the file: each ``*_env`` key names the environment variable holding
one. :func:`load_notify_config` checks the whole file, and reads those variables, before
anything runs; a mistake raises :class:`~roomkit.core.exceptions.NotifyConfigError`, one
line naming the key at fault. The ladder's reminder and escalation are carried out by the
process running the notifier (:func:`~roomkit.notify.ladders.following`); its ``default``
is the agent's: hand :attr:`NotifyConfig.ladder` to ``HumanInputToolHandler(ladder=...)``,
and :attr:`NotifyConfig.policy` to ``HumanInputToolHandler(policy=...)``.
"""

from __future__ import annotations

import importlib
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roomkit._extras import extras_missing, lacking_extras
from roomkit.auth.names import actor_name_problem
from roomkit.core.exceptions import NotifyConfigError
from roomkit.notify import _people_config as people_config
from roomkit.notify._toml_values import TomlValues
from roomkit.notify.email_files import EmailFiles
from roomkit.notify.links import desk_address
from roomkit.notify.notifier import Notifier
from roomkit.notify.push_hosts import PushHosts
from roomkit.notify.push_subscriptions import load_or_create_vapid_key
from roomkit.notify.surface import Directory, Person, Surface
from roomkit.policy import Policy, PolicyError
from roomkit.policy.config import policy_from_table
from roomkit.tools.human_input import HumanInputHandler
from roomkit.tools.human_input.ladder import Ladder, Step, default, escalate, remind

__all__ = ["NotifyConfig", "load_notify_config"]

_MAX_FILE_BYTES = 1024 * 1024
"""The longest file read: far past any notifier's, short of what would fill the memory."""

_TOP = (
    "desk_url",
    "webhook",
    "email",
    "slack",
    "apprise",
    "people",
    "ladder",
    "policy",
    "roles",
    "on_call",
)
_PHONES = ("webpush", "ntfy")
_WEBHOOK = ("url", "secret_env", "name")
_EMAIL = ("host", "port", "username", "password_env", "sender", "tls", "cafile")
_EMAIL_FILES = ("directory", "sender")
_SLACK = ("token_env", "signing_secret_env", "channel", "api_url", "team")
_APPRISE = ("urls", "name")
_WEBPUSH = ("subject", "data_dir", "name", "push_hosts")
_NTFY = ("server", "topic", "topics", "token_env", "clear", "name")
_PERSON = ("email", "slack_user", "manager")
_ROUTED = (*_PERSON, "delegations")
_LADDER = ("remind_after", "escalate_after", "escalate_to", "default")
_TLS = ("starttls", "tls", "none")
_EXTRA = {"webhook": "notify", "email": "notify", "slack": "slack", "apprise": "apprise"}
_EXTRA.update(webpush="push", ntfy="notify")
_ENGINE_LIBRARY = {"cedar": "cedarpy", "rego": "regopy", "opa": "httpx"}
"""The library each ``[policy]`` engine runs on; its extra has the engine's name."""


def _writes_files(email: object) -> bool:
    """Whether an ``[email]`` table writes ``.eml`` files (``directory = ...``) rather than
    sending over SMTP, which alone needs the ``notify`` extra."""
    return isinstance(email, dict) and "directory" in email


@dataclass(frozen=True, slots=True)
class NotifyConfig:
    """What a notifier's TOML file says, checked and ready to run."""

    surfaces: tuple[Surface, ...]
    """The surfaces, built with their secrets (the notifier closes them)."""
    directory: Directory
    """The ``[people.NAME]`` tables."""
    desk_url: str | None = None
    """Where answer links point; none without it."""
    ladder: Ladder | None = None
    """The ``[ladder]`` table, or ``None``."""
    policy: Policy | None = None
    """The ``[policy]`` table's policy, built and parsed (:mod:`roomkit.policy.config`)."""

    @property
    def slack(self) -> Surface | None:
        """The Slack surface, when the file has a ``[slack]`` table."""
        return next((s for s in self.surfaces if hasattr(s, "signing_secret")), None)

    def notifier(self, handler: HumanInputHandler, **options: Any) -> Notifier:
        """A :class:`~roomkit.notify.Notifier` of ``handler`` through these surfaces, with
        the file's directory and ``desk_url``. A file listing delegations, roles or on-call
        schedules routes requests only through the handler: build it with
        ``HumanInputHandler(directory=config.directory)``.

        ``options`` are the notifier's other keywords (``link_secret``, ``data_dir`` for the
        desk's key; ``lease``, ``poll``, ``concurrency``).
        """
        # A handler routing by a directory of its own reaches people by it (the file's
        # people, when it lists any, must then be that directory: the notifier says so).
        own = getattr(handler, "directory", None)
        listed = len(self.directory) > 0 or self.directory.routes_anything()
        return Notifier(
            handler,
            self.surfaces,
            directory=self.directory if own is None or listed else None,
            desk_url=self.desk_url,
            **options,
        )


def load_notify_config(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
) -> NotifyConfig:
    """Read and check the notifier's TOML file at ``path``; secrets from ``environ``.

    Args:
        path: the file.
        environ: where ``*_env`` keys are looked up; ``os.environ`` by default.

    Raises:
        NotifyConfigError: the file cannot be read, is not TOML, has an unknown key, a value
            of the wrong type, a bad URL, an environment variable that is not set, or no
            surface; the message is one line naming the file and the key.
    """
    reader = _Reader(str(path), os.environ if environ is None else environ)
    try:
        with Path(path).open("rb") as file:
            # A path to something without end (`/dev/zero`) is refused, not read on.
            data = file.read(_MAX_FILE_BYTES + 1)
        if len(data) > _MAX_FILE_BYTES:
            reader.fail("", f"is over {_MAX_FILE_BYTES:,} bytes, more than a notifier's file holds")
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reader.fail("", f"cannot be read: {getattr(error, 'strerror', None) or error}")
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        reader.fail("", f"is not valid TOML: {error}")
    return reader.config(document)


class _Reader(TomlValues):
    """Walks one file's tables, each mistake raised with where it is."""

    def config(self, document: dict[str, Any]) -> NotifyConfig:
        self.known(document, "", _TOP + _PHONES)
        self.extras_installed(document)
        built: list[tuple[str, Surface]] = []
        for index, table in enumerate(self.tables(document, "webhook"), start=1):
            where, name = self.label("webhook", index, document)
            built.append((where, self.webhook(table, where, name)))
        if "email" in document:
            built.append(("[email]", self.email(self.table(document["email"], "[email]"))))
        if "slack" in document:
            built.append(("[slack]", self.slack(self.table(document["slack"], "[slack]"))))
        for index, table in enumerate(self.tables(document, "apprise"), start=1):
            where, name = self.label("apprise", index, document)
            built.append((where, self.apprise(table, where, name)))
        for key in _PHONES:
            if key in document:
                read = self.webpush if key == "webpush" else self.ntfy
                built.append((f"[{key}]", read(self.table(document[key], f"[{key}]"))))
        if not built:
            self.fail(
                "",
                "names no surface: add a [[webhook]], [email], [slack], [[apprise]], [webpush] "
                "or [ntfy]",
            )
        taken: dict[str, str] = {}
        for where, surface in built:
            if surface.name in taken:
                self.fail(f"{where} name", f"{surface.name!r} is {taken[surface.name]}'s already")
            taken[surface.name] = where
        surfaces = [surface for _, surface in built]
        desk_url = self.url(document, "", "desk_url")
        try:
            # Told with the file's other mistakes, not when the notifier is made of it.
            desk_url = None if desk_url is None else desk_address(desk_url, "the URL")
        except ValueError as error:
            self.fail("desk_url", str(error))
        ladder = None
        if "ladder" in document:
            ladder = self.ladder(self.table(document["ladder"], "[ladder]"))
        policy = None
        if "policy" in document:
            policy = self.policy(self.table(document["policy"], "[policy]"))
        return NotifyConfig(tuple(surfaces), self.people(document), desk_url, ladder, policy)

    # -- the sections ------------------------------------------------------------------------

    def policy(self, table: dict[str, Any]) -> Policy:
        try:
            return policy_from_table(table, Path(self.path).parent, self.environ)
        except PolicyError as error:
            self.fail("[policy]", str(error))

    def webhook(self, table: dict[str, Any], where: str, name: str) -> Surface:
        self.known(table, where, _WEBHOOK)
        url = self.url(table, where, "url", required=True)
        secret = self.secret(table, where, "secret_env")
        if not secret.startswith("whsec_"):
            self.fail(
                f"{where} secret_env",
                f"the environment variable {table['secret_env']} holds no signing secret in "
                "its 'whsec_<base64>' form",
            )
        name = self.surface_name(table, where, name)
        webhook = self.surface("webhook", "Webhook")
        return self.build(f"{where} secret_env", lambda: webhook(url, secret, name=name))

    def email(self, table: dict[str, Any]) -> Surface:
        where = "[email]"
        if "directory" in table:
            return self.email_files(table, where)
        self.known(table, where, _EMAIL)
        host = self.text(table, where, "host", required=True)
        port = table.get("port", 587)
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            self.fail(f"{where} port", f"must be a port number (587, 465, 25), not {port!r}")
        username = self.line(table, where, "username")
        password = self.secret(table, where, "password_env") if "password_env" in table else None
        if (username is None) != (password is None):
            missing = "password_env" if password is None else "username"
            self.fail(f"{where} {missing}", "username and password_env go together")
        sender = self.line(table, where, "sender", required=True)
        if "@" not in sender:
            self.fail(f"{where} sender", f"must be an email address, not {sender!r}")
        tls = self.text(table, where, "tls")
        if tls is not None and tls not in _TLS:
            self.fail(f"{where} tls", f"is 'starttls', 'tls' or 'none', not {tls!r}")
        cafile = self.text(table, where, "cafile")
        email = self.surface("email", "Email")
        return self.build(
            f"{where} cafile" if cafile is not None else where,
            lambda: email(host, port, username, password, sender, security=tls, cafile=cafile),
        )

    def email_files(self, table: dict[str, Any], where: str) -> Surface:
        """``[email] directory = "..."``: each message written as an ``.eml`` file."""
        self.known(table, where, _EMAIL_FILES)
        directory = self.text(table, where, "directory", required=True)
        sender = self.line(table, where, "sender") or "roomkit@localhost"
        return self.build(f"{where} directory", lambda: EmailFiles(directory, sender=sender))

    def slack(self, table: dict[str, Any]) -> Surface:
        where = "[slack]"
        self.known(table, where, _SLACK)
        token = self.secret(table, where, "token_env")
        signing_secret = self.secret(table, where, "signing_secret_env")
        channel = self.text(table, where, "channel")
        options: dict[str, Any] = {}
        api_url = self.url(table, where, "api_url")
        if api_url is not None:
            options["base_url"] = api_url.rstrip("/") + "/"
        team = self.text(table, where, "team")
        if team is not None:
            options["team"] = team
        slack = self.surface("slack", "Slack")
        return self.build(where, lambda: slack(token, signing_secret, channel, **options))

    def apprise(self, table: dict[str, Any], where: str, name: str) -> Surface:
        self.known(table, where, _APPRISE)
        urls = table.get("urls")
        if isinstance(urls, str):
            urls = [urls]
        if not isinstance(urls, list) or not urls or not all(isinstance(u, str) for u in urls):
            self.fail(f"{where} urls", 'must be a list of Apprise URLs, e.g. ["ntfy://topic"]')
        # Each [[apprise]] table is a surface of its own, with its name.
        name = self.surface_name(table, where, name)
        apprise = self.surface("apprise", "Apprise")
        return self.build(f"{where} urls", lambda: apprise(urls, name=name))

    def webpush(self, table: dict[str, Any]) -> Surface:
        where = "[webpush]"
        self.known(table, where, _WEBPUSH)
        subject = self.text(table, where, "subject", required=True)
        data_dir = self.text(table, where, "data_dir")
        name = self.surface_name(table, where, "webpush")
        hosts = table.get("push_hosts", [])
        if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
            self.fail(
                f"{where} push_hosts",
                'must be a list of host names, e.g. ["push.example.com"]',
            )
        try:
            PushHosts(hosts)
        except ValueError as error:
            self.fail(f"{where} push_hosts", str(error))
        try:
            # Read (or made) here first: a folder the key cannot be in is named as the key.
            load_or_create_vapid_key(data_dir)
        except ValueError as error:
            self.fail(f"{where} data_dir", str(error))
        webpush = self.surface("webpush", "WebPush")
        return self.build(
            f"{where} subject",
            lambda: webpush(subject, data_dir=data_dir, name=name, push_hosts=hosts),
        )

    def ntfy(self, table: dict[str, Any]) -> Surface:
        where = "[ntfy]"
        self.known(table, where, _NTFY)
        server = self.url(table, where, "server", required=True)
        topic: Any = self.text(table, where, "topic")
        if "topics" in table:
            if topic is not None:
                self.fail(f"{where} topics", "give topic (a template) or topics, not both")
            topic = self.table(table["topics"], f"{where} topics")
            if not all(isinstance(t, str) for t in topic.values()):
                self.fail(f"{where} topics", 'maps actor ids to topics: alice = "approvals-a7"')
        if topic is None:
            self.fail(f"{where} topic", 'is missing: a template such as "approvals-{actor}-k3v9q"')
        token = self.secret(table, where, "token_env") if "token_env" in table else None
        clear = table.get("clear", False)
        if not isinstance(clear, bool):
            self.fail(f"{where} clear", f"must be true or false, not {clear!r}")
        name = self.surface_name(table, where, "ntfy")
        ntfy = self.surface("ntfy", "Ntfy")
        return self.build(
            f"{where} topic",
            lambda: ntfy(server, topic, token=token, clear=clear, name=name),
        )

    def people(self, document: dict[str, Any]) -> Directory:
        people = self.table(document.get("people", {}), "people")
        entries: dict[str, Person] = {}
        slack_users: dict[str, str] = {}
        for actor, table in people.items():
            # A name that is no actor name shows escaped (and cut short) in the message.
            shown = actor if actor_name_problem(actor) is None else repr(actor)[:40]
            where = f"[people.{shown}]"
            self.actor_name(where, actor)
            self.known(self.table(table, where), where, _ROUTED)
            person = Person(
                # The address goes into a mail header: one line.
                **{
                    key: (self.line if key == "email" else self.text)(table, where, key)
                    for key in _PERSON
                },
                delegations=people_config.delegations(self, table.get("delegations", []), where),
            )
            if person.manager is not None:
                self.actor_name(f"{where} manager", person.manager)
            if person.slack_user is not None:
                if person.slack_user in slack_users:
                    self.fail(
                        f"{where} slack_user",
                        f"{person.slack_user} is {slack_users[person.slack_user]}'s already",
                    )
                slack_users[person.slack_user] = actor
            entries[actor] = person
        roles = people_config.roles(self, document.get("roles", {}))
        folder = Path(self.path).parent
        on_call = people_config.on_call(self, document.get("on_call", {}), folder)
        try:
            return Directory(entries, roles=roles, on_call=on_call)
        except ValueError as error:
            self.fail("people", str(error))

    def ladder(self, table: dict[str, Any]) -> Ladder:
        where = "[ladder]"
        self.known(table, where, _LADDER)
        steps: list[Step] = []
        if "remind_after" in table:
            steps.append(remind(self.seconds(table, where, "remind_after")))
        to = self.text(table, where, "escalate_to")
        if to is not None:
            self.actor_name(f"{where} escalate_to", to)
        if "escalate_after" in table:
            steps.append(escalate(self.seconds(table, where, "escalate_after"), to or "manager"))
        elif to is not None:
            self.fail(f"{where} escalate_to", "needs escalate_after (seconds) to say when")
        answer = self.text(table, where, "default")
        return Ladder(*steps, on_expiry=None if answer is None else default(answer))

    def extras_installed(self, document: Mapping[str, Any]) -> None:
        """Fail with one line naming every extra the file's surfaces, on-call schedules and
        policy engine need and lack, so that one install command brings them all."""
        needed = [
            (extra, f"roomkit.notify.{section}")
            for section, extra in _EXTRA.items()
            # EmailFiles: .eml files need no SMTP library.
            if section in document and not (section == "email" and _writes_files(document[section]))
        ]
        policy = document.get("policy")
        engine = policy.get("engine") if isinstance(policy, dict) else None
        if isinstance(engine, str) and engine in _ENGINE_LIBRARY:
            needed.append((engine, _ENGINE_LIBRARY[engine]))
        lacking = lacking_extras([*needed, *people_config.on_call_extras(document)])
        if lacking:
            raise NotifyConfigError(
                f"{self.path} {extras_missing('', lacking)}",
                missing_extras={extra: frozenset(found) for extra, found in lacking.items()},
            )

    def surface(self, section: str, class_name: str) -> Callable[..., Surface]:
        # Its extra is installed: extras_installed() looked before anything was built.
        module = importlib.import_module(f"roomkit.notify.{section}")
        built: Callable[..., Surface] = getattr(module, class_name)
        return built

    def build(self, where: str, make: Callable[[], Surface]) -> Surface:
        try:
            return make()
        except (TypeError, ValueError) as error:
            self.fail(where, str(error))
