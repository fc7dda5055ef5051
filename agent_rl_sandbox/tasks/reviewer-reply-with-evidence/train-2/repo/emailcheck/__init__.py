"""Email validation for the signup form."""
