"""NPB CG matrix generator (``makea``, ``sprnvc``, ``vecset``, ``sparse``), vectorised but exact.

Every rank draws the whole random stream, builds all ``na`` sparse vectors and keeps only the outer
products that fall in its block, so the matrix is the same for every process count. The random
draws, the order of the generated elements and the order in which duplicates are summed follow the
Fortran code, so the assembled matrix is bitwise the one NPB builds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .grid import Decomposition
from .randlc import MODULUS_BITS, R46, LcgStream

ROW_BATCH = 8192            # rows checked for duplicate positions per vectorised step
OUTER_CHUNK = 16384         # outer products expanded at once in ``makea``


@dataclass(frozen=True)
class SparseVectors:
    """The ``na`` sparse vectors of ``makea`` after ``vecset``: row k holds counts[k] valid entries."""

    positions: np.ndarray    # (na, nonzer+1) int64, 1-based; padding entries are 0
    values: np.ndarray       # (na, nonzer+1) float64
    valid: np.ndarray        # (na, nonzer+1) bool


class _ValidPairs:
    """(value, position) draw pairs with position <= n, pulled from the stream on demand."""

    def __init__(self, stream: LcgStream, n: int, chunk_pairs: int = 1 << 19) -> None:
        nn1 = 1
        while nn1 < n:                       # smallest power of two >= n (NPB's loop, nn1 >= 2)
            nn1 *= 2
        self._shift = np.uint64(MODULUS_BITS - (nn1.bit_length() - 1))
        self._stream, self._n, self._chunk = stream, n, chunk_pairs
        self.values = np.empty(0)
        self.positions = np.empty(0, dtype=np.int64)
        self.head = 0

    def ensure(self, count: int) -> None:
        """Make at least ``count`` unused pairs available from ``head``."""
        while self.positions.size - self.head < count:
            states = self._stream.next_states(2 * self._chunk)
            # int(nn1 * x*2^-46) + 1 is exact: nn1 is a power of two, so it is a right shift.
            pos = (states[1::2] >> self._shift).astype(np.int64) + 1
            keep = pos <= self._n
            self.values = np.concatenate([self.values[self.head:], states[0::2][keep] * R46])
            self.positions = np.concatenate([self.positions[self.head:], pos[keep]])
            self.head = 0


def sprnvc_all(na: int, nonzer: int, stream: LcgStream) -> tuple[np.ndarray, np.ndarray]:
    """``sprnvc`` for rows 1..na: each row takes the next ``nonzer`` distinct positions drawn.

    A row without repeated positions simply consumes the next ``nonzer`` valid pairs, so batches of
    rows are cut from the valid-pair sequence at once; the first row of a batch that repeats a
    position is replayed one draw at a time, as the Fortran loop does, and batching resumes after it.
    """
    pairs = _ValidPairs(stream, na)
    positions = np.empty((na, nonzer), dtype=np.int64)
    values = np.empty((na, nonzer))
    row = 0
    while row < na:
        batch = min(ROW_BATCH, na - row)
        pairs.ensure(batch * nonzer)
        take = slice(pairs.head, pairs.head + batch * nonzer)
        cand_pos = pairs.positions[take].reshape(batch, nonzer)
        ordered = np.sort(cand_pos, axis=1)
        repeats = np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))
        clean = int(repeats[0]) if repeats.size else batch
        positions[row:row + clean] = cand_pos[:clean]
        values[row:row + clean] = pairs.values[take].reshape(batch, nonzer)[:clean]
        pairs.head += clean * nonzer
        row += clean
        if clean < batch:
            _sprnvc_one_row(pairs, nonzer, positions[row], values[row])
            row += 1
    return positions, values


def _sprnvc_one_row(pairs: _ValidPairs, nonzer: int, pos_out: np.ndarray, val_out: np.ndarray) -> None:
    """Draw-by-draw ``sprnvc`` for one row, skipping positions already taken."""
    seen: set[int] = set()
    while len(seen) < nonzer:
        pairs.ensure(1)
        pos = int(pairs.positions[pairs.head])
        val = pairs.values[pairs.head]
        pairs.head += 1
        if pos not in seen:
            pos_out[len(seen)] = pos
            val_out[len(seen)] = val
            seen.add(pos)


def vecset_all(positions: np.ndarray, values: np.ndarray, val: float = 0.5) -> SparseVectors:
    """``vecset``: set entry ``iouter`` of row iouter to ``val``, appending it when absent."""
    na, nonzer = positions.shape
    iouter = np.arange(1, na + 1, dtype=np.int64)
    hit = positions == iouter[:, None]
    values = np.where(hit, val, values)
    absent = ~hit.any(axis=1)
    pos_full = np.zeros((na, nonzer + 1), dtype=np.int64)
    val_full = np.zeros((na, nonzer + 1))
    valid = np.zeros((na, nonzer + 1), dtype=bool)
    pos_full[:, :nonzer], val_full[:, :nonzer], valid[:, :nonzer] = positions, values, True
    pos_full[absent, nonzer] = iouter[absent]
    val_full[absent, nonzer] = val
    valid[absent, nonzer] = True
    return SparseVectors(pos_full, val_full, valid)


def generate_vectors(na: int, nonzer: int, stream: LcgStream) -> SparseVectors:
    """All ``na`` outer-product vectors of ``makea``, drawn from ``stream`` (advanced in place)."""
    positions, values = sprnvc_all(na, nonzer, stream)
    return vecset_all(positions, values)


def element_triples(vectors: SparseVectors, grid: Decomposition, rcond: float,
                    shift: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``makea``'s (arow, acol, aelt) list for this rank, in the order the Fortran loops make it.

    Row k contributes v_k v_k^T scaled by ratio^(k-1): for each column entry jcol in the block
    (outer loop) and each row entry irow in the block (inner loop), aelt = v(irow) * (size * v(jcol)).
    The diagonal (rcond - shift) entries of the block follow at the end.
    """
    na = grid.na
    ratio = rcond ** (1.0 / na)
    # size before row k: the Fortran running product 1, ratio, ratio*ratio, ... (sequential rounding).
    factors = np.full(na, ratio)
    factors[0] = 1.0
    sizes = np.multiply.accumulate(factors)

    pos, val, valid = vectors.positions, vectors.values, vectors.valid
    in_rows = valid & (pos >= grid.firstrow) & (pos <= grid.lastrow)
    in_cols = valid & (pos >= grid.firstcol) & (pos <= grid.lastcol)
    rows_out, cols_out, vals_out = [], [], []
    for start in range(0, na, OUTER_CHUNK):
        blk = slice(start, min(start + OUTER_CHUNK, na))
        keep = in_cols[blk][:, :, None] & in_rows[blk][:, None, :]     # [k, ivelt(jcol), ivelt1(irow)]
        if not keep.any():
            continue
        scale = sizes[blk][:, None] * val[blk]                          # size * v(ivelt)
        elt = val[blk][:, None, :] * scale[:, :, None]                   # v(ivelt1) * scale
        shape = keep.shape
        rows_out.append(np.broadcast_to(pos[blk][:, None, :], shape)[keep])
        cols_out.append(np.broadcast_to(pos[blk][:, :, None], shape)[keep])
        vals_out.append(elt[keep])

    diag = np.arange(max(grid.firstrow, grid.firstcol), min(grid.lastrow, grid.lastcol) + 1,
                     dtype=np.int64)
    rows_out.append(diag)
    cols_out.append(diag)
    vals_out.append(np.full(diag.size, rcond - shift))
    return np.concatenate(rows_out), np.concatenate(cols_out), np.concatenate(vals_out)


