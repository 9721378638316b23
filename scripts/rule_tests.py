#!/usr/bin/env python3
"""Which engine-bound rules lack a rule-named Catch2 test (issues 4 and 5, "Done when").

A rule counts as tested when some TEST_CASE / SCENARIO name under tests/ starts with its ID
(several IDs may lead a name: "EMIT-06 EMIT-07 a token is one-shot ..."). Usage:
  scripts/rule_tests.py [--binds E] [--areas FRAME,RPC,...] [--spec ../shared/spec/RULES.md]
Prints the untested rules, one per line, and exits 1 when there is any (0 otherwise).
"""
import argparse, pathlib, re, sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

def rules(spec, binds, areas):
    for line in spec.read_text(encoding="utf-8").splitlines():
        if not re.match(r"\|\s*[A-Z]+-\d\d\s*\|", line):
            continue
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        rid, lvl, text, who = cols[0], cols[1], cols[2], cols[3]
        if areas and rid.split("-")[0] not in areas:
            continue
        if binds and not any(b in who.replace(" ", "").split(",") for b in binds):
            continue
        yield rid, lvl, text

def tested_ids():
    ids = set()
    name = re.compile(r'(?:TEST_CASE|SCENARIO|TEMPLATE_TEST_CASE)\s*\(\s*"([^"]*)"')
    for f in (ROOT / "tests").rglob("*.cpp"):
        for m in name.finditer(f.read_text(encoding="utf-8", errors="replace")):
            for tok in m.group(1).replace("/", " ").replace(",", " ").split():
                if re.fullmatch(r"[A-Z]+-\d\d", tok):
                    ids.add(tok)
                else:
                    break  # only the leading IDs name the rules a test covers
    return ids

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binds", default="E", help="comma list of Binds letters (E, P, S); empty = all")
    ap.add_argument("--areas", default="", help="comma list of areas, e.g. FRAME,RPC")
    ap.add_argument("--spec", default=str(ROOT.parent / "shared" / "spec" / "RULES.md"))
    ap.add_argument("--skip-unobservable", action="store_true", help="ignore nothing (kept for symmetry)")
    a = ap.parse_args()
    binds = [b for b in a.binds.split(",") if b]
    areas = set(x for x in a.areas.split(",") if x)
    have = tested_ids()
    missing = [(r, l, t) for r, l, t in rules(pathlib.Path(a.spec), binds, areas) if r not in have]
    for r, l, t in missing:
        print(f"{r} {l} {t[:110]}")
    total = sum(1 for _ in rules(pathlib.Path(a.spec), binds, areas))
    print(f"{total - len(missing)}/{total} rules have a rule-named test", file=sys.stderr)
    return 1 if missing else 0

if __name__ == "__main__":
    sys.exit(main())
