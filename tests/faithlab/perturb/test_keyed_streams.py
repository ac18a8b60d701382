"""The keyed random streams computed on the inputs' device (issue 71, item 1) and the samplers built on them.

(a) the tensor seeds equal the Python definition bit for bit; (b) a draw equals the stream's definition computed in
plain Python integers, and its bits do not depend on the batch, the rows beside it, the width of the draw, the CPU's
block size or the device; (c) a battery of statistical checks that the streams are uniform and unrelated — between
neighbouring sample keys, between successive draws of one row, between neighbouring elements, per bit; (d) Floyd's
exact subsets are uniform over every subset and equal a plain-Python Floyd on the same numbers; Bernoulli coins keep
their rate and are independent; the subset sums equal the masks' sums. Every seed is fixed: a check that fails fails
every time, and the thresholds are wide enough (5 standard errors, p > 1e-6) that a correct generator passes them.
"""

from __future__ import annotations

import itertools
import math
import random

import pytest
import torch
from scipy import stats

import faithlab as fl
from faithlab import perturb
from faithlab.perturb import keys as K
from faithlab.perturb import sampling

MASK = (1 << 64) - 1


def _as_int64(v: int) -> int:
    v &= MASK
    return v - (1 << 64) if v >= 1 << 63 else v


def _python_hash(seed: int, draw: int, element: int) -> int:
    """Element e of draw k of a row with seed s, from the definition: splitmix64's output of the state
    keyed_seed(s, k) + (e + 1)·golden, an unsigned 64-bit integer."""
    z = (K.keyed_seed(seed, draw) + (element + 1) * K._GOLDEN) & MASK
    z = ((z ^ (z >> 30)) * K._M1) & MASK
    z = ((z ^ (z >> 27)) * K._M2) & MASK
    return z ^ (z >> 31)


def _python_uniform(seed: int, draw: int, element: int) -> float:
    """Its uniform: the hash's top 53 bits read as a signed integer, · 2^-53 + 1/2."""
    top = _python_hash(seed, draw, element) >> 11
    return (top - (1 << 53 if top >= 1 << 52 else 0)) * 2.0**-53 + 0.5


# ------------------------------------------------------------------------------------------------- (a), (b) bits
def test_tensor_seeds_equal_the_python_seeds_bit_for_bit():
    r = random.Random(0)
    values = [0, 1, -1, 2**63 - 1, -(2**63), 2**64 - 1, *(r.randrange(-(2**63), 2**64) for _ in range(300))]
    for s, a, b in zip(values, values[1:] + values[:1], values[2:] + values[:2]):
        t = [torch.tensor(_as_int64(v)) for v in (s, a, b)]
        assert int(K.keyed_seeds(t[0], t[1], t[2])) == K.keyed_seed(s, a, b)
        assert int(K.keyed_seeds(s, t[1])) == K.keyed_seed(s, a)
    # a tensor seed with int keys (mixed in Python, scalar operands): negative, ≥ 2^63, ≥ 2^64
    for key in (-1, -(2**63), 2**63, 2**64 + 5, 3 * 2**64 - 1):
        seeds = torch.tensor([_as_int64(v) for v in values[:4]])
        assert K.keyed_seeds(seeds, key, 7).tolist() == [K.keyed_seed(v, key, 7) for v in values[:4]]
        assert K.keyed_seeds(key, seeds).tolist() == [K.keyed_seed(key, v) for v in values[:4]]
    # broadcasting: (rows, 1) seeds × (1, copies) keys, as repeat_interleave uses it
    seeds = torch.tensor([_as_int64(v) for v in values[:5]])
    grid = K.keyed_seeds(seeds[:, None], 3, torch.arange(4)[None, :])
    assert grid.tolist() == [[K.keyed_seed(s, 3, c) for c in range(4)] for s in values[:5]]
    assert bool((grid >= 0).all())


