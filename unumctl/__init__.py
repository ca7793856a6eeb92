"""unumctl: deploy and run workflows of FaaS functions with decentralized Unum orchestration."""

__all__ = ["__version__"]

__version__ = "0.1.0"
