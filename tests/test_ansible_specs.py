"""Every role's defaults/main.yml and meta/argument_specs.yml describe the same variables.

For each role under roles/: the keys of defaults/main.yml are the options of the ``main`` entry point of
meta/argument_specs.yml; each option has a description, a type (and its default's value fits the choices,
where there are choices) and a default equal to the value in defaults/main.yml; every variable is prefixed
with the role's name. No Ansible run is needed: the files are compared as YAML.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
ROLES_DIR = ROOT / "roles"
ROLES = sorted(p.name for p in ROLES_DIR.iterdir() if (p / "tasks" / "main.yml").is_file())
# The option types ansible-core's argument spec validation knows.
TYPES = {"str", "list", "dict", "bool", "int", "float", "path", "raw", "jsonarg", "json", "bytes", "bits"}


def _load(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AssertionError(f"{path}: missing") from None


def spec_problems(role_dir: Path) -> list[str]:
    """What is wrong between a role's defaults and its argument specs; empty when they agree."""
    role = role_dir.name
    defaults_path = role_dir / "defaults" / "main.yml"
    specs_path = role_dir / "meta" / "argument_specs.yml"
    defaults = _load(defaults_path) or {}
    specs = _load(specs_path) or {}
    if not isinstance(defaults, dict):
        return [f"{defaults_path}: not a mapping of variables"]
    try:
        options = specs["argument_specs"]["main"]["options"] or {}
    except (KeyError, TypeError):
        return [f"{specs_path}: no argument_specs.main.options"]

    problems = []
    for name in sorted(set(defaults) | set(options)):
        if not name.startswith(f"{role}_"):
            where = defaults_path if name in defaults else specs_path
            problems.append(f"{where}: {name}: not prefixed with the role's name {role}_")
    for name in sorted(set(defaults) - set(options)):
        problems.append(f"{specs_path}: {name} is in defaults/main.yml but has no option")
    for name in sorted(set(options) - set(defaults)):
        problems.append(f"{defaults_path}: option {name} of argument_specs.yml has no default here")
    for name in sorted(set(defaults) & set(options)):
        option = options[name] or {}
        where = f"{specs_path}: {name}"
        if not option.get("description"):
            problems.append(f"{where}: no description")
        if option.get("type") not in TYPES:
            problems.append(f"{where}: type {option.get('type')!r} is not one of {', '.join(sorted(TYPES))}")
        if "default" not in option:
            problems.append(f"{where}: no default (defaults/main.yml has {defaults[name]!r})")
        elif option["default"] != defaults[name]:
            problems.append(
                f"{where}: default {option['default']!r} differs from defaults/main.yml's {defaults[name]!r}"
            )
        if "choices" in option and defaults[name] not in option["choices"]:
            problems.append(f"{where}: default {defaults[name]!r} is not one of the choices {option['choices']}")
    return problems


def test_there_are_roles():
    assert ROLES, f"no roles found under {ROLES_DIR}"


@pytest.mark.parametrize("role", ROLES)
def test_defaults_match_argument_specs(role: str):
    problems = spec_problems(ROLES_DIR / role)
    assert not problems, "\n".join(problems)


def _write_role(root: Path, name: str, defaults: str, specs: str) -> Path:
    role = root / name
    (role / "defaults").mkdir(parents=True)
    (role / "meta").mkdir()
    (role / "defaults" / "main.yml").write_text(defaults, encoding="utf-8")
    (role / "meta" / "argument_specs.yml").write_text(specs, encoding="utf-8")
    return role


AGREEING_SPECS = """\
argument_specs:
  main:
    short_description: A role.
    options:
      demo_port:
        description: The port.
        type: int
        default: 9100
      demo_mode:
        description: The mode.
        type: str
        choices: [fast, slow]
        default: fast
"""


def test_agreeing_pair_has_no_problems(tmp_path: Path):
    role = _write_role(tmp_path, "demo", "demo_port: 9100\ndemo_mode: fast\n", AGREEING_SPECS)
    assert spec_problems(role) == []


def test_drift_is_caught(tmp_path: Path):
    defaults = (
        "demo_port: 9200\n"  # default changed here, not in the specs
        "demo_mode: medium\n"  # not one of the choices
        "demo_extra: true\n"  # added here, not in the specs
        "port: 1\n"  # not prefixed with the role's name
    )
    specs = AGREEING_SPECS + (
        "      demo_gone:\n"  # still in the specs, removed from defaults
        "        description: Removed from defaults.\n"
        "        type: str\n"
        "        default: x\n"
        "      demo_port2:\n"  # no description, a bad type, no default
        "        type: integer\n"
    )
    defaults += "demo_port2: 1\n"
    problems = "\n".join(spec_problems(_write_role(tmp_path, "demo", defaults, specs)))
    assert "demo_port: default 9100 differs from defaults/main.yml's 9200" in problems
    assert "demo_mode: default 'medium' is not one of the choices" in problems
    assert "demo_extra is in defaults/main.yml but has no option" in problems
    assert "option demo_gone of argument_specs.yml has no default here" in problems
    assert "port: not prefixed with the role's name demo_" in problems
    assert "demo_port2: no description" in problems
    assert "demo_port2: type 'integer' is not one of" in problems
    assert "demo_port2: no default" in problems
