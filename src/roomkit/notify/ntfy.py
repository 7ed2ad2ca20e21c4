"""The ntfy surface: a question on each person's ntfy topic, answered from its buttons.

Needs nothing beyond roomkit. Each notice is one JSON publish to the server
(``POST <server>/`` with ``topic``, ``title``, ``message``, ``click``, ``actions``,
``sequence_id``). A question's ``click`` is the signed, single-use answer link; an approval
or a yes-or-no question gets ``http`` action buttons (the phone itself sends the request)
that answer through the desk's API with that link's token, once, and a ``view`` button that
opens the link. Every notice of one request carries the same sequence id, so once the
request settles anywhere the question is updated in place to how it ended ("Answered by
alice in Slack", its buttons gone; a question's topic is recorded before it is published,
so this holds when the notifier sending it is killed before it records the publish); with
``clear=True`` it is then also cleared (marked read and dismissed:
``PUT <server>/<topic>/<sequence id>/clear``). Updating and clearing need
ntfy 2.16 or later; an older server shows the update as a second notification.

A topic is a password: pick ones nobody guesses (``topic_for="approvals-{actor}-k3v9q"``), or
give the server an access token (``token=``) and topics only it may publish to.

A server answering 429 (too many requests) is left alone, for every topic and by every
``Ntfy`` of the process sending to it: a minute after the first, doubling to an hour
(:mod:`roomkit.notify._quiet`), as ntfy.sh bans addresses that go on sending.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from roomkit._urls import http_url
from roomkit.models.clock import bounded_seconds
from roomkit.notify._header_values import token_of
from roomkit.notify._http import Origin
from roomkit.notify._lanes import retry_policy
from roomkit.notify._phone import link_token, phone_notice
from roomkit.notify._quiet import quiet_of, server_of
from roomkit.notify.retry import Retry
from roomkit.notify.surface import DeliveryError, Notice, Person, surface_name
from roomkit.stores.outbox import now_of

if TYPE_CHECKING:
    from roomkit.tools.human_input import HumanInputHandler

__all__ = ["Ntfy", "ntfy_message", "sequence_id"]

logger = logging.getLogger("roomkit.notify")

_NAME_MAX = 64
_NAME = re.compile(rf"[-_A-Za-z0-9]{{1,{_NAME_MAX}}}")
# The topics ntfy keeps for its own pages and API, and refuses to publish to (a server's
# disallowed-topics setting may add more).
_RESERVED = frozenset(
    {"docs", "static", "file", "app", "metrics", "account", "settings", "signup", "login", "v1"}
)
_RETRIED = frozenset({408})
_DOING = {"publish to": "publishing to", "clear on": "clearing on"}
_QUESTION_PRIORITY = 4
_SETTLED_PRIORITY = 2

TopicFor = Callable[[str], str | None] | Mapping[str, str] | str


def sequence_id(pending_id: str) -> str:
    """The sequence id of a request's notices: its id when ntfy takes it as one (letters,
    digits, ``-`` and ``_``, at most 64), else a digest of it."""
    if _NAME.fullmatch(pending_id):
        return pending_id
    return "rk-" + hashlib.sha256(pending_id.encode("utf-8")).hexdigest()[:40]


def ntfy_message(notice: Notice, topic: str) -> dict[str, Any]:
    """The JSON ntfy publishes for ``notice`` on ``topic``."""
    shown = phone_notice(notice)
    settled = notice.type == "question_settled"
    link = notice.answer_url or notice.desk_url
    message: dict[str, Any] = {
        "topic": topic,
        "title": shown.title,
        "message": shown.body,
        "sequence_id": sequence_id(notice.request.pending_id),
        "priority": _SETTLED_PRIORITY if settled else _QUESTION_PRIORITY,
        "tags": ["white_check_mark" if settled else "question"],
    }
    if link:
        message["click"] = link
    token = link_token(notice.answer_url)
    actions: list[dict[str, Any]] = []
    if token is not None:
        actions = [
            {
                "action": "http",
                "label": answer.label,
                "url": answer.url,
                "method": "POST",
                "headers": {
                    "Authorization": f"Bearer {token}",
                    "Content-Type": "application/json",
                },
                "body": json.dumps(answer.body, separators=(",", ":")),
                "clear": True,
            }
            for answer in shown.answers
        ]
    if notice.answer_url and not settled:
        actions.append({"action": "view", "label": "Open", "url": notice.answer_url})
    if actions:
        message["actions"] = actions[:3]
    return message


def _topic_rule(topic_for: object) -> Callable[[str], str | None]:
    if isinstance(topic_for, str):
        if "{actor}" not in topic_for:
            raise ValueError(
                "Ntfy(topic_for=...) as text is a template naming {actor}, such as "
                f"'approvals-{{actor}}-k3v9q'; got {topic_for!r}"
            )
        _check_template(topic_for)
        return lambda actor: topic_for.replace("{actor}", actor)
    if isinstance(topic_for, Mapping):
        topics = dict(topic_for)
        return lambda actor: topics.get(actor)
    if callable(topic_for):
        rule: Callable[[str], str | None] = topic_for
        return rule
    raise TypeError(
        "Ntfy(topic_for=...) takes a function of the actor id, a {actor: topic} mapping, or a "
        f"template such as 'approvals-{{actor}}-k3v9q'; got {type(topic_for).__name__}"
    )


def _check_template(template: str) -> None:
    """Refuse a template from which no actor's topic is one ntfy takes: its own text (all
    but ``{actor}``) holds a character no topic may, or leaves no room for an actor id."""
    own = template.replace("{actor}", "")
    odd = sorted({char for char in own if not _NAME.fullmatch(char)})
    if odd:
        why = f"holds {', '.join(map(repr, odd))}"
    elif len(own) + template.count("{actor}") > _NAME_MAX:
        why = "leaves no room for an actor id"
    else:
        return
    raise ValueError(
        # The template is not shown: its own text is the secret part of every topic.
        f"Ntfy(topic_for=...): the template {why}, so no one's topic would be one ntfy "
        f"takes (letters, digits, - and _, at most {_NAME_MAX}): write it like "
        "'approvals-{actor}-k3v9q'"
    )


class Ntfy:
    """Publishes each notice to its recipient's ntfy topic.

    Args:
        server: the ntfy server (``https://ntfy.sh``, or your own).
        topic_for: each person's topic: a function of the actor id (``None``: not on ntfy),
            a mapping of actor ids to topics, or a template naming ``{actor}``.
        token: an access token the server takes (``tk_...``), for topics that need one.
        clear: once the request settled and its notice was updated, also clear it (mark it
            read and dismiss it).
        retry: when to try again after a 5xx, 408, timeout or connection error (never
            after another 4xx); :class:`~roomkit.notify.retry.Retry`'s defaults otherwise.
            A 429 leaves the server alone longer, whatever this says: a minute, doubling
            with each 429 in a row up to an hour, for every topic and every ``Ntfy`` of
            this process sending to the server.
        timeout: seconds one publish may take.
        name: the surface's name, recorded in histories (at most 256 characters, as any
            surface's).

    Raises:
        ValueError: a server that is not an ``http(s)://`` URL, names no host, a port that
            is no number from 1 to 65535, or a user and password, or holds a query or a
            fragment;
            a template without ``{actor}``, or whose own text no topic may hold (a ``/``, a
            space, a ``.``: only letters, digits, ``-`` and ``_``, at most 64 in all);
            a token that is not one (empty, or holding a space, a line break or a letter
            outside ASCII inside it); a ``timeout`` that is not a positive, finite number of
            seconds; a ``name`` longer than a surface may be.
        TypeError: ``topic_for`` is none of those, ``timeout`` is not a number, or ``name``
            is not a ``str``.
        InvalidTextError: ``name`` holds text UTF-8 cannot encode.
    """

    def __init__(
        self,
        server: str,
        topic_for: TopicFor,
        *,
        token: str | None = None,
        clear: bool = False,
        retry: Retry | None = None,
        timeout: float = 10.0,
        name: str = "ntfy",
    ) -> None:
        self.name = surface_name(name, what="Ntfy(name=...)", example="ntfy")
        server = http_url(server, "Ntfy(server=...)")
        if "@" in urlsplit(server).netloc:
            # It would be dropped, and the password written in every error about the server.
            raise ValueError(
                "Ntfy(server=...) takes the server's URL without a user name and password: "
                "give an access token (ntfy token add) as Ntfy(token=...) instead"
            )
        if "?" in server or "#" in server:
            # The topic's path goes after it: a query or fragment would swallow that path.
            raise ValueError(
                "Ntfy(server=...) takes the server's URL without a query (?...) or fragment "
                "(#...): give an access token (ntfy token add) as Ntfy(token=...) instead"
            )
        if token is not None:
            token = token_of(token, "Ntfy(token=...), the server's access token (tk_...),")
        self.server = server.rstrip("/")
        self._topic_for = _topic_rule(topic_for)
        self._headers = {"content-type": "application/json", "user-agent": "roomkit-notify"}
        if token is not None:
            self._headers["authorization"] = f"Bearer {token}"
        self.clear = bool(clear)
        self.retry = retry_policy("Ntfy(retry=...)", retry, Retry())
        self._origin = Origin(
            self.server + "/", timeout=bounded_seconds("Ntfy(timeout=...)", timeout)
        )
        self._server = server_of(self.server)
        self._quiet = quiet_of(self._server, _loop_time, _loop_time)

    def bind_handler(self, handler: HumanInputHandler) -> None:
        """Called by the notifier: how long the server is left alone after a 429 is
        measured on the clock of its handler's store, as the notifier's retries are, and
        shared with every surface sending to the server on that clock."""
        # The time base now_of reads: the store's clock, or the event loop's.
        base = getattr(handler.store, "clock", _loop_time) if handler.durable else _loop_time
        self._quiet = quiet_of(self._server, base, functools.partial(now_of, handler))

    def __repr__(self) -> str:
        return f"Ntfy({self.server!r})"

    def topic(self, actor_id: str) -> str | None:
        """``actor_id``'s topic, or ``None`` when they have none ntfy takes."""
        try:
            topic = self._topic_for(actor_id)
        except Exception:
            logger.exception("Ntfy: topic_for(%r) raised", actor_id)
            return None
        if topic is None:
            return None
        if not isinstance(topic, str) or not _NAME.fullmatch(topic):
            logger.warning(
                "Ntfy: %r's topic %r is not one ntfy takes (letters, digits, - and _, at most "
                "64): they are not told",
                actor_id,
                topic,
            )
            return None
        if topic in _RESERVED:
            logger.warning(
                "Ntfy: %r's topic %r is one ntfy keeps for its own pages and API (%s), and "
                "refuses to publish to: give them another; they are not told",
                actor_id,
                topic,
                ", ".join(sorted(_RESERVED)),
            )
            return None
        return topic

    def reaches(self, recipient: str | None, person: Person | None) -> bool:
        """A person with a topic."""
        return recipient is not None and self.topic(recipient) is not None

    async def send(self, notice: Notice) -> Mapping[str, Any] | None:
        """Publish the notice (for a settled request: update its question in place, then
        clear it when asked to).

        Returns:
            ``{"topic": ..., "sequence_id": ...}``.

        Raises:
            DeliveryError: the server refused or could not be reached; its message says what
                to fix. After a 429 the server is left alone (``alone=True``, with
                ``retry_after`` the seconds left): nothing is sent to it meanwhile.
        """
        topic = None if notice.recipient is None else self.topic(notice.recipient)
        if topic is None:
            return {"skipped": "no ntfy topic"}
        message = ntfy_message(notice, topic)
        data = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        if notice.sending is not None:
            # Recorded before the publish: a process killed after it still leaves the topic
            # told, and how the request ends goes to it.
            await notice.sending({"topic": topic})
        # The topic is a password: errors name the person instead.
        whose = f"{notice.recipient}'s topic"
        await self._send("publish to", whose, data, "POST", "/")
        if notice.type == "question_settled" and self.clear:
            sid = quote(message["sequence_id"], safe="")
            await self._send("clear on", whose, b"", "PUT", f"/{topic}/{sid}/clear", older=True)
        return {"topic": topic, "sequence_id": message["sequence_id"]}

    async def _send(
        self, what: str, whose: str, data: bytes, method: str, path: str, *, older: bool = False
    ) -> None:
        held = self._quiet.held()
        if held is not None:
            why, wait = held
            raise DeliveryError(
                f"ntfy {self.server} answered 429 (too many requests) and {why}: not "
                f"{_DOING[what]} {whose} yet",
                retry=True,
                alone=True,
                retry_after=wait,
            )
        prefix = self._origin.target.rstrip("/")
        started = self._quiet.begin()
        status: int | None = None
        try:
            status = await self._origin.post(
                data, dict(self._headers), method=method, target=prefix + path
            )
        except TimeoutError:
            # Reached, and silent: told apart from a server that cannot be reached.
            timeout = self._origin.timeout
            raise DeliveryError(
                f"ntfy {self.server} did not answer within {timeout:g} s {_DOING[what]} {whose}",
                retry=True,
            ) from None
        except OSError as error:
            raise DeliveryError(
                f"ntfy {self.server} cannot be reached ({type(error).__name__}: {error}): "
                "check the server's URL and that it runs",
                retry=True,
            ) from None
        finally:
            quiet = self._quiet.end(started, status)
        if status == 429:
            # ntfy says no Retry-After, and ntfy.sh bans an address that goes on sending.
            raise DeliveryError(
                f"ntfy {self.server} refused to {what} {whose}: 429 (too many requests): "
                f"nothing is sent to it for {quiet:.0f} s, as ntfy bans addresses that go on "
                "sending; send less often, or to a server of your own",
                retry=True,
                alone=True,
                retry_after=quiet,
            )
        if status < 300:
            return
        if older and status in (400, 404, 405):
            # A server before 2.16 knows no clearing: the update stands.
            logger.info(
                "ntfy %s cannot clear notifications (%d): update it to 2.16", self.server, status
            )
            return
        retry = status >= 500 or status in _RETRIED
        hint = ""
        if status in (401, 403):
            hint = ": it refused the token (give Ntfy(token=...) one that may write the topic)"
        elif 300 <= status < 400 and what == "clear on":
            hint = (
                ": a redirect, which is not followed; the update went through, so what is in "
                "front of ntfy (a proxy) redirects clear requests (PUT /<topic>/<sequence "
                "id>/clear): pass them through to ntfy, or give Ntfy(clear=False)"
            )
        elif 300 <= status < 400:
            hint = (
                ": a redirect, which is not followed; give Ntfy(server=...) the URL it "
                "redirects to (https:// for http://, say)"
            )
        elif status == 400:
            hint = (
                ": it refused the message; its topic may be one the server does not allow "
                "(its disallowed-topics setting), and its log says why"
            )
        elif not retry:
            hint = ": check the server's URL and version"
        raise DeliveryError(
            f"ntfy {self.server} refused to {what} {whose}: {status}{hint}", retry=retry
        )

    async def aclose(self) -> None:
        """Close the kept connections."""
        await self._origin.aclose()


def _loop_time() -> float:
    """The running event loop's clock: the server's quiet when no notifier binds the
    surface to its store's."""
    return asyncio.get_running_loop().time()
