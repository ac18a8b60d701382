"""The README's "Fork: add a claim", followed to the letter in a copy of the project: its claim function, with its
rule and change log registered above it, is appended to the module of its concept in the paper's claims package
(``claims/fidelity.py``, the one file of the library the fork touches), the fingerprint the audit prints is written
into the log entry (the audit then passes), its test runs and passes, and its notebook cell, run on a frame of three
replicas, records the claim with its verdict and its claim function in the notebook's claims.csv. The copy runs in
subprocesses: the project under test is not touched."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _readme_blocks() -> dict[str, list[str]]:
    """The fenced blocks of the README's "Fork: add a claim", by language."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Fork: add a claim"):text.index("## Layout")]
    blocks: dict[str, list[str]] = {}
    for lang, body in re.findall(r"```(\w+)\n(.*?)\n\s*```", section, re.S):
        blocks.setdefault(lang, []).append(textwrap.dedent(body))
    return blocks


PLACEHOLDER = "<printed by python -m faithlab_study.verdicts>"


def test_the_readme_names_three_pieces_of_code_and_no_rules_file():
    blocks = _readme_blocks()
    assert list(blocks) == ["python"] and len(blocks["python"]) == 3, {k: len(v) for k, v in blocks.items()}
    function = blocks["python"][0]
    assert function.startswith('@verdicts.registered(\n    "CX",') and "\ndef claim_beats_random(" in function
    assert f'"fingerprint": "{PLACEHOLDER}"' in function


CELL = r'''
import sys
import numpy as np
import pandas as pd
import faithlab_study as fs

P = fs.papers.fewclass
rng = np.random.default_rng(1)
scores = pd.DataFrame([{"replica": r, "image": i, "method": m, "score": (0.3 if m == "gradcam" else 0.0)
                        + rng.normal(0, 0.05)} for r in range(3) for i in range(30) for m in ("gradcam", "random")])
out = fs.artifacts.for_notebook("fewclass/toy")
exec(open(sys.argv[1]).read())
claims = pd.read_csv(out.folder / "claims.csv")
row = claims[claims["claim"].str.startswith("CX")].iloc[0]
print(row["verdict"], row["function"])
'''


@pytest.mark.timeout(300)
def test_the_readmes_claim_is_decided_and_recorded_in_a_copy(tmp_path):
    blocks = _readme_blocks()
    function, test, cell = blocks["python"]
    copy = tmp_path / "lib"
    for source, name in ((ROOT / "lib" / "faithlab", "faithlab"),
                         (ROOT / "lib" / "faithlab-study" / "faithlab_study", "faithlab_study")):
        shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    claims = copy / "faithlab_study" / "papers" / "fewclass" / "claims" / "fidelity.py"
    claims.write_text(claims.read_text() + "\n\n" + function + "\n")
    env = {**os.environ, "PYTHONPATH": str(copy), "FAITHLAB_PROGRESS": "0",
           "FAITHLAB_GENERATED": str(tmp_path / "generated")}

    def run(*args, timeout=240):
        return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=timeout,
                              cwd=tmp_path)

    # the log entry's fingerprint, as the audit prints it for the new rule
    printed = run("-m", "faithlab_study.verdicts")
    assert printed.returncode == 1 and "CX: the rule changed without an entry in its log" in printed.stdout, (
        printed.stdout + printed.stderr)
    fingerprint = re.search(r"^CX ([0-9a-f]{12})$", printed.stdout, re.M).group(1)
    claims.write_text(claims.read_text().replace(PLACEHOLDER, fingerprint))
    audited = run("-m", "faithlab_study.verdicts")
    assert audited.returncode == 0, audited.stdout + audited.stderr

    test_file = tmp_path / "test_readme_claim.py"
    test_file.write_text("import numpy as np\nimport pandas as pd\nimport pytest\n\nimport faithlab_study as fs\n\n\n"
                         + test)
    tested = run("-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", str(test_file))
    assert tested.returncode == 0 and "4 passed" in tested.stdout, tested.stdout + tested.stderr

    cell_file = tmp_path / "cell.py"
    cell_file.write_text(cell + "\n")
    recorded = run("-c", CELL, str(cell_file))
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    verdict, function_name = recorded.stdout.strip().splitlines()[-1].split(" ", 1)
    assert verdict == "reproduced", recorded.stdout
    assert function_name.endswith("fewclass.claims.fidelity.claim_beats_random"), recorded.stdout


def test_without_the_fork_the_claim_is_nowhere():
    """The control: the project as it is has no rule CX and no claim_beats_random (so the test above finds the
    README's)."""
    import faithlab_study as fs

    with pytest.raises(ValueError, match="has no rule"):
        fs.verdicts.rule("CX")
    assert not hasattr(fs.papers.fewclass.claims.fidelity, "claim_beats_random")
