"""Shared by every suite: the private world (harness), the machine, the code snapshot, and
the blocks of docs/benchmarks.md."""
