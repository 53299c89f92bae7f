"""One reader of JSON and YAML files (gpuaccept.textinput): no ``json.load``, ``json.loads`` or ``yaml.*load`` in
src/, reframe_checks/ or scripts/ outside textinput.py, except in the functions of ALLOWED, each of which parses a
tool's standard output or a command-line argument, never a file. The scan reads the Python source (a call through an
alias, ``import json as j``, or a name imported from the module, ``from json import loads``, counts too) and the
Python embedded in the shell scripts; a planted snippet shows that it finds each form."""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest
from conftest import ROOT

from gpuaccept import textinput

SCANNED = ("src", "reframe_checks", "scripts")
READER = Path("src/gpuaccept/textinput.py")
FORBIDDEN = {
    "json": {"load", "loads"},
    "yaml": {"load", "safe_load", "full_load", "unsafe_load", "load_all", "safe_load_all", "full_load_all",
             "unsafe_load_all"},
}  # fmt: skip

#: (file, function) -> what it parses: a tool's standard output or a command-line argument, never a file.
ALLOWED = {
    ("src/gpuaccept/probe/crosscheck.py", "parse_nvbandwidth"): "nvbandwidth -j's standard output (text may come "
    "before the JSON document)",
    ("src/gpuaccept/probe/dcgm.py", "parse"): "dcgmi diag -j's standard output (text may come before and after)",
    ("src/gpuaccept/probe/md_apoa1.py", "_replica"): "the JSON of the arguments handed to a replica's process",
    ("src/gpuaccept/rfmconfig.py", "main"): "the --extras command-line argument (a JSON object)",
    ("src/gpuaccept/results/slurm.py", "load_inventory"): "ansible-inventory --list's standard output",
}
_SHELL_CALL = re.compile(r"\b(json|yaml)\.(\w+)\s*\(")


def _aliases(tree: ast.AST) -> tuple[dict[str, str], dict[str, str]]:
    """(local name -> module) for ``import json [as j]``; (local name -> "module.function") for
    ``from json import loads [as x]`` of a forbidden function."""
    modules: dict[str, str] = {}
    functions: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in FORBIDDEN:
                    modules[a.asname or a.name] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module in FORBIDDEN:
            for a in node.names:
                if a.name in FORBIDDEN[node.module]:
                    functions[a.asname or a.name] = f"{node.module}.{a.name}"
    return modules, functions


def python_reads(text: str, where: str) -> list[tuple[str, int, str]]:
    """(enclosing function, line, call) of each forbidden call in Python source (function "" at module level)."""
    tree = ast.parse(text, where)
    modules, functions = _aliases(tree)
    found = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Call):
                f = child.func
                if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in modules:
                    module = modules[f.value.id]
                    if f.attr in FORBIDDEN[module]:
                        found.append((function, child.lineno, f"{module}.{f.attr}"))
                elif isinstance(f, ast.Name) and f.id in functions:
                    found.append((function, child.lineno, functions[f.id]))
            visit(child, inner)

    visit(tree, "")
    return found


def shell_reads(text: str) -> list[tuple[str, int, str]]:
    """Each forbidden call in a shell script (its embedded Python), by line."""
    return [("", n, f"{m.group(1)}.{m.group(2)}") for n, line in enumerate(text.splitlines(), 1)
            for m in _SHELL_CALL.finditer(line) if m.group(2) in FORBIDDEN[m.group(1)]]  # fmt: skip


def reads(root: Path) -> dict[tuple[str, str], list[str]]:
    """(file, function) -> the forbidden calls in it, over the scanned folders of ``root``, textinput.py left out."""
    out: dict[tuple[str, str], list[str]] = {}
    for folder in SCANNED:
        for path in sorted((root / folder).rglob("*")):
            rel = path.relative_to(root)
            if not path.is_file() or rel == READER or "__pycache__" in rel.parts:
                continue
            if path.suffix == ".py":
                found = python_reads(path.read_text(encoding="utf-8"), str(rel))
            elif path.suffix == ".sh":
                found = shell_reads(path.read_text(encoding="utf-8"))
            else:
                continue
            for function, line, call in found:
                out.setdefault((str(rel), function), []).append(f"{rel}:{line}: {call}")
    return out


