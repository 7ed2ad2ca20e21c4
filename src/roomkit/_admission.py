"""A caller admitted before a byte of its body is read, on every door served with FastAPI.

A door's FastAPI dependency that admits a caller (its token, its ``Host``, its rate limit)
is a :class:`BodyGate`: the desk's :class:`~roomkit.desk.gate.Gate` and the AG-UI
endpoint's gate are. A route class calls :func:`admit_first` before it reads a request's
body: it runs the route's gate on the request's head alone, so a caller without a valid
token, over its rate limit or calling through a foreign ``Host`` is refused without a byte
of what it sent read or parsed. The gate keeps the caller it admitted in the request's
scope (:meth:`BodyGate.remember`), where the route's own run of the dependency finds it
(:meth:`BodyGate.admitted`): the rate limit is spent once. The record names the gate that
admitted the caller, so another gate on the same request (another desk's, with its own key)
checks the caller itself. A route whose gate the application overrides
(``app.dependency_overrides``) is left to the override. The gate is found wherever it was
given: among the route's own dependencies, its router's (``APIRouter(dependencies=...)``),
or those given where the router was included (``app.include_router(router,
dependencies=...)``, ``FastAPI(dependencies=...)``), which FastAPI keeps for the request
rather than on the route (:func:`route_dependencies`). Needs FastAPI (the ``desk`` or
``agui`` extra).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, MutableMapping
from typing import Any

from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import Request

from roomkit.auth.principal import Principal
from roomkit.bodies import BODY_METHODS

__all__ = [
    "BodyGate",
    "GateDependency",
    "admit_before_body",
    "admit_first",
    "gate_dependency",
    "route_dependencies",
    "route_overrides",
]

GateDependency = Callable[[Request, HTTPAuthorizationCredentials | None], Awaitable[Principal]]
"""A route's dependency on a :class:`BodyGate`: the gate itself, or one of its methods."""

_bearer = HTTPBearer(auto_error=False)
_ADMITTED = "roomkit.admitted"
"""The scope key a request's caller is kept under once a gate admitted it, with its key."""
_FASTAPI = "fastapi"
_EFFECTIVE_ROUTE = "effective_route_context"
"""Where FastAPI keeps, in a request's scope, the route as included: its path, and its
dependencies with those of every ``include_router`` above it."""


def route_dependencies(route: Any, scope: MutableMapping[str, Any]) -> list[Any]:
    """The dependencies FastAPI solves for ``route`` (a FastAPI route) on the request of
    ``scope``: the route's own and its router's, with those given where the router was
    included. FastAPI builds a route as included for each request rather than copying the
    route, so the include's dependencies are not on ``route.dependant``."""
    fastapi_scope = scope.get(_FASTAPI)
    effective = fastapi_scope.get(_EFFECTIVE_ROUTE) if isinstance(fastapi_scope, dict) else None
    dependant = getattr(effective, "dependant", None)
    if dependant is not None and getattr(effective, "original_route", None) is route:
        included: list[Any] = dependant.dependencies
        return included
    own: list[Any] = route.dependant.dependencies
    return own


def route_overrides(route: Any, scope: MutableMapping[str, Any]) -> Mapping[Any, Any] | None:
    """The dependency overrides of the application that serves ``route`` (a FastAPI
    route) the request of ``scope``, if any."""
    provider = getattr(route, "dependency_overrides_provider", None)
    if provider is None:
        # A route of a router the app includes has none of its own (FastAPI gives the app's
        # to the copy it serves): the app serving the request is the scope's.
        provider = scope.get("app")
    overrides: Mapping[Any, Any] | None = getattr(provider, "dependency_overrides", None)
    return overrides


class BodyGate:
    """A FastAPI dependency that admits a route's caller: a route class runs it (or the
    method of it the route depends on) before reading the request's body."""

    @staticmethod
    def admitted(request: Request, key: object) -> Principal | None:
        """The caller admitted on ``request`` for ``key`` (the gate, or the gate and the use
        it admitted for), when it was admitted before its body was read."""
        found = request.scope.get(_ADMITTED)
        if found is not None and found[0] == key:
            principal: Principal = found[1]
            return principal
        return None

    @staticmethod
    def remember(request: Request, key: object, principal: Principal) -> None:
        """Keep ``principal`` as the caller admitted on ``request`` for ``key``."""
        request.scope[_ADMITTED] = (key, principal)


def gate_dependency(dependencies: Iterable[Any]) -> GateDependency | None:
    """The dependency on a :class:`BodyGate` among a FastAPI route's ``dependencies`` (its
    dependant's), or ``None`` when the route has none."""
    for dependency in dependencies:
        call = dependency.call
        owner = call if isinstance(call, BodyGate) else getattr(call, "__self__", None)
        if isinstance(owner, BodyGate):
            found: GateDependency = call
            return found
    return None


async def admit_before_body(dependency: GateDependency, request: Request) -> None:
    """Run a route's gate ``dependency`` on ``request`` before anything reads its body.

    Raises:
        HTTPException: what the gate refuses the caller with (400 for a foreign ``Host``,
            401 or 403 for a refused credential, 429, ...).
        StoreError: the gate cannot read the store it checks tokens against.
    """
    await dependency(request, await _bearer(request))


async def admit_first(
    dependencies: Iterable[Any],
    methods: Collection[str],
    scope: MutableMapping[str, Any],
    *,
    overrides: Mapping[Any, Any] | None = None,
) -> None:
    """Admit the caller of a request with a body to a route (its ``dependencies`` and
    ``methods``) whose gate is a :class:`BodyGate`, from the request's head alone; a request
    without a body, to a route without such a gate, or to one whose gate is among the
    application's dependency ``overrides`` is left to the route.

    Raises:
        HTTPException: the gate refused the caller.
        StoreError: the gate cannot read its store.
    """
    method = scope.get("method")
    if method not in BODY_METHODS or method not in methods:
        return
    gate = gate_dependency(dependencies)
    if gate is not None and not (overrides and gate in overrides):
        # A Request without the connection's receive: nothing here can read the body.
        await admit_before_body(gate, Request(scope))