def test_a_draw_is_the_stream_of_its_definition():
    seeds = perturb.sample_seeds(5, torch.tensor([0, 7, 2**40]), 3)
    first = seeds.uniform((3, 2, 3))  # draw 0, six elements per row in row-major order
    second = seeds.uniform((3, 4))    # draw 1
    for row, s in enumerate(seeds.seeds.tolist()):
        assert first[row].flatten().tolist() == [_python_uniform(s, 0, e) for e in range(6)]
        assert second[row].tolist() == [_python_uniform(s, 1, e) for e in range(4)]
    bits = perturb.sample_seeds(5, None, 2).bits32((2, 5))  # halves of the int64 hashes, the low half first
    for row, s in enumerate(perturb.sample_seeds(5, None, 2).seeds.tolist()):
        halves = [(_python_hash(s, 0, e // 2) >> (32 * (e % 2))) & 0xFFFFFFFF for e in range(5)]
        assert [v & 0xFFFFFFFF for v in bits[row].tolist()] == halves


def test_draws_do_not_depend_on_batch_width_block_or_layout(monkeypatch):
    index = torch.arange(10, 40)
    whole = perturb.sample_seeds(3, index, 30)
    u = whole.uniform((30, 7, 5))
    bits = whole.bits32((30, 9))
    # a slice of the rows with their global indices, and rows in another order, get the same rows
    part = perturb.sample_seeds(3, index[4:9], 5)
    assert torch.equal(part.uniform((5, 7, 5)), u[4:9]) and torch.equal(part.bits32((5, 9)), bits[4:9])
    shuffled = perturb.sample_seeds(3, index.flip(0), 30)
    assert torch.equal(shuffled.uniform((30, 7, 5)), u.flip(0))
    # a wider draw starts with the narrower one's elements
    wide = perturb.sample_seeds(3, index, 30).uniform((30, 50))
    assert torch.equal(wide[:, :35], u.reshape(30, 35))
    # the CPU's block size (cache) and the device path's single block give the same bits
    for elements in (1, 7, 64, 1 << 26):
        monkeypatch.setattr(K, "_CPU_ELEMENTS", elements)
        again = perturb.sample_seeds(3, index, 30)
        assert torch.equal(again.uniform((30, 7, 5)), u) and torch.equal(again.bits32((30, 9)), bits)
    # seeds held on another layout (a strided view) or made from a float64 index's equal integers
    strided = K.SampleSeeds(torch.stack([whole.seeds, whole.seeds], 1)[:, 0])
    assert not strided.seeds.is_contiguous() and torch.equal(strided.uniform((30, 7, 5)), u)


def test_samplers_give_the_same_bits_on_other_layouts_and_dtypes():
    """The same code path on other layouts and dtypes (the CPU's stand-in for a second device): candidates held as
    a strided view, seeds as int32, and S_avg's neighbour noise for float64 inputs, which is the float32 inputs'
    noise before its rounding to float32."""
    g = torch.Generator().manual_seed(2)
    cand = torch.rand(12, 50, generator=g) < 0.6
    strided = torch.stack([cand, ~cand], 2)[:, :, 0]
    assert not strided.is_contiguous()
    for f in (lambda c, s: perturb.exact_subset(c, 7, generator=s, n_samples=4),
              lambda c, s: perturb.bernoulli_subset(c, 0.4, generator=s, n_samples=4)):
        seeds = perturb.sample_seeds(6, None, 12)
        a, b = f(cand, seeds), f(strided, K.SampleSeeds(seeds.seeds.clone()))
        assert torch.equal(a, b)
    small = K.SampleSeeds(torch.tensor([3, -4, 2**31 - 1], dtype=torch.int32))
    wide = K.SampleSeeds(torch.tensor([3, -4, 2**31 - 1], dtype=torch.int64))
    assert torch.equal(small.uniform((3, 9)), wide.uniform((3, 9)))
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 2)).eval()
    seen = {}

    def explainer(m, inputs, target):  # records the neighbours it is asked to explain
        seen.setdefault(inputs.dtype, []).append(inputs.detach().clone())
        return inputs * 0 + 1

    x = torch.rand(3, 1, 3, 4, generator=g, dtype=torch.float64)
    for dtype in (torch.float64, torch.float32):
        fl.metrics.average_stability(model.to(dtype), x.to(dtype), explainer=explainer, n_neighbours=5, radius=0.5,
                                     target=torch.zeros(3, dtype=torch.long), generator=1)
    noise64 = torch.cat(seen[torch.float64][1:]) - x.repeat_interleave(5, 0)
    noise32 = torch.cat(seen[torch.float32][1:]) - x.float().repeat_interleave(5, 0)
    assert float(noise64.abs().max()) <= 0.5 / 12 and float(noise64.abs().max()) > 0.5 / 12 / 2
    torch.testing.assert_close(noise32, noise64.float(), rtol=0, atol=2e-7)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_draws_are_bitwise_equal_on_the_gpu():
    index = torch.arange(100)
    cpu = perturb.sample_seeds(11, index, 100)
    gpu = perturb.sample_seeds(11, index.cuda(), 100)
    assert gpu.seeds.is_cuda and torch.equal(gpu.seeds.cpu(), cpu.seeds)
    assert torch.equal(gpu.uniform((100, 3, 33)).cpu(), cpu.uniform((100, 3, 33)))
    assert torch.equal(gpu.bits32((100, 77)).cpu(), cpu.bits32((100, 77)))
    cand = torch.rand(100, 64, generator=torch.Generator().manual_seed(0)) < 0.7
    for f in (lambda c, g: perturb.exact_subset(c, 9, generator=g, n_samples=5),
              lambda c, g: perturb.bernoulli_subset(c, 0.3, generator=g, n_samples=5)):
        a = f(cand, perturb.sample_seeds(2, index, 100))
        b = f(cand.cuda(), perturb.sample_seeds(2, index.cuda(), 100))
        assert torch.equal(a, b.cpu())


# ------------------------------------------------------------------------------------------- (c) the statistics
def test_streams_are_uniform():
    u = perturb.sample_seeds(0, None, 64).uniform((64, 16_384)).flatten().numpy()
    counts = torch.histc(torch.from_numpy(u), bins=256, min=0, max=1).numpy()
    assert stats.chisquare(counts).pvalue > 1e-6
    assert stats.kstest(u[:200_000], "uniform").pvalue > 1e-6
    # every bit of the 32-bit draws is a fair coin: 5 standard errors on 2^20 values
    b = perturb.sample_seeds(0, None, 64).bits32((64, 16_384)).flatten()
    ones = torch.stack([((b >> i) & 1).double().mean() for i in range(32)])
    assert float((ones - 0.5).abs().max()) < 5 * 0.5 / math.sqrt(b.numel())


def _max_abs_correlation(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a - a.mean(1, keepdim=True), b - b.mean(1, keepdim=True)
    r = (a * b).sum(1) / (a.norm(dim=1) * b.norm(dim=1))
    return float(r.abs().max())


def test_neighbouring_keys_draws_and_elements_are_unrelated():
    n, rows = 20_000, 200
    bound = 5 / math.sqrt(n)  # 5 standard errors of a correlation of n independent pairs ...
    bound *= 1.3  # ... and the largest of about 200 of them
    seeds = perturb.sample_seeds(1, None, rows)  # global indices 0 … 199: neighbouring keys
    u = seeds.uniform((rows, n))
    assert _max_abs_correlation(u[:-1], u[1:]) < bound                     # sample i and i + 1
    v = seeds.uniform((rows, n))
    assert _max_abs_correlation(u, v) < bound                              # draw k and k + 1 of one row
    assert _max_abs_correlation(u[:, :-1], u[:, 1:]) < bound               # element e and e + 1
    sub = seeds.repeat_interleave(3).uniform((rows * 3, n)).view(rows, 3, n)
    assert _max_abs_correlation(sub[:, 0], sub[:, 1]) < bound              # copies of one row
    # seeds 0 and 1 of the caller: unrelated too; and the first element across 20,000 neighbouring keys is uniform
    w = perturb.sample_seeds(2, None, rows).uniform((rows, n))
    assert _max_abs_correlation(u, w) < bound
    firsts = perturb.sample_seeds(1, None, n).uniform((n, 1)).flatten().numpy()
    assert stats.kstest(firsts, "uniform").pvalue > 1e-6
    # equal seeds, equal streams: the only way two rows coincide
    same = K.SampleSeeds(torch.tensor([5, 5, 6])).uniform((3, 8))
    assert torch.equal(same[0], same[1]) and not torch.equal(same[0], same[2])


# --------------------------------------------------------------------------------------------- (d) the samplers
def _python_floyd(m: int, q: int, u: list[float]) -> list[int]:
    chosen: list[int] = []
    for i, j in enumerate(range(m - q, m)):
        t = min(int(u[i] * (j + 1)), j)
        chosen.append(j if t in chosen else t)
    return chosen


def test_floyd_equals_the_plain_algorithm_on_the_same_numbers():
    g = torch.Generator().manual_seed(0)
    m = torch.randint(1, 40, (50, 1), generator=g)
    q = (torch.rand(50, 1, generator=g) * (m + 1)).long().clamp(max=m)
    steps = int(q.max())
    u = torch.rand(50, steps, generator=g, dtype=torch.float64)
    picks = sampling._floyd(m, q, u, 40)
    for row in range(50):
        want = _python_floyd(int(m[row]), int(q[row]), u[row].tolist())
        assert picks[row].tolist() == want + [40] * (steps - len(want))


@pytest.mark.parametrize("count", [1, 3, 5])
def test_exact_subsets_are_uniform_over_every_subset(count):
    # 6 candidates of 9 units (the complement path for count 5 > 6/2): every one of the C(6, count) subsets
    cand = torch.tensor([[True, False, True, True, False, True, True, False, True]])
    n_draws = 30_000
    seeds = perturb.sample_seeds(4, None, 1)
    masks = perturb.exact_subset(cand, count, generator=seeds, n_samples=n_draws)[0]
    assert bool((masks.sum(1) == count).all()) and not bool((masks & ~cand).any())
    code = (masks.long() << torch.arange(9)).sum(1)
    subsets = [sum(1 << i for i in c) for c in itertools.combinations(cand[0].nonzero().flatten().tolist(), count)]
    observed = torch.tensor([int((code == s).sum()) for s in subsets])
    assert int(observed.sum()) == n_draws  # no other subset was ever drawn
    assert stats.chisquare(observed.numpy()).pvalue > 1e-6


def test_exact_subset_sums_equal_the_masks_sums():
    g = torch.Generator().manual_seed(1)
    cand = torch.rand(6, 30, generator=g) < 0.6
    count = (cand.sum(1) * torch.tensor([0.0, 0.2, 0.5, 0.51, 0.9, 1.0])).long()
    scores = torch.randn(6, 30, generator=g, dtype=torch.float64)
    masks, sums = perturb.exact_subset_sums(cand, count, scores, generator=3, n_samples=40)
    assert torch.equal(masks, perturb.exact_subset(cand, count, generator=3, n_samples=40))
    torch.testing.assert_close(sums, (masks.double() * scores[:, None]).sum(-1), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="scores must have the candidates' shape"):
        perturb.exact_subset_sums(cand, count, scores[:, :5], generator=3, n_samples=2)


def test_bernoulli_coins_keep_their_rate_and_are_independent():
    cand = torch.ones(3, 4_000, dtype=torch.bool)
    cand[2, ::2] = False
    rate = torch.tensor([0.0, 1.0, 0.3])
    kept = perturb.bernoulli_subset(cand, rate, generator=perturb.sample_seeds(0, None, 3), n_samples=50)
    assert not bool(kept[0].any()) and bool(kept[1].all())                 # the ends are exact
    assert not bool((kept[2] & ~cand[2]).any())
    share = kept[2][:, cand[2]].double()
    n = share.numel()
    assert abs(float(share.mean()) - 0.3) < 5 * math.sqrt(0.3 * 0.7 / n)
    # neighbouring candidates and neighbouring masks are unrelated
    assert _max_abs_correlation(share[:, :-1].T, share[:, 1:].T) < 1.3 * 5 / math.sqrt(50)
    assert _max_abs_correlation(share[:-1], share[1:]) < 1.3 * 5 / math.sqrt(share.shape[1])
    # a rate is kept to 2^-32: a rate below half of 2^-32 keeps nothing, 2^-32 itself about one in 2^32
    tiny = perturb.bernoulli_subset(torch.ones(1, 100_000, dtype=torch.bool), 2.0**-34, generator=0)
    assert not bool(tiny.any())


@pytest.mark.parametrize("sampler", ["bernoulli", "exact"])
@pytest.mark.parametrize("units", [1, 40, 10**9])  # _DRAWN_UNITS: one sample per block, 4 samples, one block
def test_masks_drawn_in_blocks_are_one_draws_and_each_block_is_drawn_once(monkeypatch, sampler, units):
    """Item 3: the engine's chunks read masks drawn per block of samples as they reach them, bitwise the masks of one
    draw over every sample, whatever the block and chunk sizes; with pieces in increasing order each block is drawn
    once and at most one block's masks are held beside the piece's."""
    b, s, n = 11, 6, 10
    g = torch.Generator().manual_seed(4)
    cand = torch.rand(b, n, generator=g) < 0.8
    amount = (torch.rand(b, generator=g, dtype=torch.float64) if sampler == "bernoulli"
              else (cand.sum(1) * torch.rand(b, generator=g)).long())
    sample = perturb.bernoulli_subset if sampler == "bernoulli" else perturb.exact_subset
    whole = sample(cand, amount, generator=perturb.sample_seeds(9, None, b), n_samples=s)
    seeds = perturb.sample_seeds(9, None, b)  # never drawn from whole: its slices start at draw 0, as the whole did
    monkeypatch.setattr(sampling, "_DRAWN_UNITS", units)
    block = max(1, units // (s * n))
    for batch_size in (1, 5, 13, 66):
        calls = []

        def draw(s0, s1):
            calls.append((s0, s1))
            return sample(cand[s0:s1], amount[s0:s1], generator=seeds[s0:s1], n_samples=s)

        masks = perturb.drawn_in_blocks(draw, b, s * n)
        got = torch.zeros_like(whole)
        for pieces in perturb.grid_chunks(b, s, batch_size=batch_size):
            for b0, b1, v0, v1 in pieces:
                got[b0:b1, v0:v1] = masks(b0, b1, v0, v1)
        assert torch.equal(got, whole), batch_size
        starts = list(range(0, b, block))
        assert calls == [(s0, min(b, s0 + block)) for s0 in starts], batch_size
    # a piece asked again after the blocks moved on is drawn again, the same
    assert torch.equal(masks(0, 2, 1, 4), whole[0:2, 1:4])


@pytest.mark.parametrize("kind", ["bernoulli", "exact"])
@pytest.mark.parametrize("n_samples", [None, 4])
def test_samplers_by_rows_draw_the_rows_of_one_draw_with_no_host_read(kind, n_samples):
    """bernoulli_rows/exact_rows: checked once when made, then any split of the rows gives the sampler's one draw bit
    for bit, with no host read or copy per call (a block drawn inside a chunk loop must not stall a GPU), and the
    caller's SampleSeeds moves on by the one draw the sampler takes."""
    from syncs import count_syncs

    b, n = 9, 30
    g = torch.Generator().manual_seed(2)
    cand = torch.rand(b, n, generator=g) < 0.7
    amount = (torch.rand(b, generator=g, dtype=torch.float64) if kind == "bernoulli"
              else (cand.sum(1) * torch.rand(b, generator=g)).long())
    whole_of, rows_of = ((perturb.bernoulli_subset, perturb.bernoulli_rows) if kind == "bernoulli"
                         else (perturb.exact_subset, perturb.exact_rows))
    one, split = perturb.sample_seeds(6, None, b), perturb.sample_seeds(6, None, b)
    whole = whole_of(cand, amount, generator=one, n_samples=n_samples)
    rows = rows_of(cand, amount, generator=split, n_samples=n_samples)
    got = torch.cat([rows(r0, r1) for r0, r1 in ((0, 2), (2, 3), (3, 3), (3, 9))])
    assert torch.equal(got if n_samples else got[:, 0], whole)
    # the host reads and copies are the making's (its check, the seeds moved to the device once), none per call: the
    # seeds are made on the host, as F-Fidelity makes them, and the candidates are the caller's device tensors
    counts = []
    for cuts in (((0, 9),), ((0, 2), (2, 3), (3, 3), (3, 9))):
        seeds = perturb.sample_seeds(6, None, b)
        with count_syncs(device=[cand, amount]) as syncs:
            made = rows_of(cand, amount, generator=seeds, n_samples=n_samples)
            for r0, r1 in cuts:
                made(r0, r1)
        counts.append(syncs.where)
    assert counts[1] == counts[0], counts
    assert torch.equal(split.uniform((b, 5)), one.uniform((b, 5)))  # the next draw of each source is the same
    with pytest.raises(ValueError, match="rate must lie" if kind == "bernoulli" else "count must lie"):
        rows_of(cand, amount + 2 if kind == "bernoulli" else amount + n, generator=0, n_samples=n_samples)
    with pytest.raises(RuntimeError, match="SampleSeeds for 10 rows"):
        rows_of(cand, amount, generator=perturb.sample_seeds(6, None, b + 1), n_samples=n_samples)
    with pytest.raises(ValueError, match=r"rows\(3, 10\)"):
        rows(3, 10)


def test_the_samplers_draw_the_masks_they_drew_before_the_draws_went_by_rows():
    """Pinned masks (each row's copies as integers, bit i = unit i), computed at 459a9fb, before bernoulli_subset and
    exact_subset became whole-range calls of bernoulli_rows/exact_rows: the same draws, bit for bit."""
    c = torch.arange(48).view(4, 12) % 5 != 0
    as_ints = lambda m: [[sum(1 << i for i, v in enumerate(row.tolist()) if v) for row in r] for r in m]  # noqa: E731
    rate = torch.tensor([0.25, 0.5, 0.75, 1.0], dtype=torch.float64)
    got = perturb.bernoulli_subset(c, rate, generator=perturb.sample_seeds(7, None, 4), n_samples=2)
    assert as_ints(got) == [[12, 8], [631, 659], [1973, 669], [3567, 3567]]
    got = perturb.exact_subset(c, torch.tensor([2, 5, 7, 9]), generator=perturb.sample_seeds(7, None, 4), n_samples=2)
    assert as_ints(got) == [[66, 136], [3590, 2630], [1437, 1821], [3503, 3559]]
