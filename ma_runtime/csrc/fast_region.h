/* The annotations' common path in C (fast_region.c), installed over the Cython one by annotations.py. */
#ifndef MA_FAST_REGION_H
#define MA_FAST_REGION_H

#include <Python.h>

struct MaRegionObject;
struct MaNodeObject;
struct MaThreadStateObject;

/* annotations.py's complete(): folds a call that does not repeat its site's previous one. */
typedef void (*ma_complete_fn)(struct MaRegionObject *, struct MaNodeObject *);

/* Takes over Region.__enter__/__exit__ and the module's *_call factories (listed in `factories` as
 * (name, class, kind) tuples); the Cython versions stay behind them for every call off the common path.
 * `constants` lists annotations.py's kind and verdict codes, checked against this file's copies. */
int ma_fast_install(PyObject *module, PyTypeObject *region_type, unsigned long main_thread,
                    ma_complete_fn complete, PyObject *factories, PyObject *constants);

/* The main thread's state, once annotations.py has made it (it keeps the reference). */
void ma_fast_adopt_main_state(struct MaThreadStateObject *state);

/* The buffer of the PMPI library's totals (a memoryview of uint64). */
static inline const unsigned long long *ma_view_data(PyObject *view)
{
    return (const unsigned long long *)PyMemoryView_GET_BUFFER(view)->buf;
}

#endif
