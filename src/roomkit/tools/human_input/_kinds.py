"""The kinds of a request: they live in :mod:`roomkit.models.kinds` (the kit reads them)."""

from roomkit.models.kinds import Kind, kind_of, option_labels, request_kind, text_answer

__all__ = ["Kind", "kind_of", "option_labels", "request_kind", "text_answer"]
