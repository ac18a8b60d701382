"""Issue #11: no loader runs code from a file. Each crafted file holds a harmless payload (:class:`_Payload`), whose
unpickling would create a marker file in tmp_path; the loaders must refuse the file with a clear error naming it and
the marker must not exist afterwards. Hub-cache weights must also match their published sha256."""

from __future__ import annotations

import hashlib
import pickle
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import faithlab as fl
import paper_dry as fake

D = fl.data


class _Payload:
    """Unpickling this object creates ``marker``: the stand-in for the code a crafted file would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = Path(marker)

    def __reduce__(self):
        return Path.touch, (self.marker,)


def _object_array(*items) -> np.ndarray:
    array = np.empty(len(items), dtype=object)
    array[:] = list(items)
    return array




def _refused_without_running(marker: Path, pattern: str, load) -> None:
    """``load()`` must not create ``marker`` (checked first, so an unsafe loader fails here whatever it raises), and
    must raise a ValueError matching ``pattern``."""
    with pytest.raises(Exception) as caught:
        load()
    assert not marker.exists(), f"the crafted file ran code ({caught.type.__name__}: {caught.value})"
    assert caught.type is ValueError and re.search(pattern, str(caught.value)), f"{caught.type}: {caught.value}"


def test_the_payload_really_runs_when_unpickled(tmp_path):
    """The other tests can fail: an unsafe loader would create the marker."""
    marker = tmp_path / "ran"
    np.save(tmp_path / "a.npy", _object_array(_Payload(marker)), allow_pickle=True)
    np.load(tmp_path / "a.npy", allow_pickle=True)
    assert marker.exists()
    marker.unlink()
    pickle.loads(pickle.dumps(_Payload(marker)))
    assert marker.exists()


# --------------------------------------------------------------------------------------------------- PAM / Boiler
def _pam_files(root: Path, n: int = 10) -> np.ndarray:
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 3.0, size=(n, 6, 3)).astype(np.float32)
    fake.write_pam(root, x, np.stack([np.zeros(n), np.arange(n) % 8], 1))  # no split file: each test writes its own
    return x


def test_pam_refuses_a_pickled_split_file_without_running_it(tmp_path):
    _pam_files(tmp_path)
    marker = tmp_path / "ran"
    split = tmp_path / "splits" / "PAMAP2_split_1.npy"
    np.save(split, _object_array(np.arange(6), np.arange(6, 8), _Payload(marker)), allow_pickle=True)
    _refused_without_running(marker, rf"{re.escape(str(split))}.*pickled.*convert",
                             lambda: D.load("pam", data_dir=tmp_path))


@pytest.mark.parametrize("file", ["PTdict_list.npy", "arr_outcomes.npy"])
def test_pam_refuses_pickled_series_or_labels_without_running_them(tmp_path, file):
    _pam_files(tmp_path, n=9)
    np.save(tmp_path / "splits" / "PAMAP2_split_1.npy", np.arange(9).reshape(3, 3))
    marker = tmp_path / "ran"
    path = tmp_path / "processed_data" / file
    np.save(path, _object_array(_Payload(marker)), allow_pickle=True)
    _refused_without_running(marker, re.escape(str(path)), lambda: D.load("pam", data_dir=tmp_path))
    path.write_bytes(pickle.dumps(_Payload(marker)))  # a bare pickle with an .npy name
    _refused_without_running(marker, re.escape(str(path)), lambda: D.load("pam", data_dir=tmp_path))


def test_pam_refuses_an_object_array_inside_the_split_npz_without_running_it(tmp_path):
    _pam_files(tmp_path)
    marker = tmp_path / "ran"
    split = tmp_path / "splits" / "PAMAP2_split_1.npz"
    np.savez(split, idx_train=np.arange(6), idx_val=[6, 7], idx_test=_object_array(_Payload(marker)))
    _refused_without_running(marker, rf"{re.escape(str(split))}.*pickled", lambda: D.load("pam", data_dir=tmp_path))
    np.savez(split, idx_train=np.arange(6), idx_val=[6, 7])
    with pytest.raises(ValueError, match="idx_test"):
        D.load("pam", data_dir=tmp_path)


def test_pam_published_object_split_is_refused_with_a_conversion_that_works(tmp_path):
    """The published split is an object array of three index arrays: the message's command converts a trusted copy."""
    _pam_files(tmp_path)
    split = tmp_path / "splits" / "PAMAP2_split_1.npy"
    np.save(split, _object_array(np.arange(6), np.arange(6, 8), np.arange(8, 10)), allow_pickle=True)
    with pytest.raises(ValueError, match=r"np\.savez to .*PAMAP2_split_1\.npz.* as idx_train, idx_val and idx_test"):
        D.load("pam", split="val", data_dir=tmp_path)
    tr, va, te = np.load(split, allow_pickle=True)  # what the message asks the owner of a trusted copy to do
    np.savez(split.with_suffix(".npz"), idx_train=tr, idx_val=va, idx_test=te)
    assert D.load("pam", split="val", data_dir=tmp_path).y.tolist() == [6, 7]


