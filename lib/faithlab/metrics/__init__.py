"""Faithfulness metrics, one module per paper's metric family (pure torch, built on faithlab.perturb)."""
