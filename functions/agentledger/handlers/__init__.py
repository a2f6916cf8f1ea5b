"""Thin Lambda handlers: parse the event, call the workflow, shape the response."""
