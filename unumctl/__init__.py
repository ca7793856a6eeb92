"""unumctl: deploy and run workflows of FaaS functions with decentralized Unum orchestration."""

__version__ = "0.1.0"
