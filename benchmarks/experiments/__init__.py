"""Benchmarks whose question is answered: each still runs (`python -m benchmarks.experiments.NAME`)
and is tested at a tiny size, and its committed result names this command; they live here so that
`benchmarks/` lists what a user would run. What each found: docs/experiments.md."""
