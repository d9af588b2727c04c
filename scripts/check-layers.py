#!/usr/bin/env python3
"""Checks that troupe's layers include only the layers below them.

Layers, lowest first: core < sharding < persistence < cluster < observability (shared/DESIGN.md).
A file in include/troupe/<layer>/ or src/<layer>/ may include troupe/<other>/ only when <other> is
the same layer or a lower one. The testkit (include/troupe/testkit/, src/testkit/) may include
core; library code must never include the testkit, which is for tests only. The command-line
tools (tools/) sit above every layer: they may include any layer, never the testkit. Public headers
must not include private headers from src/.

Usage: check-layers.py [ROOT]     ROOT defaults to the repository holding this script.
Prints one `file:line: message` per violation and exits 1 if there is any.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

LAYERS = ["core", "sharding", "persistence", "cluster", "observability"]
TESTKIT = "testkit"
# What the testkit may include besides itself. Widen when it grows (an in-process cluster
# needs cluster), but never let a layer include the testkit.
TESTKIT_MAY_INCLUDE = {"core"}
# tools/ (troupectl) is a client of the layers, not one of them.
TOOLS = "tools"

SOURCE_SUFFIXES = {".hpp", ".cpp", ".ipp", ".h", ".cc", ".hh"}
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def allowed_targets(owner: str) -> set[str]:
    """Top-level folders under troupe/ that files of `owner` may include."""
    if owner == TESTKIT:
        return {TESTKIT} | TESTKIT_MAY_INCLUDE
    if owner == TOOLS:
        return set(LAYERS)
    return set(LAYERS[: LAYERS.index(owner) + 1])


def scanned_files(root: Path):
    """Yields (file, owning layer, is_public) for every file the check covers."""
    for owner in LAYERS + [TESTKIT]:
        for base, public in ((root / "include" / "troupe" / owner, True), (root / "src" / owner, False)):
            if not base.is_dir():
                continue
            for path in sorted(base.rglob("*")):
                if path.is_file() and path.suffix in SOURCE_SUFFIXES:
                    yield path, owner, public
    if (root / TOOLS).is_dir():
        for path in sorted((root / TOOLS).rglob("*")):
            if path.is_file() and path.suffix in SOURCE_SUFFIXES:
                yield path, TOOLS, False


def check_file(root: Path, path: Path, owner: str, public: bool) -> list[str]:
    problems = []
    allowed = allowed_targets(owner)
    rel = path.relative_to(root)
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as err:
        return [f"{rel}:1: cannot read: {err}"]
    for number, line in enumerate(lines, start=1):
        match = INCLUDE_RE.match(line)
        if not match:
            continue
        quote, header = match.groups()
        where = f"{rel}:{number}"
        parts = header.split("/")
        if parts[0] == "troupe" and len(parts) > 2:
            target = parts[1]
            if target == TESTKIT and owner != TESTKIT:
                problems.append(f"{where}: {owner} includes <{header}>: only tests may use the testkit")
            elif target not in LAYERS and target != TESTKIT:
                problems.append(f"{where}: <{header}> is in no known layer ({', '.join(LAYERS)}, {TESTKIT})")
            elif target not in allowed:
                problems.append(
                    f"{where}: {owner} includes <{header}>, but {owner} may include only "
                    f"{', '.join(sorted(allowed, key=_order))}"
                )
        elif public and quote == '"' and parts[0] != "troupe":
            # A quoted include that does not resolve next to the public header but does under
            # src/ is a private header leaking into the installed API.
            if not (path.parent / header).exists() and (root / "src" / header).exists():
                problems.append(f"{where}: public header includes private header src/{header}")
    return problems


def _order(layer: str) -> int:
    return LAYERS.index(layer) if layer in LAYERS else len(LAYERS)


def main(argv: list[str]) -> int:
    if len(argv) > 2 or (len(argv) == 2 and argv[1] in ("-h", "--help")):
        print(__doc__.strip())
        return 2 if len(argv) > 2 else 0
    root = Path(argv[1]) if len(argv) == 2 else Path(__file__).resolve().parent.parent
    if not root.is_dir():
        print(f"check-layers: {root} is not a directory", file=sys.stderr)
        return 2
    root = root.resolve()
    count = 0
    problems: list[str] = []
    for path, owner, public in scanned_files(root):
        count += 1
        problems.extend(check_file(root, path, owner, public))
    for problem in problems:
        print(problem)
    print(f"check-layers: {count} files, {len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
