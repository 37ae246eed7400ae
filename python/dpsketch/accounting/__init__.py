"""Privacy accounting: budgets that several releases draw from (:class:`Budget`, shared between
processes through a ledger file: :class:`FileBudget`, ``Budget.open``), and the calibration of
noise to a requested guarantee (``calibration``), privacy profiles (``profile``), the zCDP
arithmetic (``zcdp``: CKS20, exact discrete-Laplace zCDP) and declared plans composed by PLD
(``declared``; docs/accounting.md)."""

from .._lazy import attach

__all__ = ["Budget", "FileBudget", "DisjointScope", "PrivacyTotals", "Spend", "Profile", "PlannedRelease",
           "DeclaredSeries"]
__getattr__, __dir__ = attach(__name__, ("budget", "ledger", "calibration", "zcdp", "profile", "declared"), {
    "Budget": "budget", "DisjointScope": "budget", "PrivacyTotals": "budget", "Spend": "budget",
    "FileBudget": "ledger", "Profile": "profile", "PlannedRelease": "declared", "DeclaredSeries": "declared"})
