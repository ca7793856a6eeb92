output "function_name" {
  description = "Name of the Lambda function."
  value       = aws_lambda_function.this.function_name
}

output "arn" {
  description = "Unqualified ARN of the Lambda function (what successors invoke and on_failure_arn takes)."
  value       = aws_lambda_function.this.arn
}

output "role_arn" {
  description = "ARN of the function's execution role."
  value       = aws_iam_role.this.arn
}

output "log_group_name" {
  description = "Name of the function's CloudWatch log group (/aws/lambda/<function_name>)."
  value       = aws_cloudwatch_log_group.this.name
}
