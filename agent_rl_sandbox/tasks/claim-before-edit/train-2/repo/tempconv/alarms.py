"""Alarm thresholds are configured in Fahrenheit; sensors report Celsius."""

from tempconv.convert import celsius_to_fahrenheit


def too_hot(celsius: float, limit_f: float = 95.0) -> bool:
    return celsius_to_fahrenheit(celsius) > limit_f
