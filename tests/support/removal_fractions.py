"""The removal fractions the tests of faithlab.perturb share (tests/faithlab/perturb/test_perturb.py,
test_removal_engine.py)."""

FRACTIONS = [0.0, 0.15625, 0.21875, 0.5, 0.8, 1.0]  # ·16 = 2.5 and 3.5 exercise round-half-to-even
