"""Docstrings as ``--help`` text: the Sphinx markup the sources use (double backquotes, ``:func:`x``` and the
other roles) is for the documentation, not for a terminal."""

from __future__ import annotations

import re

_ROLE = re.compile(r":(?:py:)?(?:func|meth|class|mod|attr|data|obj|exc|ref|doc|term|envvar|option):`~?([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")


def plain(text: str) -> str:
    """``text`` with Sphinx roles reduced to their target and double-backquoted literals to their content."""
    return _LITERAL.sub(r"\1", _ROLE.sub(r"\1", text))


def summary(doc: str | None) -> str:
    """A module docstring's first paragraph as one plain line of help."""
    first = (doc or "").strip().split("\n\n")[0]
    return plain(" ".join(first.split()))
