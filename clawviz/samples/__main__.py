"""python -m clawviz.samples OUT_DIR [--seed N]: regenerate the sample dataset."""

from __future__ import annotations

import argparse

from clawviz.samples.generate import generate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m clawviz.samples", description=__doc__)
    parser.add_argument("out_dir", help="folder to (re)write, e.g. sample_logs")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = parser.parse_args(argv)
    report = generate(args.out_dir, seed=args.seed)
    print(
        f"wrote {report.n_episodes} episodes, {report.n_calls} calls, {report.n_bad_lines} bad "
        f"lines, {report.total_bytes / 1e6:.2f} MB to {report.out_dir}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