def outside_the_reader(root: Path) -> list[str]:
    """The forbidden calls that are not in a function of ALLOWED."""
    return [call for key, calls in reads(root).items() if key not in ALLOWED for call in calls]


def test_every_json_and_yaml_file_is_read_through_textinput():
    found = outside_the_reader(ROOT)
    assert found == [], ("read these files with gpuaccept.textinput (read_text, load_json, load_yaml, parse_json, "
                         "parse_yaml), or, for a tool's standard output, name the function in ALLOWED: "
                         + "; ".join(found))  # fmt: skip


def test_each_allowed_function_still_parses_what_it_is_allowed_for():
    found = reads(ROOT)
    stale = [f"{file}: {function}" for file, function in ALLOWED if (file, function) not in found]
    assert stale == [], f"remove from ALLOWED (no such call there any more): {stale}"


@pytest.mark.parametrize(
    "snippet",
    [
        "import json\n\ndef read(p):\n    return json.load(open(p))\n",
        "import json\n\nclass A:\n    def read(self, p):\n        return json.loads(open(p).read())\n",
        "import yaml as y\n\nDOC = y.safe_load(open('x.yaml'))\n",
        "from yaml import unsafe_load as u\n\ndef read(p):\n    return u(open(p))\n",
        "from json import loads\n\ndef parse(text):\n    return loads(text)\n",  # an allowed name, another file
    ],
)
def test_a_planted_read_fails_the_scan(tmp_path: Path, snippet: str):
    for folder in SCANNED:
        (tmp_path / folder).mkdir()
    (tmp_path / "src" / "planted.py").write_text(snippet)
    (tmp_path / "src" / "clean.py").write_text("from gpuaccept import textinput\n\nx = textinput.parse_json('{}')\n")
    found = outside_the_reader(tmp_path)
    assert found and all(c.startswith("src/planted.py:") for c in found), found


def test_a_planted_read_in_a_shell_script_fails_the_scan(tmp_path: Path):
    for folder in SCANNED:
        (tmp_path / folder).mkdir()
    script = "python3 - f <<'PY'\nimport json, sys\nprint(json.load(open(sys.argv[1])))\nPY\n"
    (tmp_path / "scripts" / "x.sh").write_text(script)
    assert outside_the_reader(tmp_path) == ["scripts/x.sh:3: json.load"]


# ------------------------------------------------------------------------------------------------
# What the one reader refuses, each error naming the file and, where the parser knows it, the line.


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: &x [1, 2]\nb: *x\n", "line 2: YAML alias *x is not allowed"),
        ("a: 1\nb: 2\na: 3\n", "line 3: key 'a' appears twice in one mapping"),
        ("a: [1,\n", "line 2: "),
        ("a: " + "[" * 70 + "]" * 70 + "\n", "nested more than the 64 allowed"),
        ("- 1\n", "is a YAML list, expected a mapping"),
    ],
    ids=["alias", "key_twice", "not_yaml", "nested", "not_a_mapping"],
)
def test_load_yaml_refuses_and_names_the_file_and_line(tmp_path: Path, text: str, message: str):
    path = tmp_path / "in.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(f"{path}: the input ")) as err:
        textinput.load_yaml(path, "the input", ValueError)
    assert message in str(err.value)


def test_the_readers_refuse_a_link_an_empty_file_and_a_fifo(tmp_path: Path):
    good = tmp_path / "good.yaml"
    good.write_text("a: 1\n")
    assert textinput.load_yaml(good, "the input", ValueError) == {"a": 1}
    (tmp_path / "link.yaml").symlink_to(good)
    (tmp_path / "empty.json").write_text("")
    os.mkfifo(tmp_path / "fifo.json")
    for name, load, message in [("link.yaml", textinput.load_yaml, "is a symbolic link"),
                                ("empty.json", textinput.load_json, "is empty"),
                                ("fifo.json", textinput.load_json, "is not a regular file")]:  # fmt: skip
        with pytest.raises(ValueError, match=re.escape(f"{tmp_path / name}: the input {message}")):
            load(tmp_path / name, "the input", ValueError)
