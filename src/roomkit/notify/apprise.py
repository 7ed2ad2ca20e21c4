"""The Apprise surface: one-way notices to everything the ``apprise`` library speaks.

Needs the ``apprise`` extra (``pip install -e '.[apprise]'``). Apprise URLs name the
services (``msteams://...``, ``discord://...``, ``tgram://...``, ``ntfy://...``, a JSON POST
with ``json://host/path``, and many more). Each notice goes to every URL, as a title and a
plain-text body: what is asked, of whom, and the link to answer it in the desk. Nothing
comes back; the answer is given in the desk.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from roomkit._extras import requires_extra

with requires_extra("roomkit.notify.apprise", "apprise"):
    import apprise

from roomkit.notify._header_values import header_name_problem, header_value_problem
from roomkit.notify.surface import DeliveryError, Notice, Person, surface_name
from roomkit.notify.wording import asked_text, clip, headline, outcome_line, request_kind, shown

__all__ = ["Apprise"]

_TITLE_MAX = 250
_BODY_MAX = 4000


class Apprise:
    """Tells every Apprise URL of each notice; one way (answers come through the desk).

    Args:
        urls: one Apprise URL, or several.
        name: the surface's name, recorded in histories (at most 256 characters, as any
            surface's); give each Apprise its own.

    Raises:
        ValueError: no URL, a URL that Apprise cannot read, or one whose ``+Header=``
            parameter gives a header HTTP cannot carry (a line break, a letter outside
            ASCII); its scheme is named, never the secrets it may hold. A ``name`` longer
            than a surface may be.
        TypeError: ``name`` is not a ``str``.
        InvalidTextError: ``name`` holds text UTF-8 cannot encode.
    """

    def __init__(self, urls: str | Iterable[str], *, name: str = "apprise") -> None:
        self.name = surface_name(name, what="Apprise(name=...)", example="apprise")
        listed = [urls] if isinstance(urls, str) else list(urls)
        if not listed:
            raise ValueError("Apprise(): give at least one Apprise URL, e.g. 'ntfy://topic'")
        self._apprise = apprise.Apprise()
        for index, url in enumerate(listed, start=1):
            before = len(self._apprise)
            if not isinstance(url, str) or not self._apprise.add(url):
                raise ValueError(
                    f"Apprise(): URL #{index} ({_shown(url)}) is not one Apprise can use: "
                    "check its scheme and form in Apprise's list of services"
                )
            for added in range(before, len(self._apprise)):
                problem = _header_problem(self._apprise[added])
                if problem is not None:
                    raise ValueError(f"Apprise(): URL #{index} ({_shown(url)}) {problem}")
        self._count = len(listed)

    def __repr__(self) -> str:
        return f"Apprise({self._count} URL{'s' if self._count != 1 else ''})"

    def reaches(self, recipient: str | None, person: Person | None) -> bool:
        """Every notice: the URLs are the team's channels, not one person's."""
        return True

    async def send(self, notice: Notice) -> Mapping[str, Any] | None:
        """Send the notice to every URL.

        Raises:
            DeliveryError: a URL did not take it (``retry=True``: the services that failed
                may take it later; the others may get it twice).
        """
        title, body = notice_text(notice)
        result = await self._apprise.async_notify(
            body=body,
            title=title,
            notify_type=_type_of(notice),
            body_format=apprise.NotifyFormat.TEXT,
        )
        if not result:
            raise DeliveryError(
                f"Apprise could not deliver to every URL{_why(result)}: check the services' "
                "URLs and that they are reachable",
                retry=True,
            )
        return None

    async def aclose(self) -> None:
        """Nothing to close: Apprise opens a connection per notice."""


def _header_problem(service: object) -> str | None:
    """What is wrong with the headers a URL's ``+Name=value`` parameters give its service
    (a ``json://``, ``xml://`` or ``form://`` one): a value decoded to hold a line break or
    a letter outside ASCII would make every notice fail in the HTTP client."""
    headers = getattr(service, "headers", None)
    if not isinstance(headers, Mapping):
        return None
    for name, value in headers.items():
        problem = header_name_problem(name)
        if problem is not None:
            return f"gives a header name {name!r} that {problem}: fix its +{name}= parameter"
        problem = header_value_problem(value)
        if problem is not None:
            # The value may be a secret: only its header is named.
            return f"gives the header {name!r} a value that {problem}: fix its +{name}= parameter"
    return None


def _shown(url: object) -> str:
    """A URL as an error may show it: its scheme only (the rest may hold a secret)."""
    if not isinstance(url, str):
        return f"not text but {type(url).__name__}"
    scheme, found, _ = url.partition("://")
    return f"{scheme}://..." if found else "no scheme://"


def _type_of(notice: Notice) -> Any:
    types = apprise.NotifyType
    if notice.type == "question_settled":
        return types.SUCCESS if notice.outcome == "resolved" else types.INFO
    return types.WARNING if notice.type == "question_escalated" else types.INFO


def _why(result: Any) -> str:
    """The last warning Apprise logged for the call, when its result keeps them."""
    logs = getattr(result, "logs", None)
    if not callable(logs):
        return ""
    messages = [entry.message for entry in logs() if entry.level in {"WARNING", "ERROR"}]
    return f" ({clip(messages[-1], 200)})" if messages else ""


def notice_text(notice: Notice) -> tuple[str, str]:
    """The title and plain-text body of ``notice``: nothing in them changes how the rest reads
    (a bidi override or a control character shows as a replacement character)."""
    request = notice.request
    asked = clip(shown(asked_text(request)), _BODY_MAX)
    first = asked.partition("\n")[0]
    if notice.type == "question_settled":
        return clip(shown(f"{outcome_line(notice)}: {first}"), _TITLE_MAX), asked
    for_whom = f" for {notice.recipient}" if notice.recipient else ""
    title = shown(f"{headline(notice, request_kind(request), to_you=False)}{for_whom}: {first}")
    where = [f"room {request.room_id}" if request.room_id else "", request.tool_name]
    lines = [asked, "", shown(" · ".join(part for part in where if part))]
    link = notice.answer_url or notice.desk_url
    if link:
        lines.append(f"Answer in the desk: {link}")
    return clip(title, _TITLE_MAX), "\n".join(lines)
