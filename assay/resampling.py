"""The resampling behind every interval and p-value Assay reports (pure, no Django): the bootstrap and
randomization machinery, exact sums, reproducible draws.

- the interval: a percentile bootstrap of a (traffic-weighted) mean, resampling whole values (a report's
  queries, a change's pairs) with replacement from numpy's `default_rng(seed)` (`bootstrap_means`,
  `percentile_interval`);
- the p-value: a paired randomization test (Fisher's, as ranx computes it): each pair's two values swapped
  at random, i.e. the sign of each change flipped, and the share of draws whose mean change is at least as
  large in absolute value as the observed one (`randomization_p_value`);
- exact sums: every resampled sum is a sum of exact parts (`_exact_parts`), so it comes out the same bytes
  whatever the order of the sum, the threads or the CPU's matrix kernel;
- reproducible draws: the same seed and size draw the same indices and sign flips, so samples of one size
  share one set of draws (`resampled`: how `assay.changes.paired_changes` resamples a scope's metrics
  together) and each gets what it would alone.

The report's intervals (`assay.report`), the changes between two reports (`assay.changes`) and a
side-by-side study's mean preference (`assay.sxs.analysis`) all resample here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numpy.typing import NDArray

RESAMPLES = 1000
PERMUTATIONS = 1000
LEVEL = 0.95
# The seed of a report that does not name one (`report["ci"]["seed"]`); fixed, so a page is reproducible.
DEFAULT_SEED = 4243
# How far a resampled mean may be below the observed one and still count as "at least as large" (float noise).
_TIE = 1e-12
# Resampled means are drawn in batches so that a large scope never needs a resamples x n matrix at once.
_BATCH_CELLS = 4_000_000
# A batch of draws is summed, and flips are drawn and summed, a block of rows of about this many cells at a
# time (4 MB of float64), whose counts or flips stay in the CPU's cache until they are multiplied.
_BLOCK_CELLS = 500_000
# The exact parts a vector is split into at most (`_exact_parts`).
_LEVELS = 2
# From this many parts on, a bootstrap counts its draws rather than gathering each part's (`_bootstrap`).
_COUNTED_PARTS = 3
# The pairs of a chunk of a matrix product (`_product`).
_CHUNK = 2048


def _draws(rng: np.random.Generator, size: int, rows: int) -> NDArray[np.intp]:
    """`rows` x `size` indices below `size`, as `np.bincount` counts them (numpy draws the very same values
    whatever the integer type while the range fits in 32 bits)."""
    return rng.integers(0, size, (rows, size), dtype=np.intp)


def _batches(total: int, size: int) -> list[int]:
    """The rows of each batch of `total` draws of `size` cells, at most `_BATCH_CELLS` cells a batch."""
    batch = max(1, _BATCH_CELLS // size)
    return [min(batch, total - start) for start in range(0, total, batch)]


class _Columns:
    """The vectors a group of samples sums over its draws, each split into exact parts (`_exact_parts`),
    side by side in one (pairs x parts) matrix, so that one matrix product sums every vector over a block of
    draws; a vector that is there already (a scope's metrics counted with the same weights) is not added
    twice."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._vectors: list[NDArray[np.float64]] = []
        self._parts: list[NDArray[np.float64]] = []
        self._where: list[slice] = []
        self.count = 0  # of parts

    def add(self, vector: NDArray[np.float64]) -> slice:
        for known, where in zip(self._vectors, self._where, strict=True):
            if np.array_equal(known, vector):
                return where
        parts = _exact_parts(vector, self.size)
        where = slice(self.count, self.count + parts.shape[1])
        self._vectors.append(vector)
        self._parts.append(parts)
        self._where.append(where)
        self.count += parts.shape[1]
        return where

    @property
    def width(self) -> int:
        """The pairs rounded up to whole chunks of `_CHUNK` (a scope of fewer pairs is one chunk)."""
        return self.size if self.size <= _CHUNK else -(-self.size // _CHUNK) * _CHUNK

    def parts(self) -> NDArray[np.float64]:
        """The (pairs x parts) matrix."""
        return np.concatenate(self._parts, axis=1)

    def chunks(self) -> NDArray[np.float64]:
        """The (pairs x parts) matrix as (chunks x chunk x parts), the rows past the pairs zero."""
        padded = np.zeros((self.width, self.count))
        padded[: self.size] = self.parts()
        return padded.reshape(-1, min(self.width, _CHUNK), self.count)


def _exact_parts(vector: NDArray[np.float64], terms: int) -> NDArray[np.float64]:
    """`vector` as the sum of up to `_LEVELS` columns of parts, each a multiple of its own power of two and
    small enough that any sum of its entries taken up to `terms` times in all (a bootstrap row's counts add
    up to the pairs; a sign flip takes each pair at most once) is a whole number of that power of two below
    2^53: exact in float64 whatever the order of the sum, the threads or the CPU's matrix kernel. Each level
    keeps 53 - log2(terms) bits below the rest's largest entry (36 bits at 100,000 pairs): there, the parts
    hold every bit of an entry within 2^-20 of the largest, and the bits of the others down to 2^-72 of the
    largest (what is dropped is at most `terms` x 2^-73 x the largest entry in a sum)."""
    headroom = max(1, terms - 1).bit_length()  # `terms` entries add up to 2^headroom times the largest
    parts: list[NDArray[np.float64]] = []
    rest = vector
    largest = float(np.abs(rest).max(initial=0.0))
    while largest > 0.0 and len(parts) < _LEVELS:
        # largest < 2^53 units / 2^headroom; no unit is below the smallest float, of which all are multiples
        unit = max(math.ldexp(1.0, math.frexp(largest)[1] + headroom - 53), math.ulp(0.0))
        part = np.rint(rest / unit) * unit
        parts.append(part)
        rest = rest - part  # exact: `part` is `rest` rounded to a multiple of `unit`
        largest = float(np.abs(rest).max(initial=0.0))
    return np.column_stack(parts) if parts else np.zeros((vector.size, 1))


def _product(rows: NDArray[np.float64], chunks: NDArray[np.float64]) -> NDArray[np.float64]:
    """`rows` (rows x `_Columns.width`) times the parts (`_Columns.chunks`): a matrix product a chunk of
    pairs at a time, added up (exactly, as every sum of parts is). A chunk's parts stay in the CPU's cache,
    and products this small keep numpy's BLAS (OpenBLAS) on one thread: one product of a whole block went on
    several, which with the draws' thread on two CPUs made it 2-6x slower (measured at 86,000 pairs)."""
    count, (number, chunk, _) = rows.shape[0], chunks.shape
    by_chunk = rows.reshape(count, number, chunk).transpose(1, 0, 2)
    return np.matmul(by_chunk, chunks).sum(axis=0)


def _summed(sums: NDArray[np.float64], where: slice) -> NDArray[np.float64]:
    """A vector's sums from its exact parts' (columns `where` of `sums`), the smallest parts first."""
    parts = sums[:, where]
    total = parts[:, -1].copy()
    for column in range(parts.shape[1] - 2, -1, -1):
        total += parts[:, column]
    return total


class Sample:
    """One change's paired deltas (and traffic weights) as the resampling needs them, worked out once."""

    def __init__(self, deltas: NDArray[np.float64], weights: NDArray[np.float64] | None) -> None:
        self.deltas = deltas
        self.weights = weights
        w = np.ones_like(deltas) if weights is None else weights
        self.weighted = deltas * w
        self.total = w.sum()
        self.observed = abs(float(self.weighted.sum() / self.total))


def _bootstrap(samples: Sequence[Sample], resamples: int, seed: int) -> list[NDArray[np.float64]]:
    """`bootstrap_means` of samples of one size, from one set of draws: each sample's means are the ones
    `bootstrap_means` gives it alone (the same seed and size draw the same indices), for one draw.

    A mean is a sum over the draws (of weighted deltas, and of weights for a weighted sample) over the pairs
    (the weights), each sum that of the vector's exact parts (`_Columns`), so the same whichever way it is
    added up: with few parts, each part's drawn values are gathered and added; with many, the draws of a
    block of rows are counted (how many times each pair is drawn in each row) and one matrix product of the
    counts with every part gives every sum. A second thread draws the next batch while this one sums the
    last (numpy lets go of the GIL for both): the draws come from the one generator in the same order.
    """
    rng = np.random.default_rng(seed)
    size = samples[0].deltas.size
    columns = _Columns(size)
    wanted = [
        (columns.add(sample.weighted), None if sample.weights is None else columns.add(sample.weights))
        for sample in samples
    ]
    counted = columns.count >= _COUNTED_PARTS
    width = columns.width if counted else size
    block = max(1, _BLOCK_CELLS // width)
    means: list[list[NDArray[np.float64]]] = [[] for _ in samples]
    if counted:
        chunks, counts = columns.chunks(), np.zeros((block, width))

        def summed(draws: NDArray[np.intp]) -> NDArray[np.float64]:
            """The block's draws counted (offset by `drawn`), times every part."""
            rows = counts[: draws.shape[0]]
            rows.fill(0.0)
            np.add.at(rows.reshape(-1), draws.reshape(-1), 1.0)
            return _product(rows, chunks)
    else:
        gathered = np.ascontiguousarray(columns.parts().T)

        def summed(draws: NDArray[np.intp]) -> NDArray[np.float64]:
            """Each part's drawn values, added up."""
            return np.column_stack([np.take(part, draws).sum(axis=1) for part in gathered])

    def drawn(rows: int) -> NDArray[np.intp]:
        draws = _draws(rng, size, rows)
        if counted:  # each row offset to its place in its block's counts, so that one count fills the block
            draws += (np.arange(rows, dtype=np.intp) % block * width)[:, None]
        return draws

    def average(batch: NDArray[np.intp]) -> None:
        for start in range(0, batch.shape[0], block):
            sums = summed(batch[start : start + block])
            for (values, weights), found in zip(wanted, means, strict=True):
                over = size if weights is None else _summed(sums, weights)
                found.append(_summed(sums, values) / over)

    rows = _batches(resamples, size)
    if len(rows) == 1:  # one batch (a small scope, as most of the gate's): nothing to overlap
        average(drawn(rows[0]))
    else:
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(drawn, rows[0])
            for following in [*rows[1:], 0]:
                draws = pending.result()
                if following:
                    pending = pool.submit(drawn, following)
                average(draws)
    return [np.concatenate(found) for found in means]


class _SignFlips:
    """The signs `rng.choice(np.array([-1.0, 1.0]), size)` draws from `default_rng(seed)`, batch after
    batch, as 0.0 (for -1.0) and 1.0 (for 1.0), made from the generator's raw 64-bit words at a fraction of
    the cost.

    numpy draws each index below 2 from the next 32-bit word (the low half of a raw 64-bit word, then its
    high half) by Lemire's method, which for a range of 2 never rejects and gives the word's top bit.
    tests/assay/test_changes.py holds the two equal batch after batch.
    """

    def __init__(self, seed: int) -> None:
        self._generator = np.random.default_rng(seed).bit_generator
        self._left = np.empty(0, dtype=np.uint32)  # a drawn word's unused half

    def draw(self, out: NDArray[np.float64]) -> None:
        """Fill `out` (rows x pairs) with the next rows' flips."""
        cells = out.size
        needed = max(0, cells - self._left.size)
        words = np.asarray(self._generator.random_raw((needed + 1) // 2), dtype=np.uint64).view(np.uint32)
        halves = np.concatenate((self._left, words)) if self._left.size else words
        self._left = halves[cells:]
        np.right_shift(halves[:cells].reshape(out.shape), 31, out=out, casting="unsafe")


def _randomization(samples: Sequence[Sample], permutations: int, seed: int) -> list[float]:
    """`randomization_p_value` of samples of one size, from one set of sign flips (the same seed and size
    flip the same signs).

    A flipped sum is 2 x (the sum over the pairs drawn 1.0) - (the sum over every pair): one matrix product
    of a block of flips with the samples' exact parts (`_Columns`) gives it for every sample and row, each
    part's exactly (a whole number of its unit below 2^53, and so is twice it less the whole sum)."""
    size = samples[0].deltas.size
    columns = _Columns(size)
    wanted = [columns.add(sample.weighted) for sample in samples]
    chunks = columns.chunks()
    whole = columns.parts().sum(axis=0)
    block = max(1, _BLOCK_CELLS // columns.width)
    heads = np.zeros((block, columns.width))  # the columns past the pairs stay 0
    flips = _SignFlips(seed + 1)  # not the bootstrap's draws
    hits = [0] * len(samples)
    for start in range(0, permutations, block):
        rows = heads[: min(block, permutations - start)]
        flips.draw(rows[:, :size])
        sums = 2.0 * _product(rows, chunks) - whole
        for at, (sample, where) in enumerate(zip(samples, wanted, strict=True)):
            flipped = np.abs(_summed(sums, where) / sample.total)
            hits[at] += int((flipped >= sample.observed - _TIE).sum())
    return [found / permutations for found in hits]


def bootstrap_means(
    values: NDArray[np.float64],
    weights: NDArray[np.float64] | None = None,
    *,
    resamples: int = RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> NDArray[np.float64]:
    """`resamples` means of `values` resampled with replacement (numpy default_rng(seed)), in batches."""
    return _bootstrap([Sample(values, weights)], resamples, seed)[0]


def bootstrap_means_of(
    samples: Sequence[NDArray[np.float64]], *, resamples: int = RESAMPLES, seed: int = DEFAULT_SEED
) -> list[NDArray[np.float64]]:
    """`bootstrap_means` of several unweighted samples of one size (two overlap figures of the same queries,
    `assay.overlap`): each sample's means are the very ones it gets alone. Past one chunk of pairs they come
    from one set of draws, whose counted sums cost less than drawing again (1.1 s for two samples of
    100,000 where each alone took 2.1 s); up to one chunk each is drawn alone, which costs less there (18 ms
    for two of 1,400 where one set of draws took 33 ms)."""
    if samples and samples[0].size > _CHUNK:
        return _bootstrap([Sample(values, None) for values in samples], resamples, seed)
    return [_bootstrap([Sample(values, None)], resamples, seed)[0] for values in samples]


def percentile_interval(means: NDArray[np.float64], level: float = LEVEL) -> tuple[float, float]:
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return float(low), float(high)


def randomization_p_value(
    deltas: NDArray[np.float64],
    weights: NDArray[np.float64] | None = None,
    *,
    permutations: int = PERMUTATIONS,
    seed: int = DEFAULT_SEED,
) -> float:
    """Two-sided paired randomization test of the mean change: the share of `permutations` random sign
    flips whose |mean| is at least the observed |mean| (1.0 when nothing changed)."""
    return _randomization([Sample(deltas, weights)], permutations, seed)[0]


def resampled(groups: Sequence[Sequence[Sample]], seed: int) -> list[list[tuple[float, float, float]]]:
    """(low, high, p-value) of each sample of each group of samples of one size: its percentile interval of
    `RESAMPLES` bootstrap means and its randomization p-value of `PERMUTATIONS` sign flips, each the very one
    it gets alone, from its group's one set of draws and flips.

    The randomization tests of the groups of more than one batch run on a thread of their own while this
    one sums the bootstraps (whose draws have a thread too): numpy lets go of the GIL for the draws, the
    flips and the products, and each group's results are the same on whichever thread."""
    large = [at for at, group in enumerate(groups) if len(_batches(RESAMPLES, group[0].deltas.size)) > 1]
    found = []
    with ThreadPoolExecutor(1) as pool:  # no thread unless a group is large
        tested = {at: pool.submit(_randomization, groups[at], PERMUTATIONS, seed) for at in large}
        for at, group in enumerate(groups):
            means = _bootstrap(group, RESAMPLES, seed)
            p_values = tested[at].result() if at in tested else _randomization(group, PERMUTATIONS, seed)
            found.append([(*percentile_interval(drawn), p) for drawn, p in zip(means, p_values, strict=True)])
    return found


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment, in the order given: the i-th smallest of m p-values is multiplied by
    m - i + 1, each kept at least as large as the one before it and at most 1. None (no pairs) stays None
    and does not count in m."""
    known = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(known)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(known):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted
