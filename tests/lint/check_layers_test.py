#!/usr/bin/env python3
"""Self-test of scripts/check-layers.py: it passes a tree that follows the layering and fails,
naming file and line, on a tree that breaks it.

Usage: check_layers_test.py PATH/TO/check-layers.py
"""

import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = None


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def run(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, SCRIPT, str(root)], capture_output=True, text=True, check=False)


class CheckLayersTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="troupe-layers-")
        self.root = Path(self._tmp.name)
        # A tree that follows every rule.
        write(self.root, "include/troupe/core/actor.hpp", "#pragma once\n#include <vector>\n")
        write(self.root, "include/troupe/core/system.hpp", '#pragma once\n#include "troupe/core/actor.hpp"\n')
        write(self.root, "include/troupe/sharding/region.hpp", "#pragma once\n#include <troupe/core/actor.hpp>\n")
        write(self.root, "src/sharding/region.cpp",
              "#include <troupe/sharding/region.hpp>\n#include <troupe/core/system.hpp>\n")
        write(self.root, "src/cluster/node.cpp", "#  include <troupe/persistence/journal.hpp>\n")
        write(self.root, "include/troupe/testkit/probe.hpp", "#pragma once\n#include <troupe/core/actor.hpp>\n")
        write(self.root, "tests/sharding/region_test.cpp",
              "#include <troupe/testkit/probe.hpp>\n#include <troupe/cluster/node.hpp>\n")

    def tearDown(self):
        self._tmp.cleanup()

    def test_accepts_a_tree_that_follows_the_layers(self):
        result = run(self.root)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("0 violation", result.stdout)

    def test_rejects_a_lower_layer_including_a_higher_one(self):
        write(self.root, "include/troupe/core/bad.hpp", "#pragma once\n\n#include <troupe/sharding/region.hpp>\n")
        result = run(self.root)
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("include/troupe/core/bad.hpp:3:", result.stdout)

    def test_lets_tools_include_any_layer_but_not_the_testkit(self):
        write(self.root, "tools/ctl/main.cpp", "#include <troupe/cluster/node.hpp>\n")
        self.assertEqual(run(self.root).returncode, 0)
        write(self.root, "tools/ctl/bad.cpp", "#include <troupe/core/actor.hpp>\n#include <troupe/testkit/probe.hpp>\n")
        result = run(self.root)
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("tools/ctl/bad.cpp:2:", result.stdout)

    def test_rejects_library_code_including_the_testkit(self):
        write(self.root, "src/persistence/journal.cpp", '#include "troupe/testkit/probe.hpp"\n')
        result = run(self.root)
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("src/persistence/journal.cpp:1:", result.stdout)
        self.assertIn("testkit", result.stdout)

    def test_rejects_the_testkit_including_a_layer_above_core(self):
        write(self.root, "include/troupe/testkit/cluster.hpp", "#include <troupe/cluster/node.hpp>\n")
        result = run(self.root)
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("include/troupe/testkit/cluster.hpp:1:", result.stdout)

    def test_rejects_a_public_header_including_a_private_one(self):
        write(self.root, "src/core/mailbox_impl.hpp", "#pragma once\n")
        write(self.root, "include/troupe/core/mailbox.hpp", '#pragma once\n#include "core/mailbox_impl.hpp"\n')
        result = run(self.root)
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("include/troupe/core/mailbox.hpp:2:", result.stdout)

    def test_reports_every_violation(self):
        write(self.root, "src/core/a.cpp",
              "#include <troupe/cluster/x.hpp>\n#include <troupe/observability/y.hpp>\n")
        result = run(self.root)
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("src/core/a.cpp:1:", result.stdout)
        self.assertIn("src/core/a.cpp:2:", result.stdout)
        self.assertIn("2 violation", result.stdout)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip())
    SCRIPT = sys.argv.pop(1)
    unittest.main(verbosity=2)
