"""Warehouse restock helper: python3 src/inventory.py data/stock.txt."""

import sys


def parse_line(line):
    sku, qty, threshold = line.split(",")
    return sku, int(qty), int(threshold)


def needs_restock(qty, threshold):
    return qty < threshold


def restock_list(lines):
    out = []
    for line in lines:
        sku, qty, threshold = parse_line(line)
        if needs_restock(qty, threshold):
            out.append(sku)
    return out


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        print("\n".join(restock_list(f.read().splitlines())))
