"""Privacy accounting: budgets that several releases draw from (:class:`Budget`, shared between
processes through a ledger file: :class:`FileBudget`, ``Budget.open``), and the calibration of
noise to a requested guarantee (``calibration``)."""

from .._lazy import attach

__all__ = ["Budget", "FileBudget", "DisjointScope", "PrivacyTotals", "Spend"]
__getattr__, __dir__ = attach(__name__, ("budget", "ledger", "calibration"), {
    "Budget": "budget", "DisjointScope": "budget", "PrivacyTotals": "budget", "Spend": "budget",
    "FileBudget": "ledger"})
