"""clawviz: rebuild, prune and inspect agent-harness RL episodes from proxy logs."""

__version__ = "0.1.0"
