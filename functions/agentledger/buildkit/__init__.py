"""The build kit: what agentledger runs inside a test build, on the repository under test.

It is copied into the build whole (workflow/builds.py) and run there as `python3 -I agentledger
COMMAND`, so it is one package of the standard library only, valid on Python 3.9, importing its
own modules relatively. The repository is untrusted: the kit runs as root and the repository's
commands as a uid of their own, with an environment built from scratch, in a process tree that
is killed when they end."""
