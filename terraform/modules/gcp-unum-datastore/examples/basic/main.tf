# The shared resources of an app named "demo" in an existing project: APIs, the app's own
# Firestore database unum-demo with its TTL policies, the private buckets, the dead-letter
# topic and the functions' Cloud Build service account.

terraform {
  required_version = ">= 1.5"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 6.12"
    }
    google-beta = {
      source  = "hashicorp/google-beta"
      version = ">= 6.12"
    }
    random = {
      source  = "hashicorp/random"
      version = ">= 3.5"
    }
    time = {
      source  = "hashicorp/time"
      version = ">= 0.9"
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

provider "google-beta" {
  project = var.project
  region  = "us-central1"
}

module "datastore" {
  source = "../.."

  project           = var.project
  region            = "us-central1"
  app               = "demo"
  collection        = "unum-demo"
  database_id       = "unum-demo"
  database_location = "nam5"

  build_service_account_id = "demo-build"
  bucket_prefix            = "unum-demo"
}

output "bucket" {
  description = "Bucket of the app's large values (sources are in source_bucket)."
  value       = module.datastore.bucket
}
