"""Compares the documents of the native tools before and after the skeleton (device_skeleton.sh): for each tool,
the document's keys (every path), its verification, and each metric's value (new over old).
Usage: python3 compare_skeleton.py OLD_DIR NEW_DIR"""

import json
import sys
from pathlib import Path


def paths(doc, prefix=""):
    out = set()
    if isinstance(doc, dict):
        for key, value in doc.items():
            out.add(f"{prefix}/{key}")
            out |= paths(value, f"{prefix}/{key}")
    elif isinstance(doc, list) and doc and isinstance(doc[0], dict):
        out |= paths(doc[0], f"{prefix}[]")
    return out


old_dir, new_dir = Path(sys.argv[1]), Path(sys.argv[2])
for new_file in sorted(new_dir.glob("*.json")):
    old_file = old_dir / new_file.name
    old, new = json.loads(old_file.read_text()), json.loads(new_file.read_text())
    only_old, only_new = paths(old) - paths(new), paths(new) - paths(old)
    print(f"== {new_file.stem}: verification old {old['verification']} / new {new['verification']}")
    print(f"   keys only in old: {sorted(only_old) or 'none'}; only in new: {sorted(only_new) or 'none'}")
    for name, metric in sorted(new.get("metrics", {}).items()):
        before = old.get("metrics", {}).get(name, {}).get("value")
        value = metric.get("value")
        ratio = f"{value / before:.3f}" if isinstance(before, (int, float)) and before else "-"
        print(f"   {name:40s} old {before!s:>14} new {value!s:>14} new/old {ratio}")
