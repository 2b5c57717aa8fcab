"""What the CPython interpreter costs, as a model part of its own: the runtime part of a prediction.

Not a backend: a part any backend adds where a trace's language includes Python (the maps backend does). The
machine side measures it once per host into the profile's ``cpython`` section (:mod:`.section`): the cost of a
call into compiled code and NumPy's flop rate (:mod:`.probe`), of a subscript (:mod:`.subscripts`), of an
annotation site, and of an mpi4py message with work between messages (:mod:`.exchange`, run by
:mod:`.pyexchange`). :mod:`.runtime` turns them and a Python trace's counted calls and subscripts per site
(:mod:`.tracedata`) into seconds per site. A C or Fortran trace has no runtime part.
"""
