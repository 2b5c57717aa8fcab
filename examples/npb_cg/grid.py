"""NPB 3.4 MPI CG process grid and matrix partition (``setup_proc_info``, ``setup_submatrix_info``).

All positions are kept 1-based, exactly as in the Fortran source, so that modeling expressions can use
the NPB names unchanged; ``*_starts`` become 0-based offsets only where arrays are sliced.
The ``reduce_*`` tuples hold entry i-1 for the Fortran index i = 1..l2npcols.
"""

from __future__ import annotations

from dataclasses import dataclass

from ma_core.errors import MAError


class CGSetupError(MAError):
    """A CG run that cannot be set up: process count, class or iteration count not allowed."""


@dataclass(frozen=True)
class Decomposition:
    """Everything one rank knows about the 2-D block partition of the na x na matrix."""

    na: int
    nprocs: int
    me: int
    num_proc_rows: int
    num_proc_cols: int
    l2npcols: int
    proc_row: int
    proc_col: int
    firstrow: int
    lastrow: int
    firstcol: int
    lastcol: int
    send_start: int
    send_len: int
    exch_proc: int
    exch_recv_length: int
    reduce_exch_proc: tuple[int, ...]
    reduce_send_starts: tuple[int, ...]
    reduce_send_lengths: tuple[int, ...]
    reduce_recv_starts: tuple[int, ...]
    reduce_recv_lengths: tuple[int, ...]

    @property
    def nprows(self) -> int:
        return self.num_proc_rows

    @property
    def npcols(self) -> int:
        return self.num_proc_cols

    @property
    def naa(self) -> int:
        """NPB's vector length bound: na / num_proc_rows (work vectors hold naa+2 entries)."""
        return self.na // self.num_proc_rows

    @property
    def nrows(self) -> int:
        return self.lastrow - self.firstrow + 1

    @property
    def ncols(self) -> int:
        return self.lastcol - self.firstcol + 1


def proc_grid(nprocs: int) -> tuple[int, int]:
    """(num_proc_rows, num_proc_cols) for a power-of-two ``nprocs``; columns get the odd factor 2."""
    if nprocs < 1 or nprocs & (nprocs - 1):
        raise CGSetupError(f"Number of processes ({nprocs}) is not a power of two")
    log_p = nprocs.bit_length() - 1
    rows_log = log_p // 2
    return 1 << rows_log, 1 << (log_p - rows_log)


def _split(na: int, parts: int, index: int) -> tuple[int, int]:
    """1-based [first, last] of block ``index`` when na is cut into ``parts`` blocks, larger ones first."""
    small = na // parts
    extra = na - small * parts
    if index < extra:
        first = index * (small + 1) + 1
        return first, first + small
    first = extra * (small + 1) + (index - extra) * small + 1
    return first, first + small - 1


def decompose(na: int, nprocs: int, me: int) -> Decomposition:
    """The partition of rank ``me`` (NPB ``setup_proc_info`` + ``setup_submatrix_info``)."""
    nprows, npcols = proc_grid(nprocs)
    if not 0 <= me < nprocs:
        raise CGSetupError(f"rank {me} outside 0..{nprocs - 1}")
    if na < 2 * npcols:
        raise CGSetupError(f"na={na} is too small for {nprocs} processes")
    proc_row, proc_col = divmod(me, npcols)
    square = nprows == npcols

    # Rows are split over processor rows; columns over processor columns. When the grid is not square
    # (npcols = 2*nprows) the columns are split like the rows, then each piece is halved between an even
    # and an odd rank. If na divides evenly by npcols, every split is even (NPB's first branch).
    firstrow, lastrow = _split(na, nprows, proc_row)
    if na % npcols == 0 or square:
        firstcol, lastcol = _split(na, npcols, proc_col)
    else:
        firstcol, lastcol = _split(na, npcols // 2, proc_col // 2)
        col_size = lastcol - firstcol + 1
        if me % 2 == 0:
            lastcol = firstcol - 1 + (col_size - 1) // 2 + 1
        else:
            firstcol = firstcol + (col_size - 1) // 2 + 1
            lastcol = firstcol - 1 + col_size // 2

    nrows = lastrow - firstrow + 1
    if square:
        send_start, send_len = 1, nrows
        exch_proc = (me % nprows) * nprows + me // nprows
    else:
        if me % 2 == 0:
            send_start, send_len = 1, (1 + nrows) // 2
        else:
            send_start, send_len = (1 + nrows) // 2 + 1, nrows // 2
        exch_proc = 2 * ((me // 2) % nprows * nprows + me // 2 // nprows) + me % 2

    l2npcols = npcols.bit_length() - 1

    # Butterfly partners across the processor row: first the rank npcols/2 columns away, then npcols/4...
    reduce_exch_proc = []
    div_factor = npcols
    for _ in range(l2npcols):
        j = (proc_col + div_factor // 2) % div_factor + proc_col // div_factor * div_factor
        reduce_exch_proc.append(proc_row * npcols + j)
        div_factor //= 2

    send_starts, send_lengths, recv_lengths = [], [], []
    for i in range(1, l2npcols + 1):
        if square:
            send_starts.append(send_start)
            send_lengths.append(send_len)
            recv_lengths.append(nrows)
        else:
            recv_lengths.append(send_len)
            if i == l2npcols:
                # Last (first executed) step: each rank of the pair sends the half it does not keep.
                send_lengths.append(nrows - send_len)
                send_starts.append(send_start + send_len if me % 2 == 0 else 1)
            else:
                send_lengths.append(send_len)
                send_starts.append(send_start)

    return Decomposition(
        na=na, nprocs=nprocs, me=me, num_proc_rows=nprows, num_proc_cols=npcols, l2npcols=l2npcols,
        proc_row=proc_row, proc_col=proc_col, firstrow=firstrow, lastrow=lastrow,
        firstcol=firstcol, lastcol=lastcol, send_start=send_start, send_len=send_len,
        exch_proc=exch_proc, exch_recv_length=lastcol - firstcol + 1,
        reduce_exch_proc=tuple(reduce_exch_proc), reduce_send_starts=tuple(send_starts),
        reduce_send_lengths=tuple(send_lengths),
        reduce_recv_starts=tuple(send_start for _ in range(l2npcols)),
        reduce_recv_lengths=tuple(recv_lengths),
    )
