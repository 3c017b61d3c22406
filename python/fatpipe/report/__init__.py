"""Plots and the HTML report of a study directory."""

from .html import write_report

__all__ = ["write_report"]
