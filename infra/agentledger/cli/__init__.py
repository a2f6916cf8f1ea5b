"""The agentledger command line: a thin HTTP client of the API (signing aside, no AWS SDK, no Powertools)."""
