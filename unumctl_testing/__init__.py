"""Test harnesses for unumctl: what tests, benchmarks and tools run the product against on
this machine. Not part of the `unumctl` product package: no module of `unumctl/` or
`runtime/` imports this package (tests/test_layering.py enforces it).

- `unumctl_testing.aws`: the datastore and function specs the emulated Lambda runs from
  without Terraform (`deployment`). The emulators themselves (moto_server, the local Lambda
  API, the Google emulators and the platform that serves GCP bundles) are product code in
  `unumctl.emulate` (the `unumctl emulate` command), which the tests use as users do.
- `unumctl_testing.asl_conformance`: the local executor of tools/asl_conformance.py.

Faults injected by these harnesses follow the one fault model in runtime/faults.py.
"""
