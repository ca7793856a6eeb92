# One Unum function whose archive is over Lambda's 50 MB direct-upload limit: the module
# uploads it to the app's bucket (packages/<function>/<archive>) and creates the function from
# there, as unumctl renders such a function. Put `function.zip` next to this file first.

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

  table_name       = "unum-big"
  bucket_prefix    = "unum-big-"
  blob_prefix      = "s/"
  blob_expiry_days = 8
}

module "model" {
  source = "../.."

  function_name          = "big-Model"
  handler                = "unum_entry.lambda_handler"
  runtime                = "python3.13"
  zip_path               = "${path.module}/function.zip"
  store_on_s3            = true
  s3_bucket              = module.datastore.bucket_name
  table_arn              = module.datastore.table_arn
  bucket_arn             = module.datastore.bucket_arn
  blob_prefix            = "s/"
  log_retention_days     = 14
  maximum_retry_attempts = 1
  on_failure_arn         = module.datastore.failure_queue_arn

  permissions = {
    Datastore = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"]
    Blobs     = ["s3:GetObject", "s3:PutObject"]
    ListBlobs = ["s3:ListBucket"]
    Logs      = ["logs:CreateLogStream", "logs:PutLogEvents"]
  }

  environment = {
    UNUM_TABLE  = module.datastore.table_name
    UNUM_BUCKET = module.datastore.bucket_name
  }
}
