"""What the SDK-backed text providers share: config fields, overrides, and the calls.

A vendor's config is a frozen dataclass on :class:`VendorConfig` that adds its own fields and
checks them with :meth:`RetrySettings.check_bounds`; its provider takes the config and keyword
overrides (:func:`overridden`, typed by a :class:`VendorSettings`) and subclasses
:class:`VendorProvider`, which holds the config and the retry loop, writing only what differs
between vendors: the SDK client, the call's parameters for a context, the plain call, and
opening the event stream. ``generate`` and ``stream`` run those through the vendor's
:class:`~roomkit.providers.ai._loop.RequestLoop`.
"""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypedDict, TypeVar

from roomkit.providers.ai._loop import Assembly, Events, RequestLoop, VendorErrors
from roomkit.providers.ai._retry import Backoff, Sleep
from roomkit.providers.ai.base import AIContext, AIProvider, AIResponse

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["RetrySettings", "VendorConfig", "VendorProvider", "VendorSettings", "overridden"]

_C = TypeVar("_C", bound="DataclassInstance")
_R = TypeVar("_R")
_E = TypeVar("_E")
_S = TypeVar("_S", bound="VendorConfig")


@dataclass(frozen=True, kw_only=True)
class RetrySettings:
    """The settings every vendor's config holds: how long an attempt may take, how many are
    made, whether ``generate`` streams, and the backoff between attempts (keywords only)."""

    timeout: float = 60.0
    """Seconds one attempt may take before it fails as a timeout."""
    max_retries: int = 2
    """How many times a rate-limited, overloaded or timed-out call is tried again."""
    stream: bool = False
    """Use the streaming API in the provider's ``generate``."""
    retry_base_delay: float = 0.5
    """The first backoff step in seconds; each later step doubles it (with jitter)."""
    retry_max_delay: float = 8.0
    """The longest backoff step in seconds, when the vendor gives no ``retry-after``."""
    retry_max_wait: float = 30.0
    """The most seconds spent waiting across the retries of one call."""

    def backoff(self) -> Backoff:
        """The retry bounds these settings describe."""
        return Backoff(
            retries=self.max_retries,
            base_delay=self.retry_base_delay,
            max_delay=self.retry_max_delay,
            max_wait=self.retry_max_wait,
        )

    def check_bounds(self) -> None:
        """Refuse a timeout or retry bound out of range.

        Raises:
            ValueError: naming the setting.
        """
        if self.timeout <= 0:
            raise ValueError(f"timeout must be positive, got {self.timeout}")
        self.backoff()  # validates the retry bounds


@dataclass(frozen=True)
class VendorConfig(RetrySettings):
    """The fields every vendor's config holds: the model, the API key and the API's address,
    with the attempt's ``timeout``, ``max_retries``, ``stream`` and the backoff bounds
    (``retry_base_delay``, ``retry_max_delay``, ``retry_max_wait``) as keywords
    (:class:`RetrySettings`). A vendor's config adds its own fields after these."""

    model: str
    """The model to call, as the vendor (or the server) names it."""
    api_key: str | None = field(default=None, repr=False)
    """The API key; ``None`` lets the SDK read the vendor's variable (e.g.
    ``ANTHROPIC_API_KEY``). Left out of the config's ``repr``, which logs and tracebacks show."""
    base_url: str | None = None
    """The API's address; ``None`` lets the SDK read the vendor's variable (e.g.
    ``ANTHROPIC_BASE_URL``), else the vendor's default."""


class VendorSettings(TypedDict, total=False):
    """The keywords every vendor's provider takes over its config: each sets the config's
    field of the same name, and ``None`` keeps the config's value. A vendor's settings add
    the fields only its config has."""

    model: str | None
    api_key: str | None
    base_url: str | None
    max_tokens: int | None
    timeout: float | None
    max_retries: int | None
    stream: bool | None


def overridden(
    owner: str,
    config: _C | None,
    build: Callable[[str], _C],
    settings: Mapping[str, object],
    known: Collection[str],
) -> _C:
    """``config`` (built from the ``model`` setting when ``None``) with ``settings`` over it.

    A setting given as ``None`` keeps the config's value.

    Raises:
        TypeError: a setting is not one of ``known``, or neither a config nor a model was
            given to ``owner``.
    """
    unknown = sorted(set(settings) - set(known))
    if unknown:
        raise TypeError(
            f"{owner} got an unexpected keyword argument {unknown[0]!r}; it takes "
            + ", ".join(f"{name}=" for name in known)
        )
    changes: dict[str, Any] = {name: value for name, value in settings.items() if value is not None}
    if config is None:
        model = changes.pop("model", None)
        if not isinstance(model, str):
            kind = getattr(build, "__name__", "config")
            raise TypeError(f"{owner} needs model= (or an {kind})")
        config = build(model)
    return dataclasses.replace(config, **changes)


class _Client(Protocol):
    async def close(self) -> None: ...


class VendorProvider(AIProvider, Generic[_S, _R, _E]):
    """A text provider on a vendor's SDK: one request per context, plain or streamed.

    A subclass passes its config (the keywords applied) and its vendor's errors to
    ``__init__``, then sets ``_client``; it sets ``_assembly`` (the vendor's stream reader)
    on the class, and writes ``_build`` (the request: the SDK call's parameters), ``_once``
    and ``_open``.

    Args:
        config: the settings in force.
        errors: how the SDK's exceptions become typed provider errors.
        sleep: how to wait between retries.
    """

    _client: _Client
    _assembly: Callable[[], Assembly[_E]]

    def __init__(self, config: _S, errors: VendorErrors[Any], sleep: Sleep) -> None:
        self.config: _S = config
        """The settings in force."""
        # Retries are ours (bounded, typed, testable): the SDK makes one attempt per call.
        self._loop: RequestLoop[Any] = RequestLoop(errors, backoff=config.backoff(), sleep=sleep)

    @property
    def model_name(self) -> str:
        """The configured model."""
        return self.config.model

    @property
    def supports_streaming(self) -> bool:
        """Always ``True``: :meth:`stream` yields text as it arrives."""
        return True

    async def generate(self, context: AIContext) -> AIResponse:
        """One API call for the context, retried on retryable failures.

        With ``stream=True`` the call streams and its events are assembled into the same
        response, tool calls included.

        Raises:
            ProviderError: the typed failure, after the retries allowed.
        """
        request = self._build(context)
        if self.config.stream:
            return await self._loop.collect(lambda: self._open(request), self._assembly)
        return await self._loop.call(lambda: self._once(request))

    async def stream(self, context: AIContext) -> AsyncIterator[str]:
        """Stream the response's text as it arrives.

        Only opening the stream is retried: text already passed on cannot be taken back.
        Tool calls are not reported here; use :meth:`generate` for a turn that offers tools.

        Raises:
            ProviderError: the typed failure.
        """
        request = self._build(context)
        texts = self._loop.relay(lambda: self._open(request), self._assembly())
        async with aclosing(texts):
            async for text in texts:
                yield text

    async def close(self) -> None:
        """Close the SDK client and its connections."""
        await self._client.close()

    @abstractmethod
    def _build(self, context: AIContext) -> _R:
        """The vendor's request for ``context``."""

    @abstractmethod
    async def _once(self, request: _R) -> AIResponse:
        """Make the plain call and read its answer."""

    @abstractmethod
    async def _open(self, request: _R) -> Events[_E]:
        """Open the event stream."""
