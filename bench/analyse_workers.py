"""`analyse --workers 2` vs 1 after a settings change: `bench/ingest_workers.py --only analyse`.

python3 bench/analyse_workers.py [--rounds 3] [--mb 200]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ingest_workers  # noqa: E402

if __name__ == "__main__":
    sys.argv[1:1] = ["--only", "analyse"]
    ingest_workers.main()
