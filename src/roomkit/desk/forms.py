"""What an answer to a request looks like: now in :mod:`roomkit._forms` (re-exported here)."""

from roomkit._forms import answer_hint, example_body, takes_choices, typed_body, typed_example

__all__ = ["answer_hint", "example_body", "takes_choices", "typed_body", "typed_example"]
