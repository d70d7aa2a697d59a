# The smallest deployment: `make build` first, then `terraform init && terraform apply` here
# (or `make deploy` from the repository root).
terraform {
  required_version = ">= 1.5.0"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.40, < 7.0"
    }
  }
}

provider "aws" {
  region = var.region
}

variable "region" {
  description = "AWS region to deploy to."
  type        = string
  default     = "eu-west-1"
}

variable "lambda_dir" {
  description = "Where `make build` left NAME/bootstrap.zip."
  type        = string
  default     = "../../../target/lambda"
}

module "registry" {
  source     = "../.."
  name       = "tf-registry"
  lambda_dir = var.lambda_dir
}

output "registry_hostname" {
  value = module.registry.registry_hostname
}

output "mirror_url" {
  value = module.registry.mirror_url
}

output "bucket_name" {
  value = module.registry.bucket_name
}

output "cli_config" {
  value = module.registry.cli_config
}
