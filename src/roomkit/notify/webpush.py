"""The Web Push surface: a question on the lock screen of each device a person turned on.

Needs the ``push`` extra (``pip install -e '.[push]'``: ``pywebpush``, which brings
``py-vapid``, ``http-ece``, ``cryptography`` and ``aiohttp``). A person turns notifications
on in the desk's page (the desk keeps their subscription, see
:mod:`roomkit.notify.push_subscriptions`); each question then goes to every device they
turned on, encrypted to it (``aes128gcm``) and signed with the desk's VAPID key.

The message is Declarative Web Push JSON (``{"web_push": 8030, "notification": {...}}``):
Safari shows it as it is, and the desk's service worker shows the same elsewhere. Its
``tag`` is the request's id, its ``navigate`` the signed, single-use answer link; an
approval or a yes-or-no question carries buttons (Chrome and Android show them) that answer
through that link in one tap. Once the request settles anywhere, a second message with the
same tag replaces the question ("Answered by alice in Slack"), on the devices that were
told; the push service's ``Topic`` header makes it replace the question still queued for a
phone that is offline. The devices a question goes to are recorded before it is pushed
(:attr:`~roomkit.notify.surface.Notice.sending`): a notifier killed between the push and
its record still leaves them told. A subscription the push service reports gone (404, 410)
is dropped, as is one whose key no message can be encrypted to; a device that fails in any
way fails alone, and the person's other devices are pushed to, all at once; a retry goes
only to the devices that did not take it.
Only endpoints on the push services' hosts are pushed to (see
:mod:`roomkit.notify.push_hosts`); one elsewhere (a file edited by hand) is skipped and logged,
and a push service's redirect is not followed. A host only a ``*.`` entry admits is pushed to
only at public addresses: one resolving to another (``127.0.0.1``, ``169.254.169.254``) fails
for that device alone, naming the host and the address, and is not retried.

Each push service (by its endpoint's origin) backs off on its own
(:mod:`roomkit.notify._push_services`): one that hangs or keeps failing holds back only the
pushes to it, retried on their own schedule, and never the surface's other deliveries.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from roomkit._extras import requires_extra
from roomkit.models.clock import bounded_seconds

with requires_extra("roomkit.notify.webpush", "push"):
    import aiohttp
    from aiohttp.abc import AbstractResolver
    from py_vapid import Vapid  # type: ignore[import-untyped]
    from pywebpush import WebPusher  # type: ignore[import-untyped]

from roomkit.notify._lanes import retry_policy
from roomkit.notify._push_dns import NotPublic, PublicOnly
from roomkit.notify._push_message import (
    DECLARATIVE,
    MAX_MESSAGE_BYTES,
    encoded,
    push_message,
    topic,
)
from roomkit.notify._push_services import PushServices, retry_after
from roomkit.notify.links import NO_DEADLINE_TTL
from roomkit.notify.push_hosts import PushHosts
from roomkit.notify.push_subscriptions import (
    PushSubscriptions,
    Subscription,
    load_or_create_vapid_key,
    vapid_public_key,
)
from roomkit.notify.retry import Retry
from roomkit.notify.surface import SENDING, DeliveryError, Notice, Person, surface_name
from roomkit.stores.outbox import now_of

if TYPE_CHECKING:
    from roomkit.tools.human_input import HumanInputHandler

__all__ = ["DECLARATIVE", "MAX_MESSAGE_BYTES", "WebPush", "push_message"]

logger = logging.getLogger("roomkit.notify")

MAX_TTL = 28 * 86_400
"""Seconds a push service keeps a message for an offline device, at most (four weeks)."""
SETTLED_TTL = 86_400
"""Seconds a push service keeps the notice that a request settled."""
_GONE_STATUS = frozenset({404, 410})
_SENT = "sent"
_GONE = "gone"
_RETRIED = frozenset({408, 429})


class _Redirected(Exception):
    """A push service answered a redirect, which is not followed."""


async def _refuse_redirect(session: Any, context: Any, params: Any) -> None:
    # A redirect would carry the message, signed, to a host the list never vetted.
    response = params.response
    where = str(response.headers.get("Location", ""))[:200]
    raise _Redirected(f"answered {response.status}, a redirect to {where!r}, not followed")


@dataclass(frozen=True, slots=True)
class _Failure:
    """A push one device did not take: what went wrong, and whether to try again."""

    problem: str
    retry: bool
    wait: float = 0.0
    """Seconds before the device's push service is sent anything new (it backs off)."""


