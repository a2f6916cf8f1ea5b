"""In-memory implementations of the ports in agentledger.ports, for fast unit tests."""
