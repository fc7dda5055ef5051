"""Celsius <-> Fahrenheit, rounded to two decimals."""


def celsius_to_fahrenheit(celsius: float) -> float:
    return round(celsius * 5 / 9 + 32, 2)


def fahrenheit_to_celsius(fahrenheit: float) -> float:
    return round((fahrenheit - 32) * 5 / 9, 2)
