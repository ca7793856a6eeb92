"""AWS harness: the deployment the emulated Lambda (unumctl/emulate/aws/) runs from without
Terraform (deployment)."""
