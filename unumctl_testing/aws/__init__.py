"""AWS harness: the deployment the emulated Lambda (unumctl/aws/emulate/) runs from without
Terraform (deployment)."""
