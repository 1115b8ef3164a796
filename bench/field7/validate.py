"""Check bench/field7: every labels line parses and has the shared corpus's fields plus `path` and `split`, every
path exists, every quoted evidence / collateral line is a line of its log, the split follows the repository rule
(no repository in both halves), tuning.jsonl / checking.jsonl are labels.jsonl filtered by split, every class used
outside the corpus map has words in class_map_additions.json, and no log or label carries something that looks
like a credential.

usage: python3 bench/field7/validate.py   (exit status 0 when every check passes)

Self-contained (standard library only); the split rule is bench/corpus.py's: bit 0 of sha1("owner/name").
"""
import hashlib
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS_MAP = os.path.join(HERE, "..", "..", "..", "shared", "corpus", "class_map.json")
FIELDS = ("id", "source", "failure_class", "initiating", "collateral_signatures", "root_cause", "fix",
          "confidence", "notes", "path", "split")
SECRET = re.compile(r"(ghp_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|AKIA[0-9A-Z]{16}|xox[abpr]-[A-Za-z0-9-]{10,}"
                    r"|hf_[A-Za-z0-9]{30,}|sk-[A-Za-z0-9]{20,}|-----BEGIN [A-Z ]*PRIVATE KEY-----"
                    r"|(?:password|passwd|api[_-]?key|secret|token)\s*[=:]\s*\S{6,})", re.I)


def source_repo(url):
    m = re.search(r"github\.com/([^/\s]+/[^/\s#?]+)", url)
    return m.group(1) if m else url


def half_of(repo):
    return "tuning" if int(hashlib.sha1(repo.encode()).hexdigest(), 16) % 2 == 0 else "checking"


def main(here=HERE):
    problems = []
    rows = []
    with open(os.path.join(here, "labels.jsonl")) as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                rows.append(json.loads(raw))
            except ValueError as e:
                problems.append(f"labels.jsonl:{n}: does not parse: {e}")
    ids = set()
    halves = {}
    for r in rows:
        rid = r.get("id", "?")
        for f in FIELDS:
            if f not in r:
                problems.append(f"{rid}: missing field {f}")
        if rid in ids:
            problems.append(f"{rid}: duplicate id")
        ids.add(rid)
        if r.get("confidence") not in ("low", "medium", "high"):
            problems.append(f"{rid}: confidence {r.get('confidence')!r}")
        log = os.path.join(here, r.get("path", ""))
        if not os.path.isfile(log):
            problems.append(f"{rid}: no log at {r.get('path')}")
            continue
        with open(log, encoding="utf-8") as fh:
            text = fh.read()
        lines = text.split("\n")
        if SECRET.search(text) or SECRET.search(json.dumps(r)):
            problems.append(f"{rid}: something that looks like a credential")
        ini = r.get("initiating")
        if ini is not None:
            if ini.get("rank") is None and not ini.get("host"):
                problems.append(f"{rid}: initiating names neither rank nor host (use null)")
            if ini.get("evidence") not in lines:
                problems.append(f"{rid}: initiating evidence is not a line of its log")
        for c in r.get("collateral_signatures") or []:
            if c not in lines:
                problems.append(f"{rid}: collateral signature is not a line of its log")
        repo = source_repo(r.get("source", ""))
        if r.get("split") != half_of(repo):
            problems.append(f"{rid}: split {r.get('split')} but {repo} belongs to {half_of(repo)}")
        halves.setdefault(repo, set()).add(r.get("split"))
    for repo, hs in halves.items():
        if len(hs) > 1:
            problems.append(f"{repo}: in both halves")
    for h in ("tuning", "checking"):
        with open(os.path.join(here, f"{h}.jsonl")) as fh:
            got = [json.loads(x) for x in fh if x.strip()]
        if got != [r for r in rows if r.get("split") == h]:
            problems.append(f"{h}.jsonl is not labels.jsonl filtered by split")
    with open(os.path.join(here, "class_map_additions.json")) as f:
        additions = json.load(f)
    corpus = {}
    if os.path.exists(CORPUS_MAP):
        with open(CORPUS_MAP) as f:
            corpus = json.load(f)
    for c in sorted({r.get("failure_class") for r in rows}):
        if c not in corpus and c not in additions:
            problems.append(f"class {c}: not in the corpus map nor in class_map_additions.json")
    for p in problems:
        print(p)
    print(f"{len(rows)} labels, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
