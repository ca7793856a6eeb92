"""Test harnesses for unumctl: what tests, benchmarks and tools run the product against on
this machine, in one package that tests/, bench/ and tools/ import (pytest's own glue, the
conftest.py fixtures and the egress guard, stays in tests/). Not part of the `unumctl`
product package: no module of `unumctl/` or `runtime/` imports this package or runs it as a
program (tests/repo/test_layering.py enforces both).

- `unumctl_testing.aws`: IAM on moto (`iam`: enforcement, the execution roles' policies as
  iam.tf renders them, the call check) and the function specs the emulated Lambda runs from
  without Terraform, each signing as its role (`deployment`). The emulators themselves
  (moto_server, the local Lambda API, the Google emulators and the platform that serves GCP
  bundles) and the measured run of `unumctl cost` are product code in `unumctl.emulate` and
  `unumctl.cost`, which the tests use as users do.
- `unumctl_testing.conformance`: the datastore conformance suite every `runtime.ports.Datastore`
  passes (`datastore_suite`), adversarial reads (`adversarial`), wire meters (`meters`).
- `unumctl_testing.apps`: the examples (discovery, expected outputs) and tiny apps written to disk.
- `unumctl_testing.callback_apps`: the timeout, heartbeat and callback apps of the local target.
- `unumctl_testing.asl_corpus`: the public ASL corpus runner (tools/asl_corpus_stats.py).
- `unumctl_testing.asl_conformance`: the local executor of tools/asl_conformance.py.
- `unumctl_testing.emulate_cli`: `unumctl emulate` started and stopped as a user does.

Faults injected by these harnesses follow the one fault model in runtime/faults.py.
"""
