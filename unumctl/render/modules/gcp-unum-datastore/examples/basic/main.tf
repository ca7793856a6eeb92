# The shared resources of an app named "demo" in an existing project: APIs, the (default)
# Firestore database with its TTL policies, the private bucket and the dead-letter topic.

terraform {
  required_version = ">= 1.5"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 6.12"
    }
    random = {
      source  = "hashicorp/random"
      version = ">= 3.5"
    }
  }
}

variable "project" {
  description = "GCP project id to deploy into."
  type        = string
}

provider "google" {
  project = var.project
  region  = "us-central1"
}

module "datastore" {
  source = "../.."

  project           = var.project
  region            = "us-central1"
  app               = "demo"
  collection        = "unum-demo"
  database_location = "nam5"
  bucket_prefix     = "unum-demo"
}

output "bucket" {
  description = "Bucket of the app's large values (sources are in source_bucket)."
  value       = module.datastore.bucket
}
