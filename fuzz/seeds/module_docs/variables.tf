
variable "name" {
  type        = string
  description = "Name of the VPC."
}

variable "cidr" {
  description = "CIDR block"
  type        = string
  default     = "10.0.0.0/16"
}

variable "subnets" {
  type = list(object({
    name = string
    cidr = string
    tags = optional(map(string), {})
  }))
  default = [{ name = "a", cidr = "10.0.1.0/24" }]
  description = <<-EOT
    The subnets to create.
    One per zone.
  EOT
}

variable "password" {
  type      = string
  sensitive = true
  default   = null
}

variable "count_of" {
  type    = number
  default = 3
}

variable "untyped" {}
