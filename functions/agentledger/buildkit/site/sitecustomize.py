"""Imported by every Python process of a generation build (this directory is on PYTHONPATH).

It appends the directories named in AGENTLEDGER_APPEND_PATH to sys.path as site directories:
after the interpreter's own site-packages, so that what the project installed wins over the
tools agentledger brings (coverage.py for the project's interpreter, the project's packages for
Pynguin's). PYTHONPATH itself would put them first. Standard library only, Python 3.9+."""
import os
import site

for _directory in os.environ.get("AGENTLEDGER_APPEND_PATH", "").split(os.pathsep):
    if _directory:
        site.addsitedir(_directory)
