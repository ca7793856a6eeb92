"""Emulated clouds on this machine, for `unumctl emulate aws|gcp` (docs/aws.md, docs/gcp.md),
`unumctl cost` and the tests.

- `unumctl.aws.emulate`: moto_server (`moto_local`, one request at a time: `moto_serialized`)
  and a local Lambda API (`local_lambda`) that runs each function's built archive through its
  Lambda handler in worker processes (`lambda_worker`), with CloudWatch Logs delivery
  (`local_logs`); `lambda_front` serves the functions Terraform created on moto.
- `unumctl.gcp.emulate`: the Firestore and Pub/Sub emulators and the GCS stand-in
  (`emulators`) and the platform that serves an app's built GCP bundles on them with
  functions-framework and push subscriptions (`platform`).

Everything binds 127.0.0.1 only. The components are optional dependencies
(`pip install 'unumctl[emulate]'`, and the Google Cloud SDK's emulators for gcp); a missing
one is reported by name with how to install it.
"""
