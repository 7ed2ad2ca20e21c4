"""The Slack surface: a Block Kit message per notice, updated in place once the request settles.

Needs the ``slack`` extra (``pip install -e '.[slack]'``: the official ``slack_sdk``
and ``aiohttp``). A notice for a person goes to them as a direct message (the directory's
``slack_user``), or to the surface's channel when it has one; the message's buttons answer
the one-click shapes through the desk's ``POST /api/slack/interactions`` (see
:mod:`roomkit.notify.slack_blocks`). Slack's refusals become :class:`DeliveryError`\\ s that
say what to fix, and whether sending again may help.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from roomkit._extras import requires_extra

with requires_extra("roomkit.notify.slack", "slack"):
    import aiohttp
    from slack_sdk.errors import SlackApiError, SlackClientError
    from slack_sdk.web.async_client import AsyncWebClient

from roomkit._urls import http_url
from roomkit.notify._header_values import token_of
from roomkit.notify._push_services import retry_after
from roomkit.notify.slack_blocks import escape, message_blocks, notification_text, settled_blocks
from roomkit.notify.surface import DeliveryError, Notice, Person
from roomkit.notify.wording import clip, outcome_line

__all__ = ["CALL_TIMEOUT", "RETRY_AFTER_MAX", "WEB_API", "Slack"]

WEB_API = "https://slack.com/api/"
"""Slack's Web API."""
CALL_TIMEOUT = 10
"""Seconds one Web API call may take."""
RETRY_AFTER_MAX = 300.0
"""The longest wait a ``Retry-After`` from Slack holds a delivery back (Slack asks for
seconds; a number past this is read as this)."""

logger = logging.getLogger("roomkit.notify")

_REVOKED = {"invalid_auth", "token_revoked", "account_inactive", "not_authed", "token_expired"}
_TRANSIENT = {"ratelimited", "internal_error", "fatal_error", "service_unavailable"}
_GONE = {"message_not_found", "cant_update_message", "channel_not_found", "is_archived"}


