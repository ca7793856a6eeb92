# One Unum function "demo-Hello" with the app's datastore, as unumctl renders it (without the
# error handler). `function.zip` is the archive `unumctl build` writes; put one next to this
# file before `terraform apply`.

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
  source = "../../../aws-unum-datastore"

  table_name       = "unum-demo"
  bucket_prefix    = "unum-demo-"
  blob_prefix      = "s/"
  blob_expiry_days = 8
}

module "hello" {
  source = "../.."

  function_name          = "demo-Hello"
  handler                = "runtime.aws.entry.handler"
  runtime                = "python3.13"
  architecture           = "arm64"
  memory_size            = 256
  timeout                = 30
  zip_path               = "${path.module}/function.zip"
  table_arn              = module.datastore.table_arn
  bucket_arn             = module.datastore.bucket_arn
  blob_prefix            = "s/"
  log_retention_days     = 14
  maximum_retry_attempts = 1
  on_failure_arn         = module.datastore.failure_queue_arn # what unumctl gives the error handler

  reserved_concurrent_executions = 5

  # what unumctl passes: the runtime's table (runtime/aws/iam.py)
  permissions = {
    Datastore        = ["dynamodb:BatchGetItem", "dynamodb:BatchWriteItem", "dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"]
    Blobs            = ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"]
    ListBlobs        = ["s3:ListBucket"]
    InvokeSuccessors = ["lambda:InvokeFunction"]
    Logs             = ["logs:CreateLogStream", "logs:PutLogEvents"]
    OnFailureQueue   = ["sqs:SendMessage"]
    Kms              = ["kms:Decrypt", "kms:GenerateDataKey"]
  }

  environment = {
    UNUM_TABLE           = module.datastore.table_name
    UNUM_BUCKET          = module.datastore.bucket_name
    UNUM_BLOB_PREFIX     = "s/"
    UNUM_FUNCTION_PREFIX = "demo-"
  }
}

output "function_arn" {
  description = "ARN of the deployed function."
  value       = module.hello.arn
}