class WebPush:
    """Sends each notice to the devices its recipient turned on in the desk's page.

    Args:
        subject: who runs the desk, for the push services (``mailto:ops@example.com`` or an
            ``https://`` URL): in every VAPID signature.
        data_dir: the desk's data folder, where its VAPID key and the subscriptions are
            (``$ROOMKIT_DESK_DATA``, else ``~/.roomkit/desk``, by default); give the
            notifier the desk's folder.
        vapid_private_key: the VAPID key's PEM instead of the folder's key file.
        subscriptions: where the subscriptions are, instead of ``data_dir``'s.
        retry: when to try again after a 5xx, 408, 429, timeout or connection error, and
            how long a push service that failed so is sent nothing new;
            :class:`~roomkit.notify.retry.Retry`'s defaults otherwise.
        timeout: seconds one push may take.
        name: the surface's name, recorded in histories (at most 256 characters, as any
            surface's).
        push_hosts: push services' hosts to push to besides the browsers' own
            (:data:`~roomkit.notify.push_hosts.PUSH_HOSTS`), such as a self-hosted one;
            plain ``http://`` only to an origin named so, host and port
            (``"http://localhost:8080"``). A host only a ``*.`` entry
            admits is pushed to only when every address it resolves to is public.
        resolver: resolves the push services' host names (an ``aiohttp`` resolver, such as
            ``aiohttp.AsyncResolver``); ``aiohttp``'s default one otherwise.

    Raises:
        ValueError: a ``subject`` that is neither ``mailto:`` nor ``https://``; a key that is
            not a P-256 private key; a ``push_hosts`` entry that is not a host name; a
            ``timeout`` that is not a positive, finite number of seconds; a ``name`` longer
            than a surface may be.
        TypeError: ``push_hosts`` given as a string, ``timeout`` not a number, or ``name``
            not a ``str``.
        InvalidTextError: ``name`` holds text UTF-8 cannot encode.
    """

    def __init__(
        self,
        subject: str,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        vapid_private_key: str | bytes | None = None,
        subscriptions: PushSubscriptions | None = None,
        retry: Retry | None = None,
        timeout: float = 10.0,
        name: str = "webpush",
        push_hosts: Iterable[str] | None = None,
        resolver: AbstractResolver | None = None,
    ) -> None:
        self.name = surface_name(name, what="WebPush(name=...)", example="webpush")
        if not isinstance(subject, str) or not (
            (subject.startswith("mailto:") and "@" in subject) or subject.startswith("https://")
        ):
            raise ValueError(
                "WebPush(subject=...) says who runs the desk, for the push services: "
                f"'mailto:ops@example.com' or an https:// URL, not {subject!r}"
            )
        self.timeout = bounded_seconds("WebPush(timeout=...)", timeout)
        self.retry = retry_policy("WebPush(retry=...)", retry, Retry())
        pem = (
            load_or_create_vapid_key(data_dir)
            if vapid_private_key is None
            else (
                vapid_private_key.encode("ascii")
                if isinstance(vapid_private_key, str)
                else vapid_private_key
            )
        )
        self.public_key = vapid_public_key(pem, where="WebPush(vapid_private_key=...)")
        """The VAPID public key browsers subscribe with (unpadded base64url)."""
        self._vapid = Vapid.from_pem(pem)
        self.subject = subject
        self.subscriptions = (
            subscriptions if subscriptions is not None else PushSubscriptions(data_dir)
        )
        self.push_hosts = PushHosts(push_hosts)
        """The hosts this surface pushes to; a desk running it takes subscriptions to them."""
        self._resolver = resolver
        self._owned: AbstractResolver | None = None
        self._session: aiohttp.ClientSession | None = None
        self._services = PushServices(self.retry, _loop_time)

    def __repr__(self) -> str:
        return f"WebPush(subject={self.subject!r})"

    def bind_handler(self, handler: HumanInputHandler) -> None:
        """Called by the notifier: each push service's back-off is measured on the clock of
        its handler's store, as the notifier's retries are."""
        self._services.clock = functools.partial(now_of, handler)

    def reaches(self, recipient: str | None, person: Person | None) -> bool:
        """A person who turned notifications on in the desk's page, on some device."""
        return recipient is not None and self.subscriptions.reaches(recipient)

    async def send(self, notice: Notice) -> Mapping[str, Any] | None:
        """Push the notice to each of its recipient's devices (for a settled request, those
        that were told of it).

        Returns:
            ``{"endpoints": [...]}``, the devices that took it (none new on a retry whose
            devices left are gone); ``{"skipped": ...}`` when none is subscribed any more.

        Raises:
            DeliveryError: a push service failed, or backs off after failing (``retry=True``
                and ``alone=True``: its ``receipt`` names the devices that took it, which
                its retry, given them in :attr:`Notice.got_through`, passes over), or
                refused every device.
        """
        recipient = notice.recipient
        if recipient is None:
            return {"skipped": "no recipient"}
        current = await asyncio.to_thread(self.subscriptions.of, recipient)
        took = set(_endpoints(notice.got_through))
        # A retry goes only to the devices its earlier attempts did not reach: a device that
        # took the notice would take it twice, and a reminder would sound on it twice.
        targets = [
            s
            for s in self._targets(notice, self._listed(current, recipient))
            if s.endpoint not in took
        ]
        if not targets:
            return {"endpoints": []} if took else {"skipped": "no push subscription"}
        message = encoded(push_message(notice))
        headers = {
            "Topic": topic(notice.request.pending_id),
            "Urgency": "normal" if notice.type == "question_settled" else "high",
        }
        ttl = self._ttl(notice)
        if notice.sending is not None:
            # Recorded before the push: a process killed after it still leaves them told.
            await notice.sending({"endpoints": [s.endpoint for s in targets]})
        sent: list[str] = []
        failures: list[_Failure] = []
        # Every device at once: one on a push service that hangs holds up no other.
        outcomes = await asyncio.gather(
            *(self._push(s, message, headers, ttl, recipient) for s in targets),
            return_exceptions=True,
        )
        for subscription, outcome in zip(targets, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                outcome = _fault(subscription, outcome)
            if outcome is _SENT:
                sent.append(subscription.endpoint)
            elif isinstance(outcome, _Failure):
                failures.append(outcome)
        retry = any(failure.retry for failure in failures)
        if failures and (retry or not sent):
            # The devices that took it are kept: how the request ends goes to them.
            receipt = {"endpoints": sent} if sent else None
            problem = "; ".join(f.problem for f in failures)
            # Each push service backs off on its own: the surface's other deliveries go on,
            # and this one is retried once the first of its services takes pushes again.
            after = min((f.wait for f in failures if f.retry), default=0.0)
            raise DeliveryError(
                problem, retry=retry, receipt=receipt, alone=True, retry_after=after
            )
        for failure in failures:
            logger.warning("Could not push to a device of %r: %s", recipient, failure.problem)
        if not sent:
            return {"skipped": "every device's subscription is gone"}
        return {"endpoints": sent}

    def _listed(self, current: Sequence[Subscription], recipient: str) -> list[Subscription]:
        """The subscriptions on a listed push service's host; the others are logged, and never
        pushed to (the file may have been edited, or the list narrowed since)."""
        listed = []
        for subscription in current:
            problem = self.push_hosts.problem(subscription.endpoint)
            if problem is None:
                listed.append(subscription)
            else:
                logger.warning("Not pushing to a subscription of %r: %s", recipient, problem)
        return listed

    def _targets(self, notice: Notice, current: Sequence[Subscription]) -> list[Subscription]:
        if notice.type != "question_settled":
            return list(current)
        told = {
            endpoint
            for receipt in notice.receipts
            for kept in (receipt, receipt.get(SENDING) or {})
            for endpoint in _endpoints(kept)
        }
        return [s for s in current if s.endpoint in told]

    def _ttl(self, notice: Notice) -> int:
        if notice.type == "question_settled":
            return SETTLED_TTL
        if notice.deadline_at is None:
            # Kept no longer than the answer link in it answers.
            return MAX_TTL if notice.answer_url is None else int(NO_DEADLINE_TTL)
        left = notice.deadline_at.timestamp() - time.time()
        return int(max(60, min(MAX_TTL, left)))

    async def _push(
        self,
        subscription: Subscription,
        message: bytes,
        headers: Mapping[str, str],
        ttl: int,
        recipient: str,
    ) -> _Failure | str:
        """Push to one device: :data:`_SENT` when it took it, :data:`_GONE` when its
        subscription is gone (and now dropped), else what went wrong; nothing is sent to a
        push service backing off."""
        service = _origin(subscription.endpoint)
        device = _device(subscription.endpoint)
        try:
            body = WebPusher(subscription.info()).encode(message, "aes128gcm")["body"]
        except Exception as error:
            # Whatever fails here fails for this device's key alone, and on every try.
            await asyncio.to_thread(self.subscriptions.remove, subscription.endpoint)
            problem = f"{device} cannot be encrypted to ({type(error).__name__}: {error})"
            return _Failure(f"{problem}; its subscription is dropped", retry=False)
        held = self._services.held(service)
        if held is not None:
            wait = self._services.wait(service)
            return _Failure(f"the push service {service} {held}", retry=True, wait=wait)
        started = self._services.begin(service)
        outcome: _Failure | str | None = None
        try:
            outcome = await self._answer(subscription, body, headers, ttl, recipient)
        finally:
            # A push cut short (the notifier stopping) tells nothing of the service.
            failure = outcome if isinstance(outcome, _Failure) else None
            took = outcome is not None and failure is None
            retry = failure is not None and failure.retry
            after = failure.wait if failure is not None else 0.0
            self._services.end(service, started, took=took, retry=retry, after=after)
        if retry and isinstance(outcome, _Failure):
            return replace(outcome, wait=self._services.wait(service))
        return outcome

    async def _answer(
        self,
        subscription: Subscription,
        body: bytes,
        headers: Mapping[str, str],
        ttl: int,
        recipient: str,
    ) -> _Failure | str:
        """Post one device's encrypted message: what its push service's answer says."""
        service = _origin(subscription.endpoint)
        device = _device(subscription.endpoint)
        try:
            status, after = await self._post(subscription.endpoint, service, body, headers, ttl)
        except _Redirected as redirect:
            return _Failure(f"the push service {service} {redirect}", retry=False)
        except NotPublic as refused:
            # Whoever holds the name's DNS chose the address: no retry makes it safe.
            return _Failure(f"{device} is not pushed to: {refused}", retry=False)
        except TimeoutError:
            return _Failure(f"the push service {service} timed out after {self.timeout:g} s", True)
        except (aiohttp.ClientError, OSError) as error:
            problem = f"cannot be reached ({type(error).__name__}: {error})"
            return _Failure(f"the push service {service} {problem}", retry=True)
        except Exception as error:
            # One device's fault is never the others': it is told, and they are pushed to.
            problem = f"{device} cannot be pushed to ({type(error).__name__}: {error})"
            return _Failure(problem, retry=False)
        if status < 300:
            return _SENT
        if status in _GONE_STATUS:
            await asyncio.to_thread(self.subscriptions.remove, subscription.endpoint)
            logger.info(
                "Dropped a push subscription of %r: %s answered %d (the device unsubscribed)",
                recipient,
                service,
                status,
            )
            return _GONE
        retry = status >= 500 or status in _RETRIED
        if retry:
            # Waited out, as asked, but never past the time a delivery is given up after.
            after = min(after, self.retry.give_up)
            hint = f", asking to be left alone for {after:.0f} s" if after else ""
            problem = f"the push service {service} answered {status}{hint}"
            return _Failure(problem, retry=True, wait=after)
        hint = _refusal_hint(status)
        return _Failure(f"the push service {service} answered {status}{hint}", retry=False)

    async def _post(
        self, endpoint: str, service: str, body: bytes, headers: Mapping[str, str], ttl: int
    ) -> tuple[int, float]:
        """Post one encrypted message, signed for ``service``; the status it got, and the
        seconds its ``Retry-After`` asks to wait (its body is never read: a push service says
        all in its status and headers)."""
        claims = {"sub": self.subject, "aud": service, "exp": int(time.time()) + 12 * 3600}
        signed = {
            **headers,
            **self._vapid.sign(claims),
            "TTL": str(ttl),
            "Content-Encoding": "aes128gcm",
        }
        if self._session is None:
            no_redirects = aiohttp.TraceConfig()
            no_redirects.on_request_redirect.append(_refuse_redirect)
            # Addresses are checked where they are looked up, so the ones checked are the
            # ones connected to; TLS still verifies the host's name.
            inner = self._resolver if self._resolver is not None else aiohttp.DefaultResolver()
            checked = PublicOnly(inner, self.push_hosts.checked)
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(resolver=checked), trace_configs=[no_redirects]
            )
            self._owned = None if self._resolver is not None else inner
        async with self._session.post(
            endpoint, data=body, headers=signed, timeout=aiohttp.ClientTimeout(total=self.timeout)
        ) as response:
            answered = response.headers
            return int(response.status), retry_after(
                answered.get("Retry-After"), answered.get("Date")
            )

    async def aclose(self) -> None:
        """Close the HTTP session."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()
        owned, self._owned = self._owned, None
        if owned is not None:
            await owned.close()


def _loop_time() -> float:
    """The running event loop's clock: a push service's back-off when no notifier binds
    the surface to its store's."""
    return asyncio.get_running_loop().time()


