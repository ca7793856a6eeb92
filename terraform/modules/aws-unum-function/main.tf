# One Unum function on Lambda: its log group, the function from the deterministic archive,
# and the async invoke configuration (platform retries and the app's error handler as
# on-failure destination). The execution role is in iam.tf.

resource "aws_cloudwatch_log_group" "this" {
  name              = "/aws/lambda/${var.function_name}"
  retention_in_days = var.log_retention_days
}

resource "aws_lambda_function" "this" {
  function_name    = var.function_name
  role             = aws_iam_role.this.arn
  handler          = var.handler
  runtime          = var.runtime
  architectures    = [var.architecture]
  memory_size      = var.memory_size
  timeout          = var.timeout
  filename         = var.zip_path
  source_code_hash = filebase64sha256(var.zip_path)

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
