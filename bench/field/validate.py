"""Check bench/field/labels.jsonl (or another set's, `python bench/field/validate.py DIR`): every line parses, has
the shared corpus's fields, names a log that exists, quotes its evidence and collateral lines verbatim from that
log, and no repository sits in both splits.

usage: python bench/field/validate.py   (exit status 0 when every check passes)
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIELDS = {"id", "path", "source", "failure_class", "initiating", "collateral_signatures", "root_cause", "fix",
          "confidence", "notes", "split"}
# what a pasted credential would look like; logs must have them redacted before they are committed
SECRET = re.compile(r"(ghp_|hf_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16}|xox[bp]-|api[_-]?key\s*[:=]|password\s*[:=])", re.I)


def problems_of(lab: dict, repos: dict, here: str = HERE) -> list:
    found = []
    missing = FIELDS - set(lab)
    if missing:
        found.append(f"missing fields {sorted(missing)}")
    log = os.path.join(here, lab.get("path") or lab["id"] + ".log")
    if not os.path.exists(log):
        return [*found, f"no log at {log}"]
    with open(log, encoding="utf-8") as fh:
        text = fh.read()
    ini = lab.get("initiating") or {}
    quoted = ([ini["evidence"]] if ini.get("evidence") else []) + list(lab.get("collateral_signatures") or [])
    found += [f"not in log: {q[:60]!r}" for q in quoted if q not in text]
    if lab.get("split") not in ("tuning", "checking"):
        found.append(f"bad split {lab.get('split')!r}")
    if lab.get("confidence") not in ("high", "medium", "low"):
        found.append(f"bad confidence {lab.get('confidence')!r}")
    if SECRET.search(text):
        found.append("log contains something that looks like a credential")
    repo = "/".join(lab["source"].split("/")[3:5])
    repos.setdefault(repo, set()).add(lab.get("split"))
    return found


def main(here: str = HERE) -> int:
    repos: dict = {}
    bad = 0
    n = 0
    with open(os.path.join(here, "labels.jsonl"), encoding="utf-8") as fh:
        lines = fh.readlines()
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        n += 1
        try:
            lab = json.loads(raw)
        except json.JSONDecodeError as err:
            print(f"line {number}: does not parse: {err}")
            bad += 1
            continue
        for problem in problems_of(lab, repos, here):
            print(f"{lab.get('id')}: {problem}")
            bad += 1
    for repo, splits in repos.items():
        if len(splits) > 1:
            print(f"{repo} is in both splits")
            bad += 1
    print(f"{n} labels, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else HERE))