def _origin(endpoint: str) -> str:
    """A push service, by the origin of an endpoint on it (``scheme://host:port``)."""
    parts = urlsplit(endpoint)
    return f"{parts.scheme}://{parts.netloc}"


def _endpoints(receipt: Mapping[str, Any]) -> list[str]:
    """The devices a receipt of this surface names (``{"endpoints": [...]}``)."""
    return [str(endpoint) for endpoint in receipt.get("endpoints", ()) or ()]


def _device(endpoint: str) -> str:
    return f"the device ...{endpoint[-12:]} on {_origin(endpoint)}"


def _fault(subscription: Subscription, error: BaseException) -> _Failure:
    """What became of one device's push that raised ``error``: its own failure, never the
    other devices'; a cancellation is raised on."""
    if not isinstance(error, Exception):
        raise error
    logger.error("Pushing to %s failed", _device(subscription.endpoint), exc_info=error)
    problem = f"{_device(subscription.endpoint)} failed ({type(error).__name__}: {error})"
    return _Failure(problem, retry=False)


def _refusal_hint(status: int) -> str:
    if status in (401, 403):
        return (
            ": it refused the VAPID signature (the device subscribed with another key: it "
            "must turn notifications on again, or give WebPush the desk's data_dir)"
        )
    if status == 413:
        return ": the message is too large"
    return ": check the subscription"
