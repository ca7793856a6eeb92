# One Unum function on Lambda: its log group, the function from the deterministic archive,
# and the async invoke configuration (platform retries and the app's error handler as
# on-failure destination). The execution role is in iam.tf. Reserved concurrency and a
# customer-managed KMS key (environment variables, log group) are options (docs/security.md).

resource "aws_cloudwatch_log_group" "this" {
  name              = "/aws/lambda/${var.function_name}"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.kms_key_arn
}

# An archive over Lambda's 50 MB direct-upload limit goes through S3, as
# terraform-aws-modules/lambda does with store_on_s3 (unumctl/aws/archive_limits.py decides).
resource "aws_s3_object" "package" {
  count       = var.store_on_s3 ? 1 : 0
  bucket      = var.s3_bucket
  key         = "${var.s3_prefix}${var.function_name}/${basename(var.zip_path)}"
  source      = var.zip_path
  source_hash = filemd5(var.zip_path)
}

resource "aws_lambda_function" "this" {
  function_name    = var.function_name
  role             = aws_iam_role.this.arn
  handler          = var.handler
  runtime          = var.runtime
  architectures    = [var.architecture]
  memory_size      = var.memory_size
  timeout          = var.timeout
  filename         = var.store_on_s3 ? null : var.zip_path
  s3_bucket        = var.store_on_s3 ? aws_s3_object.package[0].bucket : null
  s3_key           = var.store_on_s3 ? aws_s3_object.package[0].key : null
  source_code_hash = filebase64sha256(var.zip_path)
  kms_key_arn      = var.kms_key_arn

  reserved_concurrent_executions = var.reserved_concurrent_executions

  environment {
    variables = var.environment
  }

  depends_on = [aws_iam_role_policy.this, aws_cloudwatch_log_group.this]
}

resource "aws_lambda_function_event_invoke_config" "this" {
  function_name          = aws_lambda_function.this.function_name
  maximum_retry_attempts = var.maximum_retry_attempts

  dynamic "destination_config" {
    for_each = var.on_failure_arn == null ? [] : [var.on_failure_arn]
    content {
      on_failure {
        destination = destination_config.value
      }
    }
  }
}
