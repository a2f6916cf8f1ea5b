"""Small text helpers."""
