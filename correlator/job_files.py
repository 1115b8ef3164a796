"""A batch job's own output file, named by the scheduler after the job: its name is the job's, never a host's. Pure.

A job's stdout file holds every task's lines, so the name it is saved under says which job it was, not which
machine printed them; read as a host, it becomes a suspect no scheduler knows (`flux-ƒ4o7pr7YYS5S`, `sft-8b`).
Schedulers' default names:
- Flux: `flux batch` writes `flux-{{id}}.out` (flux-framework/flux-core src/cmd/flux-batch.py: `jobspec.stdout =
  "flux-{{id}}.out"` unless --output is given; doc/man1/flux-batch.rst), the id in F58 by default: `ƒ` then
  base58 digits, `f` in its place where the locale cannot print it or FLUX_F58_FORCE_ASCII is set (src/common/
  libutil/fluid.c); the other encodings a template may ask for are `dec`, `hex` (0x...), `dothex` (four
  dot-joined groups of four hex digits) and `words` (six words joined by hyphens, `airline-alibi-index--tuna-
  maximum-adam`).
- PBS Pro / OpenPBS and Torque: `<job name>.o<sequence number>` and `.e<sequence number>` (qsub(1B), "-o path":
  the default output file name; an array job's subjob adds `.<index>`), as Grid Engine names its own
  `<job name>.o<job id>` (qsub(1), "-o"). The sequence number is the job id's numeric part.
- Slurm's `slurm-<job id>.out` and sbatch's `%j` patterns are read in correlator/speakers.py (_JOB_ID_TAIL).
"""

from __future__ import annotations

import re

# the base58 digits of F58 (flux-core src/common/libutil/fluid.c: no 0, O, I or l)
_F58 = r"[ƒf][1-9A-HJ-NP-Za-km-z]{1,13}"
_FLUX_ID = rf"(?:{_F58}|\d{{1,20}}|0x[0-9a-f]{{1,16}}|[0-9a-f]{{4}}(?:\.[0-9a-f]{{4}}){{3}}|[a-z]+(?:--?[a-z]+){{5}})"
_FLUX_OUTPUT = re.compile(rf"^flux-{_FLUX_ID}\.(?:out|err|log)$")
# <job name>.o<seq> / .e<seq>, an array subjob's .<index> after it; a name with a further extension (.log) was
# named by someone, not by the scheduler, and is left alone
_PBS_OUTPUT = re.compile(r"^[^./][^/]*\.[oe]\d{1,12}(?:\.\d{1,7})?$")


def is_job_output(name: str) -> bool:
    """Whether a file's name (no folders) is one a scheduler gives a batch job's output by default."""
    return bool(_FLUX_OUTPUT.match(name) or _PBS_OUTPUT.match(name))
