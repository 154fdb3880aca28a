"""The bundled sample dataset (`sample_logs/`) and its generator, shared by tests and demos.

`python -m clawviz.samples OUT_DIR [--seed N]` rewrites OUT_DIR deterministically for a seed.
"""

from clawviz.samples.generate import PLAN, GenerationReport, generate

__all__ = ["PLAN", "GenerationReport", "generate"]
