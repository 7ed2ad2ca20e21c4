"""The TOML file's reference page lists exactly the keys the file takes, table by table.

Each table is given an unknown key; the file's own error names the keys it takes there, and
the page's table for it must list the same ones.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.doc_pages import ROOT

from roomkit.core.exceptions import NotifyConfigError
from roomkit.notify.config import load_notify_config

PAGE = ROOT / "docs" / "reference" / "notify-toml.md"
WEBHOOK = '[[webhook]]\nurl = "https://example.com/hooks"\nsecret_env = "S"\n'
TABLES = {
    "Top level": "zz_unknown = 1\n" + WEBHOOK,
    "`[[webhook]]`": WEBHOOK + "zz_unknown = 1\n",
    "`[email]`": WEBHOOK + '[email]\nhost = "smtp.example.com"\nzz_unknown = 1\n',
    "`[slack]`": WEBHOOK + '[slack]\ntoken_env = "S"\nzz_unknown = 1\n',
    "`[[apprise]]`": WEBHOOK + '[[apprise]]\nurls = ["json://example.com"]\nzz_unknown = 1\n',
    "`[webpush]`": WEBHOOK + '[webpush]\nsubject = "mailto:a@example.com"\nzz_unknown = 1\n',
    "`[ntfy]`": WEBHOOK + '[ntfy]\nserver = "https://ntfy.sh"\nzz_unknown = 1\n',
    "`[people.NAME]`": WEBHOOK + '[people.alice]\nemail = "a@example.com"\nzz_unknown = 1\n',
    "`[ladder]`": WEBHOOK + "[ladder]\nremind_after = 60\nzz_unknown = 1\n",
}
SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def documented_keys(heading: str) -> set[str]:
    """The keys in the first column of the page's table under ``## heading``."""
    text = PAGE.read_text(encoding="utf-8")
    section = re.split(r"^## ", text, flags=re.MULTILINE)
    (body,) = [part for part in section if part.startswith(heading)]
    keys: set[str] = set()
    for row in re.findall(r"^\| (.+?) \|", body, flags=re.MULTILINE)[2:]:
        keys |= {re.sub(r"[\[\]]|\..*", "", name) for name in re.findall(r"`([^`]+)`", row)}
    return keys


@pytest.mark.parametrize("heading", list(TABLES))
def test_the_page_lists_the_keys_each_table_takes(heading: str, tmp_path: Path) -> None:
    path = tmp_path / "notify.toml"
    path.write_text(TABLES[heading], encoding="utf-8")
    with pytest.raises(NotifyConfigError, match="unknown key") as raised:
        load_notify_config(path, environ={"S": SECRET})
    taken = re.search(r"the keys here: ([^)]*)\)", str(raised.value))
    assert taken is not None, str(raised.value)
    assert documented_keys(heading) == set(taken.group(1).split(", "))
