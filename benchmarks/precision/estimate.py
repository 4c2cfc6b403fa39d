"""Estimate precision of a later commit from an earlier review's verdicts.

    python benchmarks/precision/estimate.py VERDICTS.tsv FINDINGS_DIR [--slugs a,b,c]

FINDINGS_DIR holds one `<slug>.json` per repository, written from the repository's root by
`torchperf-lint . --no-cache --exit-zero --output-format json`. VERDICTS.tsv is a review's
table (columns slug, path, line, code, verdict; `line` may read `12 (cell 3)`). For each rule,
the share of TRUE (and FALSE) among the judged findings still present is applied to the rule's
current count; the judged findings that are gone are counted by verdict (a TRUE among them is
a lost true positive). Rules whose judged findings are all gone are printed without an
estimate and left out of the total. An estimate, not a review: findings added since the review
have no verdict, and a new sample should be judged before a number is claimed as measured.
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
import re
from pathlib import Path


def current_findings(directory: Path, slugs: list[str]) -> dict[str, set[tuple[str, int, str]]]:
    found: dict[str, set[tuple[str, int, str]]] = {}
    for slug in slugs:
        keys = set()
        for finding in json.loads((directory / f"{slug}.json").read_text(encoding="utf-8")):
            if finding["code"].startswith("TPL"):
                path = finding["filename"].removeprefix("./")
                keys.add((path, finding["location"]["row"], finding["code"]))
        found[slug] = keys
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("verdicts", type=Path)
    parser.add_argument("findings", type=Path)
    parser.add_argument("--slugs", help="comma-separated; default: every <slug>.json there")
    args = parser.parse_args()
    slugs = (
        args.slugs.split(",") if args.slugs else sorted(p.stem for p in args.findings.glob("*.json"))
    )
    found = current_findings(args.findings, slugs)
    counts = collections.Counter(code for keys in found.values() for _, _, code in keys)
    judged: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    gone: collections.Counter = collections.Counter()
    with open(args.verdicts, encoding="utf-8", newline="") as stream:
        for row in csv.DictReader(stream, delimiter="\t"):
            if row["slug"] not in found:
                continue
            line = int(re.match(r"\d+", row["line"]).group())
            if (row["path"], line, row["code"]) in found[row["slug"]]:
                judged[row["code"]][row["verdict"]] += 1
            else:
                gone[(row["code"], row["verdict"])] += 1
    print(f"{'rule':8} {'now':>5}  {'judged T/N/F':>14}  {'est. TRUE':>9}  {'est. FALSE':>10}")
    total = estimated_true = estimated_false = 0.0
    for code in sorted(counts):
        verdicts = judged[code]
        share = sum(verdicts.values())
        tally = f"{verdicts['TRUE']}/{verdicts['NOISE']}/{verdicts['FALSE']}"
        if not share:
            print(f"{code:8} {counts[code]:5}  {tally:>14}  {'-':>9}  {'-':>10}  (no judged finding left)")
            continue
        true, false = counts[code] * verdicts["TRUE"] / share, counts[code] * verdicts["FALSE"] / share
        total += counts[code]
        estimated_true += true
        estimated_false += false
        print(f"{code:8} {counts[code]:5}  {tally:>14}  {true:9.1f}  {false:10.1f}")
    print(
        f"estimated over {total:.0f} findings: TRUE {estimated_true / total:.1%}, "
        f"FALSE {estimated_false / total:.1%}"
    )
    print("judged findings gone:", ", ".join(f"{c} {v}: {n}" for (c, v), n in sorted(gone.items())))


if __name__ == "__main__":
    main()
