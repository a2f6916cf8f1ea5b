"""The adapters: every module that talks to AWS (boto3, botocore) or to another receiving system.

They implement the ports in `agentledger.ports` and are built only by the composition root
(`agentledger.handlers.assembly`). The core never imports this package; `tests/unit/test_layering.py` guards it."""
