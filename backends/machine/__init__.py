"""The machine side of prediction: machine profiles (:mod:`.profile`), the probe that measures them
(:mod:`.probe`: MultiMAPS, flop peak, triad, the vector stream curve of :mod:`.vectorstreams`, MPI
ping-pong), simulated cache hit rates (:mod:`.hitrates`) and the genetic-algorithm bandwidth fit of Tikir
et al. (:mod:`.gafit`)."""
