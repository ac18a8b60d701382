"""``python -m faithlab.study.verdicts [file ...]``: each rules file's fingerprint (what a change-log line records) and what
its audit finds wrong (faithlab.study.verdicts.rules.audit); exits 1 when something is."""

import sys

from faithlab.study.verdicts.rules import audit, fingerprint, load, load_answers, rule_files

problems = 0
for path in sys.argv[1:] or [str(f) for f in rule_files()]:
    print(path, fingerprint(load(path)[0], load_answers(path)))
    for problem in audit(path):
        problems += 1
        print("  ", problem)
sys.exit(1 if problems else 0)
