"""What the rules of this chapter share, written once here: the registration entry, the first line of each rule's
change log (:func:`faithlab_study.verdicts.registered`), carried by :data:`CHAPTER` and its families (a rule unchanged
since gives only its fingerprint), and the rule fields most of them share (:data:`CHAPTER`, its families and
:func:`two_parts`), under each registration's own fields."""

from faithlab_study import verdicts

REGISTERED = {"date": "2026-11-27", "change": "registered",
              "why": ("issue 69: the rules move from the claim functions' code into this file. Before: two-stage "
                      "percentile bootstraps with margin 0 and the house share rule (R2, R3 reproduced from 2/3 of "
                      "the cells, partly from 1/3; R1 and R4 share 1; Table 3 partly from one of two parts); R4 "
                      "decided on point estimates (ρ ≥ 0.9 over every map, no units); R5 exact values against 1e-6. "
                      "Now: one statistic per trained replica with a t interval (μF: t on replica means), margins of "
                      "half the paper's smallest effect (R1 0.074, R2.MeGe 0.02, R2.ReCo 0.0345, R3.ReCo 0.206, "
                      "R3.MeGe 0.013, RM-T3.muF 0.301, RM-T3.Savg ln-ratio 2.2387), 'every' where the paper says "
                      "every or best/highest/lowest, 'partly' only for the named parts of R2, R3 and Table 3 (share "
                      "1/2); R2 on the two degradations of Fig. 4 at their strongest level; R4 over independent "
                      "units (paths, noise series) as a study check; R5 a study check")}
"""The chapter's registration (issue 69), the first entry of every rule's change log (:data:`CHAPTER` carries it)."""


CHAPTER = verdicts.Chapter.of_paper("reco_mege", registration=REGISTERED, interval="t on replica statistics",
                                    unit="image of D (per replica)")
"""The fields most of the chapter's rules share, written once (issue 90): a paper claim judged above its margin in
every cell, on one statistic per trained replica (3 replicas, 30 images of D); a registration
(``@CHAPTER.registered("R1", ...)``) holds only what differs."""


CHECKS = CHAPTER.family(kind="study check", interval="t on units")
"""The study checks (R4, R5): no model is trained for them, so each is judged on its units."""
DEGRADED = CHAPTER.family(null="the normally trained family on the same D",
                          premises=["the normal families meet the mechanism premise over the replicas"])
"""R2 and its parts: the degraded families against the normally trained one."""
LIPSCHITZ = CHAPTER.family(null="the ResNet-18 family on the same D",
                           premises=["both families meet the mechanism premise over the replicas"])
"""R3 and its parts: the 1-Lipschitz family against the ResNet-18 one."""
TABLE3 = CHAPTER.family(unit="held-out image (per replica)",
                        premises=["the models beat chance clearly, over the replicas"])
"""Table 3 (RM-T3) and its parts, scored on held-out images."""


def two_parts(first: str, second: str) -> dict:
    """The fields of a claim of two named parts (R2, R3, RM-T3), each decided on its own by its rule: partly
    reproduced from one of the two (share 1/2); the margins are the parts' own."""
    return {"statistic": f"two named parts, each decided on its own: {first} and {second}", "margin": 0,
            "margin_source": f"the parts' own margins ({first}, {second})", "decision": "parts",
            "parts": [first, second], "share": 0.5}
