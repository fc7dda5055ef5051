"""Layered configuration."""
