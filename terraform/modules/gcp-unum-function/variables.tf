variable "project" {
  type = string
}

variable "region" {
  type = string
}

variable "app" {
  type = string
}

variable "function" {
  type        = string
  description = "Unum function name (IR Name)."
}

variable "function_name" {
  type        = string
  description = "Cloud Functions name (lower-case <app>-<function>)."
}

variable "topic" {
  type        = string
  description = "The function's trigger topic id, <app>-<function>."
}

variable "service_account_id" {
  type        = string
  description = "account_id of the dedicated service account (6-30 chars)."
}

variable "bucket" {
  type = string
}

variable "source_path" {
  type        = string
  description = "Path of the built bundle zip."
}

variable "source_sha256" {
  type        = string
  description = "SHA-256 of the bundle zip."
}

variable "runtime" {
  type    = string
  default = "python312"
}

variable "entry_point" {
  type    = string
  default = "handle_cloudevent"
}

variable "memory" {
  type        = number
  description = "MB"
}

variable "timeout" {
  type        = number
  description = "seconds"
}

variable "max_instances" {
  type    = number
  default = 100
}

variable "environment" {
  type = map(string)
}

variable "dead_letter_topic" {
  type        = string
  description = "Topic id of the app's dead-letter topic."
}
