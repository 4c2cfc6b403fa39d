"""Recall on labelled real training programs: which labelled anti-patterns the linter reports.

    python benchmarks/recall.py CORPUS_DIR [--linter torchperf-lint] [--misses] [--json OUT]

The labels (benchmarks/recall/labels/<slug>.tsv, one row per instance: path, line, code,
class, note) were written by reading each program before running any linter on it
(../shared/REVIEW.md, "Recall"). benchmarks/recall/repos.tsv names each repository's commit
and the files of its programs. Each repository is linted as a user would, from its root
(`torchperf-lint . --select <codes>`), with the default rules for the default labels and with
every labelled opt-in code for the opt-in ones. A label is found when a finding has its code
on its line in its file, or a finding of that code names that line in its call path (its
`related` locations: a sync in a helper is reported at the helper, once, with the per-step
call that reaches it). Recall is printed per class (sure / judgement / cross-function), per
code and per repository. Repositories are read from CORPUS_DIR/<slug>, never written.
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent / "recall"


def default_codes() -> set[str]:
    from torchperf_lint.rules import ALL_RULES

    return {rule.code for rule in ALL_RULES if rule.default}


def read_labels() -> dict[str, list[dict[str, str]]]:
    labels = {}
    for path in sorted((HERE / "labels").glob("*.tsv")):
        with open(path, encoding="utf-8", newline="") as stream:
            labels[path.stem] = list(csv.DictReader(stream, delimiter="\t"))
    return labels


def findings(linter: str, repository: Path, codes: set[str]) -> set[tuple[str, int, str]]:
    completed = subprocess.run(
        [linter, ".", "--no-cache", "--exit-zero", "--output-format", "json",
         "--select", ",".join(sorted(codes))],
        cwd=repository, capture_output=True, text=True, check=False,
    )
    if completed.returncode != 0:
        raise SystemExit(f"{linter} failed on {repository}: {completed.stderr[-2000:]}")
    found = set()
    for d in json.loads(completed.stdout):
        found.add((Path(d["filename"]).as_posix(), d["location"]["row"], d["code"]))
        # A sync in a helper is reported once, at the helper, with the per-step calls that
        # reach it as related locations: a label on such a call is that finding.
        for related in d.get("related") or ():
            found.add((Path(related["filename"]).as_posix(), related["location"]["row"], d["code"]))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--linter", default="torchperf-lint")
    parser.add_argument("--misses", action="store_true", help="list every label not found")
    parser.add_argument("--json", type=Path, help="write every label with its verdict here")
    arguments = parser.parse_args()
    defaults = default_codes()
    totals: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    verdicts = []
    for slug, rows in read_labels().items():
        repository = arguments.corpus / slug
        labelled = {row["code"] for row in rows}
        found = findings(arguments.linter, repository, defaults | labelled)
        for row in rows:
            key = (Path(row["path"]).as_posix(), int(row["line"]), row["code"])
            hit = key in found
            group = "default" if row["code"] in defaults else "opt-in"
            for bucket in (("class", row["class"]), ("code", row["code"]), ("repo", slug)):
                totals[(group, *bucket)]["found" if hit else "missed"] += 1
            verdicts.append({**row, "slug": slug, "found": hit})
            if arguments.misses and not hit:
                print(f"MISS {slug}/{row['path']}:{row['line']} {row['code']} "
                      f"[{row['class']}] {row['note']}")
    for group in ("default", "opt-in"):
        print(f"\n## {group} rules")
        for kind in ("class", "code", "repo"):
            rows = sorted(key for key in totals if key[0] == group and key[1] == kind)
            for key in rows:
                counts = totals[key]
                total = counts["found"] + counts["missed"]
                print(f"{kind:6} {key[2]:28} {counts['found']:3}/{total:<3} "
                      f"{100 * counts['found'] / total:5.1f} %")
            if kind == "class":
                found = sum(totals[key]["found"] for key in rows)
                total = found + sum(totals[key]["missed"] for key in rows)
                if total:
                    print(f"{'all':6} {'':28} {found:3}/{total:<3} {100 * found / total:5.1f} %")
    if arguments.json:
        arguments.json.write_text(json.dumps(verdicts, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
