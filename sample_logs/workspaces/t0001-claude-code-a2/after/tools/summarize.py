"""Count volunteer tasks per status: python3 tools/summarize.py data/tasks.csv [--out FILE]."""

import csv
import json
import os
import sys

STATUSES = ("todo", "in_progress", "done", "blocked")


def summarize(rows):
    by_status = {s: 0 for s in STATUSES}
    for row in rows:
        by_status[row["status"].strip()] += 1
    return {"total": len(rows), "by_status": by_status}


def main(argv):
    with open(argv[1], newline="") as f:
        stats = summarize(list(csv.DictReader(f)))
    text = json.dumps(stats, indent=2)
    if "--out" in argv:
        out = argv[argv.index("--out") + 1]
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
        with open(out, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main(sys.argv)