def test_pam_reads_a_plain_int_split_npy(tmp_path):
    _pam_files(tmp_path, n=9)
    np.save(tmp_path / "splits" / "PAMAP2_split_1.npy", np.arange(9).reshape(3, 3))
    assert D.load("pam", split="test", data_dir=tmp_path).y.tolist() == [6, 7, 0]


def _boiler_files(root: Path) -> None:
    fake.write_boiler(root, torch.randn(5, 8, 2), torch.tensor([0, 1] * 4))  # no split file: each test writes its own


def test_boiler_refuses_pickled_objects_without_running_them(tmp_path):
    _boiler_files(tmp_path)
    marker = tmp_path / "ran"
    split = tmp_path / "split=1.pt"
    torch.save((torch.arange(5), torch.tensor([5]), _Payload(marker)), split)
    _refused_without_running(marker, rf"{re.escape(str(split))}.*not a plain tensor file",
                             lambda: D.load("boiler", data_dir=tmp_path))
    with pytest.raises(TypeError, match="weights_only"):  # the escape hatch is gone
        D.load("boiler", data_dir=tmp_path, weights_only=False)
    assert not marker.exists()


def test_boiler_numpy_split_is_refused_with_a_conversion_that_works(tmp_path):
    _boiler_files(tmp_path)
    torch.save((np.arange(5), np.array([5]), np.array([6, 7])), tmp_path / "split=1.pt")
    with pytest.raises(ValueError, match=r"torch\.save\(tuple\(torch\.as_tensor\(i\)\.long\(\) for i in a\), .*split=1\.pt"):
        D.load("boiler", split="test", data_dir=tmp_path)
    a = torch.load(tmp_path / "split=1.pt", weights_only=False)  # the owner's step, on a copy they trust
    torch.save(tuple(torch.as_tensor(i).long() for i in a), tmp_path / "split=1.pt")
    assert D.load("boiler", split="test", data_dir=tmp_path).y.tolist() == [0, 1]


