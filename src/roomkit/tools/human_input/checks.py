"""The checks a new request passes before anything is stored, for code that must refuse a
request early: a Temporal workflow, which cannot let a create activity fail on what it was
given (the activity would be retried), checks in the workflow what ``create`` would refuse.

:func:`check_request_text` refuses text a store cannot hold (a lone surrogate), ids that are
no text, NaN and infinities, arguments that are not JSON (bytes, a set, a key that is not a
``str``) and arguments that hold themselves; :func:`check_arguments` all ``create`` refuses
of the arguments alone (their size first, so that arguments nested past any bound are
refused as too deep before anything else walks them), for code that reads a call's arguments
before any request is made (a policy step, which digests them for the policy);
:func:`check_ladder_text` a ladder's default
answer or escalation a store cannot hold; :func:`check_arguments_size` arguments longer
than a request keeps (:data:`MAX_ARGUMENTS_CHARS` as JSON, on every store), nested deeper
than :data:`MAX_ARGUMENTS_DEPTH` levels, or holding an integer longer than
:data:`MAX_NUMBER_CHARS` characters; :func:`check_surface` the name a surface records in a
request's history (a notifier surface's ``name=`` included), longer than a surface may be;
:func:`check_approvers` the approvers a question could not list once it is made (more than
a request lists with its actor, or a role the directory lacks), for code that adds them in
a second step; :func:`answer_schema_of` what stands for an answer schema (a JSON Schema
dict, a Pydantic model class, or for a framework that takes them any Python type) as the
checked JSON Schema a request keeps, refusing one no answer could be checked against;
:func:`scoped_key_bytes` how long a key is with its owner's scope, for code that makes a
key of names it does not choose (a workflow's id).
"""

from roomkit.stores import MAX_ARGUMENTS_CHARS
from roomkit.tools.human_input._argument_size import check_arguments_size
from roomkit.tools.human_input._arguments import check_arguments
from roomkit.tools.human_input._checks import (
    MAX_ARGUMENTS_DEPTH,
    MAX_NUMBER_CHARS,
    check_ladder_text,
    check_request_text,
    check_surface,
    check_text,
    scoped_key_bytes,
)
from roomkit.tools.human_input._routed import check_approvers
from roomkit.tools.human_input._typed_answers import answer_schema_of

__all__ = [
    "MAX_ARGUMENTS_CHARS",
    "MAX_ARGUMENTS_DEPTH",
    "MAX_NUMBER_CHARS",
    "answer_schema_of",
    "check_approvers",
    "check_arguments",
    "check_arguments_size",
    "check_ladder_text",
    "check_request_text",
    "check_surface",
    "check_text",
    "scoped_key_bytes",
]
