"""Which :class:`~roomkit.core.exceptions.ProviderError` a vendor's HTTP failure becomes.

Both vendor adapters read their SDK's exception (status code, the vendor's error type and
message) and ask :func:`error_for_status` for the typed error, so that a 429 is a rate limit
and a 529 an overload whichever vendor sent it.
"""

from __future__ import annotations

from roomkit.core.exceptions import (
    ProviderAuthError,
    ProviderError,
    ProviderOverloadedError,
    ProviderRateLimitError,
    ProviderRequestError,
    ProviderResponseError,
    ProviderTimeoutError,
)

__all__ = ["error_for_status"]

_BY_TYPE: dict[str, type[ProviderError]] = {
    "authentication_error": ProviderAuthError,
    "permission_error": ProviderAuthError,
    "invalid_api_key": ProviderAuthError,
    "rate_limit_error": ProviderRateLimitError,
    "rate_limit_exceeded": ProviderRateLimitError,
    "overloaded_error": ProviderOverloadedError,
    "api_error": ProviderOverloadedError,
    "server_error": ProviderOverloadedError,
    "timeout_error": ProviderTimeoutError,
    "invalid_request_error": ProviderRequestError,
    "not_found_error": ProviderRequestError,
    "request_too_large": ProviderRequestError,
}
"""Vendor error types, for failures that arrive without a telling status (inside a stream)."""


def error_for_status(
    status: int | None, message: str, *, provider: str, error_type: str | None = None
) -> ProviderError:
    """The typed error for a vendor failure.

    Args:
        status: the HTTP status; ``None`` or a 2xx for an error reported inside a stream.
        message: the vendor's own words.
        provider: the provider's name, kept on the error.
        error_type: the vendor's error type (``"overloaded_error"``...), read when the status
            does not decide.

    Returns:
        Auth for 401/403, rate limit for 429, timeout for 408, overloaded for 5xx (529
        included), a request error for any other 4xx; otherwise by ``error_type``, and a
        response error when neither tells.
    """
    kind: type[ProviderError]
    if status in (401, 403):
        kind = ProviderAuthError
    elif status == 429:
        kind = ProviderRateLimitError
    elif status == 408:
        kind = ProviderTimeoutError
    elif status is not None and status >= 500:
        kind = ProviderOverloadedError
    elif status is not None and 400 <= status < 500:
        kind = ProviderRequestError
    else:
        kind = _BY_TYPE.get(error_type or "", ProviderResponseError)
    code = status if status is not None and status >= 400 else None
    return kind(message, provider=provider, status_code=code)
