"""MkDocs hooks: the reference pages that are read from the code as the site is built.

A page asks for a generated part with a marker on a line of its own:

- ``<!-- generated: cli -->``: every command's ``--help``, as the installed CLI prints it;
- ``<!-- generated: openapi -->``: the desk's endpoints, from its OpenAPI document, which
  the site also serves as ``reference/openapi.json``;
- ``<!-- generated: errors -->``: the tree of errors roomkit raises, with each one's meaning.

The performance page is written from the benchmark results; until it is in ``docs/``, the
site holds a short page that says where its figures come from.

A guide added to ``docs/how-to/`` joins the how-to section of the navigation by itself, under
its page's title, until ``mkdocs.yml`` lists it where it belongs.

Once the site is built, every public name (``__all__``) of the modules the API reference
documents must be in its inventory: a name left out fails the build.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import json
import os
import re
import zlib
from collections.abc import Callable, Iterator
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

PERFORMANCE = "explanation/performance.md"
OPENAPI = "reference/openapi.json"
MARKER = re.compile(r"^<!-- generated: (\w+) -->$", flags=re.MULTILINE)
ROLE = re.compile(r":(?:mod|class|func|meth|attr|exc|data|obj):<code>(~?)([^<]*)</code>")
"""A Sphinx role some docstrings use, as the Markdown of a page renders it."""
DOCUMENTED = (
    "roomkit",
    "roomkit.auth",
    "roomkit.desk",
    "roomkit.mcp",
    "roomkit.notify",
    "roomkit.testing",
    "roomkit.tools",
    "roomkit.tools.approvals",
    "roomkit.tools.human_input",
)
"""The public modules whose every name the API reference documents."""
_PUBLIC_MODULES = (
    "roomkit",
    "roomkit.auth",
    "roomkit.bodies",
    "roomkit.desk",
    "roomkit.notify",
    "roomkit.tools.human_input",
)
"""The modules whose errors the tree shows (the MCP server, which needs the ``mcp`` extra to
import, defines none)."""


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of a desk with the default options (the same for every desk)."""
    from roomkit import HumanInputHandler, RoomKit
    from roomkit.desk import create_desk_app

    app = create_desk_app(
        RoomKit(), handler=HumanInputHandler(), secret="the-documentation-desk-secret"
    )
    return app.openapi()


def openapi_text() -> str:
    """The OpenAPI document as the site serves it."""
    return json.dumps(openapi_document(), indent=2, sort_keys=True) + "\n"


def _help(argv: list[str]) -> str:
    from roomkit.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main([*argv, "--help"])
    return out.getvalue()


def _subcommands(text: str) -> list[str]:
    """The subcommands a ``--help`` lists under its ``COMMAND`` or ``ACTION`` heading."""
    found = re.search(r"^  [A-Z]+\n((?:    .*\n)+)", text, flags=re.MULTILINE)
    if found is None:
        return []
    return re.findall(r"^    (\w[\w-]*)", found.group(1), flags=re.MULTILINE)


def _walk(argv: list[str]) -> Iterator[tuple[list[str], str]]:
    text = _help(argv)
    yield argv, text
    for name in _subcommands(text):
        yield from _walk([*argv, name])


def cli_markdown() -> str:
    """Every command's ``--help``, a section each, in the order ``roomkit --help`` lists them."""
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        parts = []
        for argv, text in _walk([]):
            name = " ".join(["roomkit", *argv])
            parts.append(f"## `{name}`\n\n```text\n{text.rstrip()}\n```\n")
        return "\n".join(parts)
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous


def openapi_markdown() -> str:
    """A table of the desk's endpoints: method, path and summary."""
    rows = ["| method | path | what it does |", "| ------ | ---- | ------------ |"]
    for path, operations in openapi_document()["paths"].items():
        for method, operation in operations.items():
            summary = operation.get("summary", "")
            described = operation.get("description", "").strip().split("\n\n", 1)[0]
            text = " ".join((described or summary).split())
            rows.append(f"| `{method.upper()}` | `{path}` | {text} |")
    return "\n".join(rows) + "\n"


def error_classes() -> list[type[BaseException]]:
    """Every public error roomkit raises: the tree under ``RoomKitError`` and ``DeliveryError``."""
    for module in _PUBLIC_MODULES:
        importlib.import_module(module)
    from roomkit.core.exceptions import RoomKitError
    from roomkit.notify import DeliveryError

    found: list[type[BaseException]] = []

    def visit(cls: type[BaseException]) -> None:
        if cls.__name__.startswith("_") or cls in found:
            return
        found.append(cls)
        for sub in sorted(cls.__subclasses__(), key=lambda c: c.__name__):
            visit(sub)

    visit(RoomKitError)
    visit(DeliveryError)
    return found


