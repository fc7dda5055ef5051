"""The public data contract: pydantic models plus JSON Schema files generated from them."""
