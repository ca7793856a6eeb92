"""AWS harnesses: the emulated Lambda (local_lambda, lambda_worker, local_logs) and the
deployment it runs from without Terraform (deployment)."""