def _first_paragraph(cls: type) -> str:
    doc = inspect.getdoc(cls) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())


def _role(found: re.Match[str]) -> str:
    """``:class:`~a.b.C``` reads ``C``; ``:class:`a.b.C``` reads ``a.b.C``."""
    name = found.group(2)
    if found.group(1):
        name = name.rsplit(".", 1)[-1]
    return f"<code>{name}</code>"


def errors_markdown() -> str:
    """The error tree as a nested list: each error, its standard bases, what it means."""
    lines = []
    classes = error_classes()
    for cls in classes:
        parents = [base for base in cls.__mro__[1:] if base in classes]
        depth = len(parents)
        standard = [
            base.__name__
            for base in cls.__bases__
            if base not in classes and base.__module__ == "builtins" and base is not Exception
        ]
        also = f" (also a `{'`, `'.join(standard)}`)" if standard else ""
        meaning = _first_paragraph(cls)
        lines.append(f"{'    ' * depth}- `{cls.__name__}`{also}: {meaning}")
    return "\n".join(lines) + "\n"


GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli_markdown,
    "openapi": openapi_markdown,
    "errors": errors_markdown,
}


HOW_TO = "How-to guides"


def _listed(entries: Any) -> set[str]:
    """Every page path the navigation names, at any depth."""
    found: set[str] = set()
    if isinstance(entries, str):
        found.add(entries)
    elif isinstance(entries, list):
        for entry in entries:
            found |= _listed(entry)
    elif isinstance(entries, dict):
        for value in entries.values():
            found |= _listed(value)
    return found


def _title(path: str) -> str:
    with open(path, encoding="utf-8") as page:
        for line in page:
            if line.startswith("# "):
                return line[2:].strip()
    return os.path.splitext(os.path.basename(path))[0]


def on_config(config: Any) -> Any:
    """List the how-to guides the navigation does not name yet at the end of their section."""
    nav = config["nav"]
    section = next(
        (entry[HOW_TO] for entry in nav if isinstance(entry, dict) and HOW_TO in entry), None
    )
    if section is None:
        return config
    listed = _listed(nav)
    folder = os.path.join(config["docs_dir"], "how-to")
    for name in sorted(os.listdir(folder)):
        relative = f"how-to/{name}"
        if name.endswith(".md") and relative not in listed:
            section.append({_title(os.path.join(folder, name)): relative})
    return config


def on_files(files: Files, config: Any) -> Files:
    """Add the generated OpenAPI document, and the performance page while it is not written."""
    files.append(File.generated(config, OPENAPI, content=openapi_text()))
    if files.get_file_from_path(PERFORMANCE) is None:
        files.append(
            File.generated(
                config,
                PERFORMANCE,
                content=(
                    "# Performance and capacity\n\n"
                    "The figures of this page are rendered from the benchmark results in "
                    "`bench/results/`, which `make bench` writes.\n"
                ),
            )
        )
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Replace each ``<!-- generated: NAME -->`` line with its generated part."""

    def generate(found: re.Match[str]) -> str:
        name = found.group(1)
        if name not in GENERATORS:
            raise ValueError(f"{page.file.src_uri}: no generated part is called {name!r}")
        return GENERATORS[name]()

    return MARKER.sub(generate, markdown)


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    """Show a docstring's Sphinx roles as the code they name."""
    return ROLE.sub(_role, html)


def inventory(site_dir: str) -> set[str]:
    """The names in the built site's ``objects.inv`` (Sphinx's inventory format, version 2)."""
    with open(os.path.join(site_dir, "objects.inv"), "rb") as file:
        for _ in range(4):
            file.readline()
        text = zlib.decompress(file.read()).decode()
    return {line.split(" ", 1)[0] for line in text.splitlines() if line}


def undocumented(names: set[str], source: str) -> list[str]:
    """The public names of the documented modules (under the folder ``source``) that ``names``
    lacks."""
    import griffe

    missing = []
    for module_name in DOCUMENTED:
        # Read statically, as the reference itself is: a module needs no extra to be listed.
        module = griffe.load(module_name, search_paths=[source], resolve_aliases=False)
        for name in module.exports or ():
            if f"{module_name}.{name}" not in names:
                missing.append(f"{module_name}.{name}")
    return missing


def on_post_build(config: Any) -> None:
    """Fail the build when the API reference leaves out a public name."""
    source = os.path.join(os.path.dirname(config["config_file_path"]), "src")
    missing = undocumented(inventory(config["site_dir"]), source)
    if missing:
        raise PluginError(f"the API reference leaves out: {', '.join(missing)}")
