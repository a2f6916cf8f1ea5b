"""agentledger: the durable ledger, artifacts, effects and restart policy of a staged agent run."""
