"""The one path of a tool call, for every channel and door.

``site`` names where a call is served; ``declare`` what a channel offers; ``bounds`` decides
how long the call and a person may take; ``checks`` refuses what the channel will not serve;
``gate`` runs BEFORE_TOOL_USE; ``approve`` holds a tool named in ``approvals`` for a
person's decision; ``serve`` runs the call (human-input names first, then the
host's ``tool_handler``); ``report`` tells ON_TOOL_CALL once; ``pipeline`` runs them in that
order. ``outcome`` is what a call came to; every text the model reads of it is in
:mod:`roomkit.tools.texts`.
"""
