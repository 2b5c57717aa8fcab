"""What the NPB ports (CG, SP) share: MPI start, rank-aware command line, NPB's report lines, study helpers."""
