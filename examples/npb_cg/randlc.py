"""NPB's linear congruential generator ``randlc``, exact in integer arithmetic.

NPB defines ``randlc(x, a)``: x <- a*x mod 2^46, return x * 2^-46. Fortran emulates the 46-bit product
with split doubles; here the state is an integer, so every draw is exact. ``LcgStream`` produces long
runs of the same sequence with NumPy: x_k = a^k * x_0 mod 2^46, where uint64 products wrap modulo
2^64 and 2^46 divides 2^64, so masking the wrapped product gives the exact residue.
"""

from __future__ import annotations

import numpy as np

MODULUS_BITS = 46
MODULUS = 1 << MODULUS_BITS
MASK = MODULUS - 1
R46 = 2.0 ** -MODULUS_BITS       # exact power of two: state * R46 is exact for state < 2^53
SEED = 314159265                 # NPB CG ``tran``
MULTIPLIER = 1220703125          # NPB ``amult`` = 5^13


def randlc(x: int, a: int = MULTIPLIER) -> tuple[int, float]:
    """One NPB draw: returns the new state ``a*x mod 2^46`` and its value ``state * 2^-46``."""
    if not (0 <= x < MODULUS and 0 < a < MODULUS):
        raise ValueError(f"randlc needs 0 <= x < 2^46 and 0 < a < 2^46, got x={x}, a={a}")
    x = (a * x) & MASK
    return x, x * R46


def multiplier_powers(a: int, count: int) -> np.ndarray:
    """``[a^1, a^2, ..., a^count] mod 2^46`` as uint64, by repeated doubling of the filled prefix."""
    powers = np.empty(count, dtype=np.uint64)
    powers[0] = a & MASK
    filled = 1
    mask = np.uint64(MASK)
    while filled < count:
        step = min(filled, count - filled)
        # powers[k] * a^filled = a^(k+1+filled), stored at index k+filled.
        np.multiply(powers[:step], powers[filled - 1], out=powers[filled:filled + step])
        np.bitwise_and(powers[filled:filled + step], mask, out=powers[filled:filled + step])
        filled += step
    return powers


class LcgStream:
    """The randlc sequence from a given state, drawn in vectorised blocks (exact)."""

    def __init__(self, state: int = SEED, a: int = MULTIPLIER, block: int = 1 << 20) -> None:
        if not (0 <= state < MODULUS):
            raise ValueError(f"LCG state must be in [0, 2^46), got {state}")
        self.state = state
        self.a = a
        self._powers = multiplier_powers(a, block)

    def next_states(self, count: int) -> np.ndarray:
        """The next ``count`` states (uint64, each < 2^46); advances the stream."""
        out = np.empty(count, dtype=np.uint64)
        mask = np.uint64(MASK)
        done = 0
        while done < count:
            n = min(count - done, self._powers.size)
            chunk = out[done:done + n]
            np.multiply(self._powers[:n], np.uint64(self.state), out=chunk)
            np.bitwise_and(chunk, mask, out=chunk)
            self.state = int(chunk[-1])
            done += n
        return out

    def next_values(self, count: int) -> np.ndarray:
        """The next ``count`` randlc return values (float64 in (0, 1))."""
        return self.next_states(count).astype(np.float64) * R46

    def skip(self, count: int) -> None:
        """Advance ``count`` draws without materialising them (a^count by modular exponentiation)."""
        self.state = (pow(self.a, count, MODULUS) * self.state) & MASK