def sparse_block(arow: np.ndarray, acol: np.ndarray, aelt: np.ndarray,
                 grid: Decomposition) -> sp.csr_matrix:
    """``sparse``: bucket the triples by row, sum repeated (row, col) in order, drop exact zeros.

    Entries of a row keep the order in which their column first appeared, as NPB's nzloc list does,
    so a CSR product sums each row in NPB's order. Column indices become local (col - firstcol).
    """
    nrows, ncols = grid.nrows, grid.ncols
    order = np.argsort(arow, kind="stable")                 # NPB's bucket sort is stable
    rows = arow[order] - grid.firstrow
    cols = acol[order] - grid.firstcol
    vals = aelt[order]
    keys = rows * ncols + cols
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    sums = np.bincount(inverse, weights=vals, minlength=first.size)   # sequential, in triple order
    entry_order = np.argsort(first)                          # row-major, then first appearance
    first, sums = first[entry_order], sums[entry_order]
    nonzero = sums != 0.0
    first, sums = first[nonzero], sums[nonzero]
    indptr = np.zeros(nrows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[first], minlength=nrows), out=indptr[1:])
    return sp.csr_matrix((sums, cols[first], indptr), shape=(nrows, ncols))


def makea(vectors: SparseVectors, grid: Decomposition, rcond: float, shift: float) -> sp.csr_matrix:
    """This rank's block of the CG matrix as CSR with local column indices."""
    return sparse_block(*element_triples(vectors, grid, rcond, shift), grid)
