"""A new request's arguments checked as ``create`` checks them, wherever they are read first.

One walk settles the common case (:func:`~roomkit._storable.storable_as_is`). Arguments it
leaves in doubt are checked for their size first, then for what else no store holds, so that
arguments both too large and wrong otherwise are refused as too large wherever they are
checked: by the handler that makes the request, or by a policy step that digests them for
the policy before any request is made.
"""

from __future__ import annotations

from typing import Any

from roomkit._storable import storable_as_is
from roomkit.tools.human_input._argument_size import check_arguments_size
from roomkit.tools.human_input._checks import check_arguments_json

__all__ = ["check_arguments"]


def check_arguments(arguments: dict[str, Any]) -> None:
    """Raise unless ``arguments`` are what a new request holds, as ``create`` refuses them.

    Raises:
        ArgumentsTooLargeError: they are longer as JSON than a request keeps, nest deeper
            or hold a longer integer (:func:`~._argument_size.check_arguments_size`),
            however else they are wrong.
        ValueError, TypeError, InvalidTextError: they hold themselves, NaN or an infinity,
            what JSON cannot write, or a lone surrogate
            (:func:`~._checks.check_arguments_json`); the message says where.
    """
    if not storable_as_is(arguments):  # one walk, where the checks take five
        # The size first: its walk stops once sure the arguments are too large, where the
        # other checks of them read every value.
        check_arguments_size(arguments)
        check_arguments_json(arguments)