class Slack:
    """Tells people on Slack, and takes their one-click answers back through the desk.

    Args:
        token: the bot token (``xoxb-...``); the app needs the ``chat:write`` scope, and
            ``im:write`` for direct messages.
        signing_secret: the app's signing secret, with which the desk checks the clicks
            Slack sends it (give this surface, or the secret, to the desk's ``slack=``).
        channel: a channel id (``C0123456789``) to post every notice in, mentioning the
            person it is for; without one, each person gets a direct message.
        base_url: the Web API's address (:data:`WEB_API` by default).
        team: the id of the Slack workspace (``T0123ABCD``), or of the Enterprise Grid
            organisation (``E0123ABCD``), whose clicks the desk takes; a click from any other
            is refused (403). Without one, the desk takes clicks from every workspace the
            app is installed in: give it when the app is installed in more than one.

    The token and the signing secret are used without surrounding whitespace (the newline
    of a file they were read from).

    Raises:
        ValueError: an empty token, signing secret or channel; a token or signing secret
            holding a space, a line break, a control character or a letter outside ASCII; a
            team that is not a Slack id (ASCII letters and digits); a ``base_url`` that is
            not an ``http(s)://`` URL naming a host (and a port from 1 to 65535, if any).
    """

    name = "slack"

    def __init__(
        self,
        token: str,
        signing_secret: str,
        channel: str | None = None,
        *,
        base_url: str = WEB_API,
        team: str | None = None,
    ) -> None:
        # The token goes in every call's Authorization header; the signing secret keys the
        # HMAC a click's signature is checked with, where a stray newline matches nothing.
        token = token_of(token, "Slack(token=...), the app's bot token (xoxb-...),")
        signing_secret = token_of(
            signing_secret, "Slack(signing_secret=...), the app's signing secret,"
        )
        if channel is not None and (not isinstance(channel, str) or not channel.strip()):
            raise ValueError("Slack(): channel must be a channel id such as C0123456789 or None")
        if team is not None and not (isinstance(team, str) and team.isascii() and team.isalnum()):
            raise ValueError(
                f"Slack(team=...) is the id of the app's Slack workspace (T0123ABCD) or None, "
                f"got {team!r}"
            )
        base_url = http_url(base_url, "Slack(base_url=...)")
        self.signing_secret = signing_secret
        self.channel = channel
        self.team = team
        # Retries are the notifier's (its outbox backs off and keeps the delivery id).
        self._client = _Client(
            token=token, base_url=base_url, timeout=CALL_TIMEOUT, retry_handlers=[]
        )
        self._session: aiohttp.ClientSession | None = None
        self._direct: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"Slack(channel={self.channel!r}, team={self.team!r})"

    def reaches(self, recipient: str | None, person: Person | None) -> bool:
        """A channel reaches everyone; otherwise a person with a ``slack_user``."""
        if self.channel is not None:
            return True
        return person is not None and bool(person.slack_user)

    async def send(self, notice: Notice) -> Mapping[str, Any] | None:
        """Post the notice, or update its earlier messages once the request settled.

        Returns:
            ``{"channel": ..., "ts": ...}`` of the message posted, or ``None`` for a
            settle notice (its earlier messages were updated).

        Raises:
            DeliveryError: Slack refused or could not be reached; its message says what to fix.
        """
        if self._session is None:
            self._session = aiohttp.ClientSession()
            self._client.session = self._session
        if notice.type == "question_settled":
            await self._update_all(notice)
            return None
        channel, mention = await self._destination(notice)
        in_channel = self.channel is not None
        response = await self._call(
            "chat.postMessage",
            channel=channel,
            text=notification_text(notice, in_channel=in_channel),
            blocks=message_blocks(notice, in_channel=in_channel, mention=mention),
            unfurl_links=False,
            unfurl_media=False,
        )
        ts, posted_in = response.get("ts"), response.get("channel", channel)
        if not isinstance(ts, str) or not ts or not isinstance(posted_in, str):
            # Posted, most likely: sending again would post it twice.
            raise DeliveryError(
                "Slack answered chat.postMessage ok without the message's channel and ts, so "
                "its message cannot be updated once the request settles: check base_url",
                retry=False,
            )
        return {"channel": posted_in, "ts": ts}

    async def _destination(self, notice: Notice) -> tuple[str, str | None]:
        """The channel to post in, and the Slack user to mention there (``None`` in a DM)."""
        person = notice.person
        slack_user = person.slack_user if person is not None else None
        if self.channel is not None:
            return self.channel, slack_user
        if not slack_user:
            raise DeliveryError(
                f"Slack: {notice.recipient!r} has no slack_user in the directory: add one "
                "(their Slack member id, U...), or give Slack(channel=...)",
                retry=False,
            )
        channel = self._direct.get(slack_user)
        if channel is None:
            response = await self._call("conversations.open", users=slack_user)
            opened = response.get("channel")
            channel = opened.get("id") if isinstance(opened, dict) else None
            if not isinstance(channel, str) or not channel:
                raise DeliveryError(
                    "Slack answered conversations.open ok without the conversation's id: "
                    "check base_url; retrying",
                    retry=True,
                )
            self._direct[slack_user] = channel
        return channel, None

    async def _update_all(self, notice: Notice) -> None:
        """Replace every earlier message with the outcome; a message gone stays gone."""
        text = escape(outcome_line(notice))
        blocks = settled_blocks(notice)
        transient: DeliveryError | None = None
        for receipt in notice.receipts:
            channel, ts = receipt.get("channel"), receipt.get("ts")
            if not isinstance(channel, str) or not isinstance(ts, str):
                continue
            try:
                await self._call("chat.update", channel=channel, ts=ts, text=text, blocks=blocks)
            except DeliveryError as error:
                if not error.retry:
                    raise
                transient = error
            except _Gone as gone:
                logger.info("Slack message %s in %s not updated: %s", ts, channel, gone)
        if transient is not None:
            raise transient

    async def _call(self, method: str, **arguments: Any) -> Any:
        """One Web API call; its refusal as a :class:`DeliveryError` (or :class:`_Gone`)."""
        try:
            if method == "conversations.open":
                response = await self._client.conversations_open(users=arguments["users"])
            elif method == "chat.update":
                response = await self._client.chat_update(**arguments)
            else:
                response = await self._client.chat_postMessage(**arguments)
        except SlackApiError as error:
            raise _refusal(method, error, arguments) from None
        except _NotAnObject as odd:
            # Not Slack's answer (a proxy or another service at base_url): whether the
            # message went out cannot be known, and sending again would not tell.
            raise DeliveryError(
                f"Slack answered {method} with HTTP 200 and {odd}, not Slack's JSON object "
                '({"ok": ...}): check base_url',
                retry=False,
            ) from None
        except (SlackClientError, aiohttp.ClientError, TimeoutError) as error:
            raise DeliveryError(
                f"Slack cannot be reached ({type(error).__name__}: {error}): check the "
                "network and base_url; retrying",
                retry=True,
            ) from None
        return response.data

    async def aclose(self) -> None:
        """Close the HTTP session."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()


class _Gone(Exception):
    """A message to update no longer exists, or can no longer be changed."""


class _NotAnObject(Exception):
    """A 200 whose body is not a JSON object: what came back, as its message says."""


class _Client(AsyncWebClient):
    """The SDK's client, refusing a 200 whose body is not a JSON object (a list, a number,
    text) before the SDK reads ``ok`` from it, where it would raise ``AttributeError``."""

    async def _request(self, *, http_verb: Any, api_url: Any, req_args: Any) -> dict[str, Any]:
        answer: dict[str, Any] = await super()._request(
            http_verb=http_verb, api_url=api_url, req_args=req_args
        )
        data = answer.get("data")
        if answer.get("status_code") == 200 and not isinstance(data, dict | bytes):
            raise _NotAnObject(_what_came(data))
        return answer


def _what_came(data: object) -> str:
    """``data`` named by its JSON type, with its first characters."""
    if data is None:
        return "JSON null"
    kinds = {list: "a JSON array", str: "text", bool: "a JSON boolean"}
    kind = kinds.get(
        type(data), "a JSON number" if isinstance(data, int | float) else "something else"
    )
    try:
        shown = json.dumps(data, ensure_ascii=True)
    except (TypeError, ValueError):
        shown = repr(data)
    return f"{kind} ({clip(shown, 60)})"


def _refusal(method: str, error: SlackApiError, arguments: dict[str, Any]) -> Exception:
    """What Slack's refusal of ``method`` means, as a :class:`DeliveryError` saying what to do."""
    response = error.response
    status = int(getattr(response, "status_code", 0) or 0)
    data = response.data if isinstance(response.data, dict) else {}
    code = str(data.get("error") or f"HTTP {status}")
    where = arguments.get("channel") or arguments.get("users")
    if method == "chat.update" and code in _GONE:
        return _Gone(code)
    if code in _REVOKED:
        return DeliveryError(
            f"Slack refused the bot token ({code}): the bot token was revoked or is wrong; "
            "give Slack(token=...) the app's current xoxb- token",
            retry=False,
        )
    if code in {"user_not_found", "users_not_found", "user_disabled", "cannot_dm_bot"}:
        return DeliveryError(
            f"Slack has no user {where} to message ({code}): fix that person's slack_user "
            "in the directory",
            retry=False,
        )
    if code == "channel_not_found":
        return DeliveryError(
            f"Slack has no channel {where} the bot can see (channel_not_found): check the "
            "channel id, and that the app is installed in that workspace",
            retry=False,
        )
    if code in {"not_in_channel", "is_archived"}:
        return DeliveryError(
            f"The bot cannot post in channel {where} ({code}): invite the app to it "
            "(/invite @your-app) or pick another channel",
            retry=False,
        )
    if code in _TRANSIENT or status == 429 or status >= 500:
        # Slack blocks an app that goes on calling through a rate limit: its wait is kept.
        after = response.headers.get("Retry-After") if response.headers else None
        wait = min(retry_after(after if isinstance(after, str) else None), RETRY_AFTER_MAX)
        asks = f", Slack asks to wait {wait:.0f} s" if wait > 0 else ""
        return DeliveryError(
            f"Slack is busy or failing ({code}{asks}): retrying", retry=True, retry_after=wait
        )
    return DeliveryError(f"Slack refused {method} ({code})", retry=False)
