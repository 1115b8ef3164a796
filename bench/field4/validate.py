"""Check bench/field4/labels.jsonl with bench/field's checks (bench/field/validate.py): every line parses, has the
shared corpus's fields, names a log that exists, quotes its evidence verbatim, no repository in both splits.

usage: python bench/field4/validate.py   (exit status 0 when every check passes)
"""
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    checks = runpy.run_path(os.path.join(HERE, "..", "field", "validate.py"))
    sys.exit(checks["main"](HERE))
