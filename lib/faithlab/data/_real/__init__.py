"""Loaders for the papers' real datasets, read from ``data_dir`` in their published on-disk layouts, one module per
modality: :mod:`.images` (CIFAR-10/100, FashionMNIST, EuroSAT, Tiny-ImageNet, ImageNet), :mod:`.ct` (the CT slices
of Few-class Fidelity), :mod:`.series` (PAM, Boiler) and :mod:`.text` (SST-2); :mod:`._files` holds what they share
(the data_dir checks, the errors and the loading that never unpickles).

Nothing is fetched unless ``download=True`` (torchvision datasets only). Image datasets are returned as torch
Datasets yielding (normalised tensor, label) with an ``info`` dict attached; SST-2, PAM, Boiler and the CT slices
(ct_contrast) are small and returned as :class:`~faithlab.data.TensorData`. Use :func:`~faithlab.data.to_tensors`
to materialise the first n items of an image dataset. The loaders are public as ``faithlab.data.<name>``.
"""
