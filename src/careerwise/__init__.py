"""CareerWise: Summer, an open-source career coach."""

__version__ = "0.1.0"
__all__ = ["__version__"]
