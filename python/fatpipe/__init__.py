"""fatpipe: a laboratory for TCP congestion control on long fat networks."""

__version__ = "0.1.0"
