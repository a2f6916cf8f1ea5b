"""The staged workflow, by job: `protocol` (what every stage does on entry and commit, the
assessment), `stages` (the work of each stage), `reviews` (keeping pending reviews honest) and
`handoff` (classifying failures and handing runs to a person)."""
from .protocol import Workflow

__all__ = ["Workflow"]
