"""How :class:`~roomkit.stores.redis._rooms.RedisRoomStore` runs its Lua scripts.

Each script is registered with the client on first use (the client keeps its digest), and
every call is bounded by the store's ``timeout`` (:func:`~roomkit.stores.redis._link.guard`).
A write's reply starts with a status: ``"ok"``, ``"format"`` (another format is stored:
:class:`~roomkit.core.exceptions.StoreFormatError`) or why the script refused the write
(:class:`Refused`, which the store turns into its caller's error); nothing is written but
on ``"ok"``. A write whose script runs once per token gets a token of its own for each call
(:mod:`~roomkit.stores.redis._once`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roomkit.core.exceptions import StoreFormatError
from roomkit.stores.redis import _link as link
from roomkit.stores.redis import _room_records as records
from roomkit.stores.redis._once import with_token

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.commands.core import AsyncScript

__all__ = ["STORE", "Refused", "RoomScripts"]

STORE = "Redis room store"
"""What errors call the store."""


class RoomScripts:
    """Runs the room store's scripts on ``client``, which serves ``where`` (a URL without its
    password), for keys under ``prefix``, each call within ``timeout`` seconds."""

    def __init__(self, client: Redis, *, where: str, prefix: str, timeout: float) -> None:
        self._client = client
        self._where = where
        self._prefix = prefix
        self._timeout = timeout
        self._format_key = records.Layout(prefix).format
        self._registered: dict[str, AsyncScript] = {}

    def _script(self, source: str) -> AsyncScript:
        script = self._registered.get(source)
        if script is None:
            script = self._registered[source] = self._client.register_script(source)
        return script

    async def write(
        self, source: str, keys: list[str], args: list[Any], *, once: bool = False
    ) -> list[Any]:
        """Run the write script ``source`` (with a token of its own when ``once``: a script
        run once per token); its reply after the status, which is ``"ok"`` or an error.

        Raises:
            StoreFormatError: the store holds another format (nothing is written).
            Refused: the script refused the write (nothing is written); the caller says why.
            StoreUnavailableError: the server cannot be reached, or did not answer in time
                (then whether the write was applied is unknown, and the message says so).
        """
        keys, args = [self._format_key, *keys], [records.FORMAT, *args]
        if once:
            keys, args = with_token(self._prefix, keys, args, within=self._timeout)
        async with link.guard(self._where, within=self._timeout, store=STORE, write=True):
            reply = await self._script(source)(keys=keys, args=args)
        status = link.text(reply[0])
        if status == "ok":
            return list(reply)
        if status == "format":
            raise StoreFormatError(
                f"The {STORE} at {self._where} holds records of format "
                f"{link.text(reply[1])!r} under prefix {self._prefix!r}, and this roomkit "
                f"reads and writes {records.FORMAT!r}: run the roomkit version that wrote "
                "them, or give this store another prefix= or database"
            )
        raise Refused(status)

    async def read(self, source: str, keys: list[str], args: list[Any]) -> list[Any]:
        """Run the read script ``source``; its reply.

        Raises:
            StoreUnavailableError: the server cannot be reached, or did not answer in time.
        """
        async with link.guard(self._where, within=self._timeout, store=STORE):
            return list(await self._script(source)(keys=keys, args=args))


class Refused(Exception):
    """A write script refused the write (``status`` says why); nothing was written."""

    def __init__(self, status: str) -> None:
        super().__init__(status)
        self.status = status
