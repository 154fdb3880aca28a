"""Checker for task_0002: python3 check.py [WORKSPACE] (default: the current directory).

Prints a JSON object of 6 named sub-scores, each 0.0 or 1.0.
"""

import csv
import json
import sys
from pathlib import Path


def _expected(ws):
    by_region, by_product = {}, {}
    with open(ws / "data" / "sales.csv", newline="") as f:
        for row in csv.DictReader(f):
            revenue = int(row["units"]) * float(row["unit_price"])
            by_region[row["region"]] = by_region.get(row["region"], 0.0) + revenue
            by_product[row["product"]] = by_product.get(row["product"], 0.0) + revenue
    total = round(sum(by_region.values()), 2)
    top = max(by_product, key=by_product.get)
    return total, {k: round(v, 2) for k, v in by_region.items()}, top


def check(ws):
    scores = {
        "summary_exists": 0.0,
        "total_revenue": 0.0,
        "revenue_by_region": 0.0,
        "top_product": 0.0,
        "report_table": 0.0,
        "report_names_top_product": 0.0,
    }
    total, by_region, top = _expected(ws)
    try:
        summary = json.loads((ws / "output" / "summary.json").read_text())
        scores["summary_exists"] = 1.0
    except (OSError, ValueError):
        summary = None
    if isinstance(summary, dict):
        got_total = summary.get("total_revenue")
        scores["total_revenue"] = float(
            isinstance(got_total, (int, float)) and abs(got_total - total) < 0.01
        )
        got = summary.get("revenue_by_region") or {}
        scores["revenue_by_region"] = float(
            isinstance(got, dict)
            and set(got) == set(by_region)
            and all(abs(float(got[k]) - v) < 0.01 for k, v in by_region.items())
        )
        scores["top_product"] = float(summary.get("top_product") == top)
    try:
        report = (ws / "output" / "report.md").read_text()
    except OSError:
        report = ""
    rows = [ln for ln in report.splitlines() if ln.strip().startswith("|")]
    scores["report_table"] = float(
        len(rows) >= 2 + len(by_region) and all(r in report for r in by_region)
    )
    scores["report_names_top_product"] = float(top in report)
    return scores


if __name__ == "__main__":
    workspace = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()
    print(json.dumps(check(workspace), sort_keys=True))
