"""One construct per concern; AgentLedgerStack only wires them together."""
