/*
 * ma_merge.h -- the merged trace of a job, written at MPI_Finalize (ma_merge.c; ma_runtime/merge.py,
 * docs/trace-format.md "Merged trace").
 *
 * SPDX-License-Identifier: BSD-3-Clause
 * Copyright (c) the Modeling Assertions SDK developers.
 */
#ifndef MA_MERGE_H
#define MA_MERGE_H

#include "ma_state.h"

#pragma GCC visibility push(hidden)

/* Collective over MPI_COMM_WORLD (every wait has a deadline). *written is 1 when this rank's numbers are in
 * <dir>/job.ma.npz (its rank file is then not needed). */
int ma_merge_job(const ma_runtime_state *rt, const char *status, const char *reason, int *written);

#pragma GCC visibility pop

#endif /* MA_MERGE_H */
