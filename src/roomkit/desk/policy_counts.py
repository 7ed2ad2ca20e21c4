"""The desk's view of the policies' decisions: how often each policy allowed, denied, asked
or abstained, per tool, in this process, enforced or in shadow.

``GET /api/policy/counts`` returns the counts to an administrator only; the desk's page shows
them to one as a compact table. A shadow policy's rows (``enforced`` false)
say how often it *would* have allowed, denied or asked: the figures to read before it is
enforced. ``/metrics`` serves the same counts as ``roomkit_policy_decisions``.
"""

# Without postponed annotations: FastAPI reads the routes' parameter types at run time.
from typing import TYPE_CHECKING, Annotated

from fastapi import APIRouter, Depends, HTTPException
from pydantic import BaseModel

from roomkit.desk.auth import Principal
from roomkit.desk.route_class import desk_route_class
from roomkit.desk.shapes import ErrorBody
from roomkit.policy import tally

if TYPE_CHECKING:
    from roomkit.desk.api import Desk

__all__ = ["PolicyCountView", "policy_router"]

ADMIN_ONLY = (
    "The policies' counts are shown to an administrator only: sign in with an administrator's token"
)


_ERRORS: dict[int | str, dict[str, object]] = {
    401: {"model": ErrorBody, "description": "Missing, invalid or expired token"},
    403: {"model": ErrorBody, "description": "Not an administrator"},
    429: {"model": ErrorBody, "description": "Rate limited (see Retry-After)"},
}


class PolicyCountView(BaseModel):
    """How many calls to one tool one policy decided one way."""

    policy: str
    tool: str
    decision: str
    """``allow``, ``deny``, ``ask`` or ``abstain``."""
    enforced: bool
    """``False`` for a shadow policy: what it would have decided."""
    calls: int


def _rows() -> list[PolicyCountView]:
    return [PolicyCountView.model_validate(row, from_attributes=True) for row in tally.counts()]


def policy_router(desk: "Desk") -> APIRouter:
    """The routes of the policies' counts on ``desk`` (``app.include_router(...)``)."""
    route_class = desk_route_class(desk.limits, on_store_error=desk.metrics.store_error)
    router = APIRouter(prefix="/api", tags=["desk"], route_class=route_class)
    Caller = Annotated[Principal, Depends(desk.gate)]

    def admitted(caller: Principal) -> None:
        if not caller.admin:
            raise HTTPException(status_code=403, detail=ADMIN_ONLY)

    @router.get("/policy/counts", responses=_ERRORS)
    async def policy_counts(caller: Caller) -> list[PolicyCountView]:
        """How often each policy decided each tool's calls each way, in this process."""
        admitted(caller)
        return _rows()

    return router
