"""The documentation speaks about the product, not its history."""

from __future__ import annotations

import os
import re

import testtools

SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))),
    "doc", "source")
SECTIONS = ("tutorials", "howto", "reference", "explanation", "internals")


def _pages() -> list[str]:
    pages = []
    for root, _dirs, files in os.walk(SOURCE):
        pages += [os.path.join(root, f) for f in files if f.endswith(".rst")]
    return sorted(pages)


class PagesTest(testtools.TestCase):

    def test_no_issue_numbers(self) -> None:
        for path in _pages():
            with open(path, encoding="utf-8") as stream:
                text = stream.read()
            found = re.findall(r"\bissues?\s+\d+", text, re.IGNORECASE)
            self.assertEqual([], found, os.path.relpath(path, SOURCE))

    def test_pages_live_in_a_section(self) -> None:
        top = {os.path.relpath(p, SOURCE) for p in _pages()
               if os.sep not in os.path.relpath(p, SOURCE)}
        self.assertEqual({"index.rst", "releasenotes.rst"}, top)
        for section in SECTIONS:
            self.assertTrue(os.path.exists(
                os.path.join(SOURCE, section, "index.rst")), section)
