"""Check bench/field10 with bench/field5/validate.py's checks (labels parse with the corpus's fields plus `path` and
`split`, paths exist, quoted lines are lines of their log, the repository split rule, the halves' files, class
words, no credentials), run on this directory.

usage: python3 bench/field10/validate.py   (exit status 0 when every check passes)

Standard library only: the checks are field5's file, read with runpy, not copied.
"""
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    sys.exit(runpy.run_path(os.path.join(HERE, "..", "field5", "validate.py"))["main"](HERE))
