"""The removal engine shared by every metric: units, references, orders, random subsets and batched removal.

A *unit* is a group of input elements removed together; removing it replaces its elements by a *reference*.
Masks over units are ``(B, n)`` bool tensors. Knows no dataset, model family or paper. One concept per module:
``units``, ``references``, ``imputation`` (ROAD's noisy linear imputation, a reference computed from each
perturbed input's kept pixels), ``orders``, ``keys`` (randomness keyed to the sample), ``sampling``, ``readout``
(the model's checked logits and read-outs), ``shared`` (logits shared between metrics), ``engine`` (the batched
forward loop) and ``runner`` (:class:`Removal`: arguments checked once, then any number of mask sets, curves or
lazily built masks); their public names are gathered here.
``autobatch`` (``batch_size="auto"``: a timing probe picks the batch size) is used as a module.
"""

from faithlab.perturb import autobatch
from faithlab.perturb.engine import Masks, evaluate_inputs, grid_chunks
from faithlab.perturb.readout import OUTPUTS, Output, logits
from faithlab.perturb.orders import ORDERS, TIES, check_informative, order, ranks, top_masks
from faithlab.perturb.references import (PAD_TOKEN, REMOVED_TOKEN, Reference, apply_removal, gaussian_filter,
                                        make_reference)
from faithlab.perturb.keys import SampleSeeds, keyed_seed, keyed_seeds, sample_index, sample_seeds
from faithlab.perturb.shared import sharing
from faithlab.perturb.imputation import NoisyLinear, noisy_linear_imputation
from faithlab.perturb.runner import (CURVE_KINDS, DELETION_INSERTION_FRACTIONS, Removal, deletion_insertion,
                                     masked_outputs, removal_curve, removal_outputs)
from faithlab.perturb.sampling import (Rows, bernoulli_rows, bernoulli_subset, drawn_in_blocks, exact_rows,
                                      exact_subset, exact_subset_sums, uniform_fraction_mask)
from faithlab.perturb.units import (REDUCE, UNIT_KINDS, ConstantMapWarning, Units, check_attributions, constant_maps,
                                    default_units, expand, patch_units, pixel_units, segment_units, time_units,
                                    token_units, unit_scores, units_for, warn_constant)

__all__ = ["Units", "pixel_units", "patch_units", "segment_units", "time_units", "token_units", "default_units",
           "units_for",
           "UNIT_KINDS", "expand", "unit_scores", "REDUCE", "check_attributions", "constant_maps",
           "ConstantMapWarning", "warn_constant", "Reference", "make_reference", "PAD_TOKEN", "REMOVED_TOKEN",
           "apply_removal", "gaussian_filter", "ORDERS", "TIES",
           "order", "ranks", "top_masks", "check_informative", "bernoulli_subset", "exact_subset", "bernoulli_rows",
           "exact_rows", "Rows",
           "exact_subset_sums", "drawn_in_blocks",
           "uniform_fraction_mask", "keyed_seed", "keyed_seeds", "SampleSeeds", "sample_seeds", "sample_index",
           "Output",
           "OUTPUTS", "Masks", "Removal", "masked_outputs", "evaluate_inputs", "grid_chunks", "logits", "removal_curve",
           "removal_outputs", "autobatch", "deletion_insertion", "CURVE_KINDS", "DELETION_INSERTION_FRACTIONS",
           "sharing", "NoisyLinear", "noisy_linear_imputation"]
