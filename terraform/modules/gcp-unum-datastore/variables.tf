variable "project" {
  type        = string
  description = "GCP project id."
}

variable "region" {
  type        = string
  description = "Region of the bucket (same as the functions)."
}

variable "app" {
  type        = string
  description = "Unum app name (prefix of every resource)."
}

variable "collection" {
  type        = string
  description = "Firestore collection holding the app's items (unum-<app>)."
}

variable "create_database" {
  type        = bool
  default     = true
  description = "false: use the existing database var.database_id."
}

variable "database_id" {
  type        = string
  default     = "(default)"
  description = "Firestore database id."
}

variable "database_location" {
  type        = string
  description = "Firestore location (e.g. nam5 or a region)."
}

variable "database_delete_protection" {
  type        = bool
  default     = true
  description = "Delete protection of a database created here."
}

variable "database_deletion_policy" {
  type        = string
  default     = "ABANDON"
  description = "ABANDON (destroy keeps the database) or DELETE."
}

variable "bucket_name" {
  type        = string
  description = "Globally unique bucket name for sources and large values."
}

variable "payload_expiry_days" {
  type        = number
  default     = 7
  description = "Lifecycle expiry (days) of objects under payloads/."
}
