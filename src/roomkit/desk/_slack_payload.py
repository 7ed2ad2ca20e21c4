"""What the desk reads from a Slack interaction's payload before acting on it: the workspace
it comes from, and the answer to a modal's submission.

A Slack app installed in several workspaces signs every workspace's payloads with the same
signing secret, so the signature alone does not say the click is from the workspace whose
people the directory names: a desk given a team (``Slack(team=...)``) takes only that
workspace's payloads (or, for an Enterprise Grid organisation's id, its workspaces').

The desk opens no modals. A modal's submission reaching it comes from another feature of the
same app whose Request URL points here; answered with an empty 200, Slack would close the
modal as if it were saved, so the modal is replaced with one saying nothing was saved.
"""

from __future__ import annotations

from typing import Any

__all__ = ["NOT_SAVED", "foreign_team", "modal_refused"]

NOT_SAVED = (
    "Nothing was saved: this app's interactions go to a roomkit desk, which takes only the "
    "buttons of its own messages. Ask your Slack app's administrator."
)


def _id_in(payload: dict[str, Any], field: str, key: str = "id") -> str | None:
    value = payload.get(field)
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, str) and found else None


def foreign_team(payload: dict[str, Any], team: str | None) -> str | None:
    """Why ``payload`` is not ``team``'s to send (its workspace, or its organisation, is
    another, or it names none); ``None`` when it is, or when no team is set."""
    if team is None:
        return None
    # The workspace of the click; an organisation-wide install may send none but the user's.
    workspace = _id_in(payload, "team") or _id_in(payload, "user", "team_id")
    if team in (workspace, _id_in(payload, "enterprise")):
        return None
    where = f"workspace {workspace}" if workspace else "no workspace it names"
    return (
        f"This Slack interaction comes from {where}, and this desk takes only {team}'s "
        "(Slack(team=...)): the app is installed in another workspace too"
    )


def modal_refused() -> dict[str, Any]:
    """The answer to a modal's submission: the modal, replaced with :data:`NOT_SAVED`."""
    return {
        "response_action": "update",
        "view": {
            "type": "modal",
            "title": {"type": "plain_text", "text": "Not saved"},
            "close": {"type": "plain_text", "text": "Close"},
            "blocks": [{"type": "section", "text": {"type": "plain_text", "text": NOT_SAVED}}],
        },
    }
