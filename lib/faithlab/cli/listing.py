"""``faithlab evaluate --list-metrics``: one line per metric (direction, cost class, what it measures, the
``--set`` options it reads), then each of those options with its default (:func:`list_metrics`).

One concept: the metrics and options the command offers, listed.
"""

from __future__ import annotations

from faithlab.cli.arguments import UsageError, parse_settings

__all__ = ["list_metrics"]

def list_metrics(echo) -> int:
    """One line per metric (name, direction, cost class, what it measures, the --set options it reads), then each of
    those options once with its default, summarised. The cost class reads the model and explainer inputs for one
    image that fl.evaluation.estimate counts: cheap under 50, moderate under 500, expensive from 500."""
    from faithlab import evaluation, report
    from faithlab.metrics import registry
    from faithlab.metrics.registry import OPTIONS

    width, cheap, moderate = 160, 50, 500

    def settable(option: str) -> bool:  # parse_settings' own rule: what --set accepts (the seed has --seed)
        try:
            parse_settings([f"{option}=0"])
        except UsageError:
            return False
        return option != "seed"

    def cut(line: str) -> str:
        return line if len(line) <= width else line[:width - 1] + "…"

    # estimate's counts at 3 x 14 x 14 are those at 3 x 224 x 224 with the default options (the same 7 x 7 TRACE
    # grid; every curve fraction a distinct number of pixels), at a fraction of the cost
    probe = evaluation.estimate((1, 3, 14, 14), n_classes=10, explainers=["e"], finetuned=True, explainer=True)
    per_image = (probe["forward_inputs"] + probe["explained_inputs"]).groupby(probe["group"]).sum()
    lines, read = [], []
    for name, info in evaluation.METRICS.items():
        if info.group in per_image:
            inputs = float(per_image[info.group] + sum(per_image.get(u, 0) for u in info.uses.values()))
            kind = "cheap" if inputs < cheap else "moderate" if inputs < moderate else "expensive"
            cost = f"{kind} ({inputs:,.0f})"
        else:  # not computed by the estimate: ReCo/MeGe need k cross-trained models
            cost = "k models" if "kfold" in info.needs else "?"
        named = {registry.option_name(o.name, info.group): o.name for o in info.options if settable(o.name)}
        options = list(named)
        read += named.items()
        direction = "higher is better" if info.higher_is_better else "lower is better"
        lines.append(cut(f"{name:<17} {direction:<16} {cost:<15} {report.meaning(name)}"
                         + (f" [--set {' '.join(options)}]" if options else "")))
    echo(f"{'metric':<17} {'direction':<16} {'cost':<15} what it measures [its --set options]")
    echo("\n".join(lines))
    echo("cost: model and explainer inputs for one 3x224x224 image at the default options (cheap under 50, moderate "
         "under 500,\n  expensive from 500); ReCo and MeGe need k cross-trained models, which faithlab evaluate "
         "does not train. Every random draw: --seed.")
    echo("options (--set OPTION=VALUE) and their defaults:")
    for shown, option in dict.fromkeys(read):
        echo(cut(f"  {shown} = {report.brief(OPTIONS[option].default)}: {OPTIONS[option].doc}"))
    return 0
