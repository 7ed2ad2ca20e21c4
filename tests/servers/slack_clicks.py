"""What Slack posts to the desk when a person clicks a button: form-encoded, signed."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlencode

from slack_sdk.signature import SignatureVerifier
from tests.servers.slack_server import SIGNING_SECRET


def signed(body: bytes, *, at: float | None = None, secret: str = SIGNING_SECRET) -> dict[str, str]:
    """Slack's headers for ``body``: its timestamp and its signature."""
    timestamp = str(int(time.time() if at is None else at))
    signature = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body)
    assert signature is not None
    return {
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": signature,
        "Content-Type": "application/x-www-form-urlencoded",
    }


def click(user: str, pending_id: str, action_id: str) -> dict[str, Any]:
    """The keyword arguments of a POST of ``user``'s click on a request's button."""
    payload = {
        "type": "block_actions",
        "user": {"id": user},
        "actions": [{"action_id": action_id, "value": pending_id}],
    }
    body = urlencode({"payload": json.dumps(payload)}).encode()
    return {"content": body, "headers": signed(body)}