# ------------------------------------------------------------------------------------------------ pretrained weights
def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _same_params(a: nn.Module, b: nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.fixture
def squeezenet_hub(tmp_path, monkeypatch):
    """An empty torch hub under tmp_path and ``publish(file)``: squeezenet1_1's IMAGENET1K_V1 url is set to a name
    carrying ``file``'s sha256 prefix (as torchvision names its files), and the file is moved into the hub there."""
    import torchvision

    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    checkpoints = tmp_path / "hub" / "checkpoints"
    checkpoints.mkdir(parents=True)
    weights = torchvision.models.get_model_weights("squeezenet1_1")

    def publish(file: Path, hash_of: Path | None = None) -> Path:
        name = f"squeezenet1_1-{_sha256(hash_of or file)[:8]}.pth"
        monkeypatch.setattr(weights, "url", property(lambda self: f"https://download.pytorch.org/models/{name}"))
        return file.rename(checkpoints / name)

    return publish


def test_torchvision_hub_file_with_its_published_hash_loads(tmp_path, squeezenet_hub):
    torch.manual_seed(0)
    source = fl.models.pretrained("squeezenet1_1")
    torch.save(source.state_dict(), tmp_path / "w.pth")
    squeezenet_hub(tmp_path / "w.pth")
    assert _same_params(source, fl.models.pretrained("squeezenet1_1", weights="IMAGENET1K_V1"))


def test_torchvision_hub_file_with_a_wrong_hash_is_refused(tmp_path, squeezenet_hub):
    torch.save(fl.models.pretrained("squeezenet1_1").state_dict(), tmp_path / "w.pth")
    (tmp_path / "other").write_bytes(b"the published file")
    local = squeezenet_hub(tmp_path / "w.pth", hash_of=tmp_path / "other")
    with pytest.raises(ValueError, match=rf"weights='DEFAULT'.*{re.escape(str(local))} is not the published one"):
        fl.models.pretrained("squeezenet1_1", weights="DEFAULT")


def test_torchvision_pickle_payload_with_a_matching_name_is_refused_without_running_it(tmp_path, squeezenet_hub):
    marker = tmp_path / "ran"
    torch.save({"features.0.weight": _Payload(marker)}, tmp_path / "w.pth")
    local = squeezenet_hub(tmp_path / "w.pth")
    _refused_without_running(marker, rf"{re.escape(str(local))} is not a plain tensor checkpoint",
                             lambda: fl.models.pretrained("squeezenet1_1", weights="IMAGENET1K_V1"))


def test_torchvision_missing_file_says_where_to_put_it_and_download_is_checked_too(tmp_path, squeezenet_hub,
                                                                                    monkeypatch):
    marker = tmp_path / "ran"
    torch.save([_Payload(marker)], tmp_path / "w.pth")
    local = squeezenet_hub(tmp_path / "w.pth")
    payload = local.rename(tmp_path / "payload")
    with pytest.raises(FileNotFoundError, match=rf"put the published file .* at {re.escape(str(local))}"):
        fl.models.pretrained("squeezenet1_1", weights="DEFAULT")
    fetched = []

    def fake_download(url, dst, hash_prefix=None, **kwargs):  # no network: "downloads" the payload
        fetched.append(hash_prefix)
        Path(dst).write_bytes(payload.read_bytes())

    monkeypatch.setattr(torch.hub, "download_url_to_file", fake_download)
    _refused_without_running(marker, re.escape(str(local)),
                             lambda: fl.models.pretrained("squeezenet1_1", weights="DEFAULT", download=True))
    assert fetched == [local.name.split("-")[1][:8]]


def test_weights_path_pickle_payload_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "ran"
    torch.save({"state_dict": _Payload(marker)}, tmp_path / "ckpt.pt")
    _refused_without_running(marker, r"weights_path: .*ckpt.pt is not a plain tensor checkpoint",
                             lambda: fl.models.pretrained("squeezenet1_1", weights_path=tmp_path / "ckpt.pt"))


@pytest.fixture
def timm_hf_cache(tmp_path, monkeypatch):
    """An empty Hugging Face cache and ``put(file, filename, blob_name)``: ``file`` stored as huggingface_hub does,
    as blobs/<blob_name> (its sha256 by default) linked from snapshots/<revision>/<filename>."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf"))

    def put(file: Path, filename: str, blob_name: str | None = None) -> Path:
        return fake.put_in_hf_cache(tmp_path / "hf", "timm/test_vit.r160_in1k", file, filename, blob_name=blob_name)

    return put


@pytest.mark.parametrize("filename", ["model.safetensors", "pytorch_model.bin"])
def test_timm_hf_blob_with_its_sha256_loads(tmp_path, timm_hf_cache, filename):
    from safetensors.torch import save_file

    torch.manual_seed(2)
    source = fl.models.pretrained("test_vit", source="timm")
    if filename.endswith(".safetensors"):
        save_file(source.state_dict(), str(tmp_path / "w"))
    else:
        torch.save(source.state_dict(), tmp_path / "w")
    timm_hf_cache(tmp_path / "w", filename)
    loaded = fl.models.pretrained("test_vit", weights="DEFAULT", source="timm")
    assert _same_params(source, loaded) and loaded.pretrained_cfg["state_dict"] is None  # no second copy kept


def test_timm_hf_blob_with_a_wrong_sha256_is_refused(tmp_path, timm_hf_cache):
    torch.save(fl.models.pretrained("test_vit", source="timm").state_dict(), tmp_path / "w")
    blob = timm_hf_cache(tmp_path / "w", "pytorch_model.bin", blob_name="ab" * 32)
    with pytest.raises(ValueError, match=rf"{re.escape(str(blob))} is not the published one"):
        fl.models.pretrained("test_vit", weights="DEFAULT", source="timm")


def test_timm_pickle_payload_in_the_hf_cache_is_refused_without_running_it(tmp_path, timm_hf_cache):
    marker = tmp_path / "ran"
    torch.save({"head.weight": _Payload(marker)}, tmp_path / "w")
    timm_hf_cache(tmp_path / "w", "pytorch_model.bin")
    _refused_without_running(marker, r"pytorch_model.bin is not a plain tensor checkpoint",
                             lambda: fl.models.pretrained("test_vit", weights="DEFAULT", source="timm"))
