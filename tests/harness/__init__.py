"""Harness rig: scripted model servers and recording scripts for real harnesses (test tooling)."""
