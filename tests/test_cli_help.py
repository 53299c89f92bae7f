"""``gpuaccept --help`` and every subcommand's help read as plain text: no Sphinx markup from the docstrings they
are made of (issue 25)."""

import argparse
import re

import pytest

from gpuaccept import cli, helptext

MARKUP = re.compile(r"``|:(?:py:)?(?:func|meth|class|mod|attr|data|obj|exc|ref|doc):`")


def helps() -> dict[str, str]:
    p = cli.parser()
    out = {"gpuaccept": p.format_help()}
    for action in p._actions:  # argparse keeps its subparsers here
        if isinstance(action, argparse._SubParsersAction):
            out.update({f"gpuaccept {name}": sp.format_help() for name, sp in action.choices.items()})
    return out


@pytest.mark.parametrize("command", sorted(helps()))
def test_help_has_no_sphinx_markup(command):
    text = helps()[command]
    assert not MARKUP.search(text), text


def test_run_help_says_what_run_does():
    text = helps()["gpuaccept run"]
    assert "gpuaccept run: the one way a suite runs on a node" in " ".join(text.split())
    assert "gpuaccept.judge.summarize.judge_run_dir" in text


def test_plain_strips_roles_and_literals():
    assert helptext.plain("``a b`` and :func:`x.y` and :class:`~m.C` and `kept`") == "a b and x.y and m.C and `kept`"
    assert helptext.summary("First ``one``\n  line.\n\nSecond.") == "First one line."
