"""sdc: statistical disclosure control in the data warehouse."""

__version__ = "0.1.0"
