"""``python -m faithlab_study.verdicts [id ...]``: every registered rule's and answer's fingerprint (what the last entry
of its change log records), one ``<id> <fingerprint>`` line each, and what the audit finds wrong with its log
(:func:`faithlab_study.verdicts.rules.audit`, indented below it); exits 1 when something is."""

import sys

from faithlab_study.verdicts.rules import audit, fingerprint, registrations

problems = 0
named = sys.argv[1:]
found = registrations()
for name in [n for n in named if n not in found]:
    problems += 1
    print(name, "-")
    print("  ", f"{name}: no rule or answer is registered under this id")
for name, registration in found.items():
    if named and name not in named:
        continue
    print(name, fingerprint(registration.fields))
    for problem in audit([name]):
        problems += 1
        print("  ", problem)
sys.exit(1 if problems else 0)
