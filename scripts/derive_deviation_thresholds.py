"""The thresholds of the deviation rules (siblings, fleet, own baseline: gpuaccept.judge.deviation) from the noise
of every recorded healthy run in tests/fixtures (gpuaccept.results.deviation_noise says how):

    .venv/bin/python scripts/derive_deviation_thresholds.py [--write]

prints the thresholds file, or with --write replaces reference_values/deviation/thresholds.yaml with it.
tests/test_deviation.py derives them again and requires the shipped file."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import yaml

from gpuaccept.atomic import write_text_atomic
from gpuaccept.judge import deviation
from gpuaccept.results import deviation_noise

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "python scripts/derive_deviation_thresholds.py --write"
HEADER = ("# The deviation rules' thresholds (gpuaccept.judge.deviation), derived from the noise of the recorded "
          "healthy runs\n# by scripts/derive_deviation_thresholds.py; do not edit by hand (tests/test_deviation.py "
          "derives them again).\n")  # fmt: skip


def derive(fixtures: Path, reference_dir: Path) -> str:
    """The thresholds file's text."""
    with tempfile.TemporaryDirectory(prefix="gpuaccept-noise-") as tmp:
        runs = deviation_noise.recorded(fixtures, Path(tmp))
        names = {str(path): name for path, name in runs}
        healthy, _notes = deviation_noise.healthy_runs([p for p, _ in runs], reference_dir)
        noise = deviation_noise.measure(healthy)
        used = sorted(names[str(h.run)] for h in healthy)
    doc = deviation_noise.thresholds_doc(noise, used, COMMAND)
    return HEADER + yaml.dump(doc, Dumper=_Indented, sort_keys=False, width=120)


class _Indented(yaml.SafeDumper):
    """PyYAML's safe dumper with a list indented under its key, as yamllint's default rules (and ansible-lint's)
    expect of every YAML file in the repository."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="replace the shipped thresholds file")
    args = ap.parse_args()
    text = derive(ROOT / "tests" / "fixtures", ROOT / "reference_values")
    if args.write:
        print(f"wrote {write_text_atomic(ROOT / 'reference_values' / deviation.THRESHOLDS_FILE, text)}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
