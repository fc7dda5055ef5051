"""Temperature conversions and greenhouse alarms."""

from tempconv.alarms import too_hot
from tempconv.convert import celsius_to_fahrenheit, fahrenheit_to_celsius

__all__ = ["celsius_to_fahrenheit", "fahrenheit_to_celsius", "too_hot"]
