"""captum's attribution classes, imported here once for every explainer module that wraps one.

captum imports tqdm.auto, which warns in a Jupyter kernel without ipywidgets ("IProgress not found"); faithlab never
asks captum for a progress bar, so that warning says nothing about our runs and is silenced around this import only.
"""

import warnings

from tqdm import TqdmWarning

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="IProgress not found", category=TqdmWarning)
    from captum.attr import (Deconvolution, GuidedBackprop, InputXGradient, IntegratedGradients, LayerGradCam,
                             Occlusion, Saliency)

__all__ = ["Deconvolution", "GuidedBackprop", "InputXGradient", "IntegratedGradients", "LayerGradCam", "Occlusion",
           "Saliency"]
