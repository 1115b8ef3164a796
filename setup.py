"""The one build step pyproject.toml cannot say: the optional C extension ``catalog._linescan``, Hyperscan's line
loop against the system's libhs (Debian: libvectorscan-dev or libhyperscan-dev). Where libhs's headers are absent
the build skips it, and firstfault scans with python-hyperscan, or ``re`` (see catalog/engine.py).
FIRSTFAULT_NO_NATIVE=1 skips it on purpose."""

import os
import shutil
import subprocess
from glob import glob

from setuptools import Extension, setup


def _pkg_config(flag: str) -> list[str]:
    if shutil.which("pkg-config") is None:
        return []
    done = subprocess.run(["pkg-config", flag, "libhs"], capture_output=True, text=True, check=False)
    return done.stdout.split() if done.returncode == 0 else []


def _extensions() -> list[Extension]:
    if os.environ.get("FIRSTFAULT_NO_NATIVE"):
        return []
    includes = [f[2:] for f in _pkg_config("--cflags-only-I")] or ["/usr/include/hs"]
    lib_dirs = [f[2:] for f in _pkg_config("--libs-only-L")]
    return [Extension("catalog._linescan", ["catalog/_linescan.c"], depends=sorted(glob("catalog/_linescan*.h")),
                      include_dirs=includes, library_dirs=lib_dirs, libraries=["hs"], optional=True)]


setup(ext_modules=_extensions())
