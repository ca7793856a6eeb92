"""Test harnesses for unumctl: what tests, benchmarks and tools run the product against on
this machine. Not part of the `unumctl` product package: no module of `unumctl/` or
`runtime/` imports this package (tests/test_layering.py enforces it).

- `unumctl_testing.aws`: a local stand-in for Lambda's Invoke API (`local_lambda`) with its
  execution environment (`lambda_worker`) and CloudWatch Logs forwarding (`local_logs`), and
  the datastore and function specs it runs from without Terraform (`deployment`).
- `unumctl_testing.gcp`: the emulator launcher (`emulators`) and the emulated platform that
  runs built GCP bundles on them (`platform`).
- `unumctl_testing.asl_conformance`: the local executor of tools/asl_conformance.py.

Faults injected by these harnesses follow the one fault model in runtime/faults.py.
"""
