# The datastore of an app named "demo": table unum-demo, bucket unum-demo-<suffix>, blobs
# under s/ kept 8 days. `terraform init && terraform apply` in this directory creates them.

terraform {
  required_version = ">= 1.5"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.100"
    }
  }
}

provider "aws" {
  region = "us-east-1"
}

module "datastore" {
  source = "../.."

  table_name       = "unum-demo"
  bucket_prefix    = "unum-demo-"
  blob_prefix      = "s/"
  blob_expiry_days = 8
}

output "table_name" {
  description = "DynamoDB table of the app."
  value       = module.datastore.table_name
}

output "bucket_name" {
  description = "S3 bucket of the app's large values."
  value       = module.datastore.bucket_name
}
