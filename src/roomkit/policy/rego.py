"""Rego, in process (the ``regopy`` package, Microsoft's rego-cpp): no server, no network.

The call is the query's ``input`` (``tool``, ``arguments``, ``digest``, ``actor``, ``room``,
``channel``); the query (``data.roomkit.decision`` by default) gives the decision in the
shape :func:`~roomkit.policy._base.read_result` reads: ``{"decision": "allow" | "deny" |
"ask" | "abstain", "reason": ...}`` (Vercel's ``requires-approval`` and ``not-applicable``
too), or ``{"allow": true | false}``. An undefined result, or any other shape, is
``Abstain``; a query holding several ways (``verdicts[_]``, a result each) is a failure.

The input and the data are written as UTF-8 text, not as ``\\u`` escapes, which rego-cpp
reads as their six characters (a rule naming ``"José"`` would never apply): a lone surrogate,
which UTF-8 has none of, is read as ``?``, and one in the call's actor or tool is refused.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Unpack

from roomkit.policy._base import (
    PolicyBase,
    PolicyError,
    PolicyOptions,
    check_ids,
    load_json,
    load_text,
    read_result,
    utf8_json,
)
from roomkit.policy._offloop import IN_PROCESS_TIMEOUT, OffLoop, checked_timeout
from roomkit.policy.decisions import Abstain, PolicyCall, PolicyDecision

__all__ = ["RegoPolicy"]

_WHERE = re.compile(r"\(error \d+:(.*?)\|(\d+)\|\d+\s*\(errormsg \d+:([^)]*)\)")
_MESSAGE = re.compile(r"\(errormsg (\d+):")


class RegoPolicy(PolicyBase):
    """Rego modules deciding each call, in process.

    Args:
        modules: a module's text or a ``.rego`` file's path, or a list of them.
        data: the data document the modules read (a dict, or a ``.json`` file's path).
        query: the rule that holds the decision.
        timeout: seconds a decision may take in the pipeline, where it runs off the event
            loop (:mod:`roomkit.policy._offloop`); past them it is a failure (``on_error``).
        **options: ``name``, ``shadow`` and ``on_error`` (:class:`PolicyOptions`).

    Raises:
        PolicyError: a module does not parse (the message names the file and the line),
            a file cannot be read, ``data`` is no JSON object (or holds what JSON has not: a
            datetime, a set, NaN), or ``timeout`` is not a positive number of seconds, at
            most a century.
        ImportError: the ``rego`` extra is not installed.
    """

    engine = ("rego", "regopy", "rego")

    def __init__(
        self,
        modules: str | Path | Iterable[str | Path],
        data: Mapping[str, Any] | str | Path | None = None,
        *,
        query: str = "data.roomkit.decision",
        timeout: float = IN_PROCESS_TIMEOUT,
        **options: Unpack[PolicyOptions],
    ) -> None:
        super().__init__(**options)
        self.timeout = checked_timeout(timeout, "RegoPolicy")
        regopy = self.module
        if isinstance(modules, str | Path):
            sources: list[str | Path] = [modules]
        elif isinstance(modules, Iterable):
            sources = list(modules)
        else:
            raise PolicyError(
                "RegoPolicy modules are a module's text, a .rego file's path, or a list of "
                f"them, got {type(modules).__name__}"
            )
        if not sources:
            raise PolicyError("RegoPolicy needs at least one module")
        loaded = [load_text(source, ".rego") for source in sources]
        self._modules = [
            (origin if origin != "<text>" else f"<text {number + 1}>", text)
            for number, (text, origin) in enumerate(loaded)
        ]
        document = load_json(data, "Rego data") if data is not None else None
        if document is not None and not isinstance(document, Mapping):
            raise PolicyError("Rego data is a JSON object (a dict or a .json file)")
        document = None if document is None else dict(document)
        try:
            # As it is versioned: a value JSON has not (a datetime, a set, NaN) is refused
            # here, not written as its text for the rules to compare as a string.
            digested = json.dumps(document, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise PolicyError(f"Rego data is a JSON object, and this one is not: {error}") from None
        self._data = None if document is None else utf8_json(document)
        self._local = threading.local()
        """Each thread's own interpreter: one evaluates one query at a time."""
        self._threads = OffLoop("roomkit-rego")
        self._interpreter = self._new_interpreter(regopy)
        self._local.interpreter = self._interpreter
        self.query = query
        # rego-cpp parses at the first query: run one now, so a module that does not parse
        # is refused at start rather than at the first call.
        try:
            self._query(self._interpreter)
        except _Unevaluable as error:
            origin = loaded[0][1] if len(loaded) == 1 else "the Rego modules"
            raise PolicyError(f"{origin}: {query} cannot be evaluated: {error}") from None
        except Exception as error:
            raise PolicyError(_parse_error(str(error), loaded[0][1], loaded[0][0])) from None
        self._versioned(*(text for text, _ in loaded), digested)

    def _new_interpreter(self, regopy: Any) -> Any:
        """An interpreter holding the modules and the data.

        Raises:
            PolicyError: a module does not parse.
        """
        interpreter = regopy.Interpreter()
        # rego-cpp prints a module's parse errors on the process's stdout; the PolicyError
        # raised here says them, naming the file and the line.
        interpreter.log_level = regopy.LogLevel.NONE
        for label, text in self._modules:
            try:
                interpreter.add_module(label, text)
            except Exception as error:
                raise PolicyError(_parse_error(str(error), label, text)) from None
        if self._data is not None:
            interpreter.add_data_json(self._data)
        return interpreter

    def _thread_interpreter(self) -> Any:
        """The calling thread's interpreter, made on its first decision."""
        interpreter = getattr(self._local, "interpreter", None)
        if interpreter is None:
            interpreter = self._local.interpreter = self._new_interpreter(self.module)
        return interpreter

    async def adecide(self, call: PolicyCall) -> PolicyDecision:
        """:meth:`decide`, on one of the policy's worker threads (the pipeline bounds the
        wait by ``timeout``).

        Raises:
            ValueError: the call holds a number JSON cannot carry (NaN, an infinity).
            RuntimeError: Rego could not evaluate the query on it.
            InvalidTextError: the call's ``actor`` or ``tool`` holds a lone surrogate.
        """
        return await self._threads.run(lambda: self.decide(call))

    def decide(self, call: PolicyCall) -> PolicyDecision:
        """The query's result on ``call``, as one of the four decisions, on the calling
        thread.

        Raises:
            ValueError: the call holds a number JSON cannot carry (NaN, an infinity).
            RuntimeError: Rego could not evaluate the query on it, or the query held more
                than one way (a result each, ``verdicts[_]``).
            InvalidTextError: the call's ``actor`` or ``tool`` holds text UTF-8 cannot
                encode (a lone surrogate); the message names it.
        """
        check_ids(call, "a Rego call", "no Rego input can hold")
        interpreter = self._thread_interpreter()
        interpreter.set_input_term(utf8_json(call.to_input()))
        try:
            output = self._query(interpreter)
        except _Unevaluable as error:
            raise RuntimeError(
                f"Rego could not evaluate {self.query} on this call: {error}"
            ) from None
        if not output.ok():
            raise RuntimeError(
                f"Rego could not evaluate {self.query} on this call (rules that conflict, "
                "or an error such as a division by zero, on its input)"
            )
        text = str(output)
        if text.strip() == "undefined":
            # rego-cpp's word for a query no rule defines on this input, not JSON.
            return Abstain(f"{self.query} is undefined")
        try:
            value = json.loads(text)
        except ValueError:
            raise RuntimeError(f"Rego gave no result on this call: {text[:200]!r}") from None
        if isinstance(value, list) and len(value) > 1:
            # One result each way the query holds (``verdicts[_]``): which decides is not said.
            raise RuntimeError(
                f"Rego gave {len(value)} results of {self.query} on this call, and a decision "
                "is one: query the rule that gives the decision"
            )
        if isinstance(value, list) and value:
            value = value[0]
        results = value.get("expressions") if isinstance(value, dict) else None
        if not results:
            return Abstain(f"{self.query} is undefined")
        return read_result(results[0])

    def _query(self, interpreter: Any) -> Any:
        """The query's output on the input set.

        Raises:
            _Unevaluable: rego-cpp answered with an error regopy cannot read (its message).
        """
        try:
            return interpreter.query(self.query)
        except ValueError as error:
            # regopy reads rego-cpp's error (a recursion, say) as JSON; the text is its doc.
            text = getattr(error, "doc", None)
            if not isinstance(text, str) or "(errormsg" not in text:
                raise
            raise _Unevaluable(_rego_message(text)) from None


class _Unevaluable(Exception):
    """rego-cpp's error on a query (a recursion, say), which regopy fails to read as JSON;
    its message is rego-cpp's."""


def _rego_message(text: str) -> str:
    """The message of rego-cpp's error text (its first ``(errormsg N:<N characters>)``),
    without the input it quotes after it (which the model's arguments make)."""
    found = _MESSAGE.search(text)
    if found is None:
        return "an error rego-cpp did not describe"
    start = found.end()
    return text[start : start + min(int(found.group(1)), 300)].strip()


def _parse_error(message: str, origin: str, text: str) -> str:
    """rego-cpp's error (``(error N:file|offset|length (errormsg N:text) ...)``) as
    ``file:line: message``."""
    found = _WHERE.search(message)
    if found is None:
        return f"{origin}: the Rego module does not parse: {message.strip()[:300]}"
    offset = int(found.group(2))
    line = text.count("\n", 0, offset) + 1
    return f"{origin}:{line}: the Rego module does not parse: {found.group(3).strip()}"
