"""Systematic interleaving explorer for the Unum runtime (issue 8, docs/explorer.md).

Not shipped: it lives under tools/ and is run by `python tools/explore.py`. Modules, one
concept each: memstore (in-memory ports), scheduler (world, executions, actions),
platforms (the redelivery delays each platform promises), stepped
(ports that make each call one step), adapters (the one place that builds Engines),
harness (one schedule), invariants (checks a-e), search (bounded enumeration with sleep
sets), classify (bug classes), broken (deliberately broken datastores), workflows/, cli.
"""
