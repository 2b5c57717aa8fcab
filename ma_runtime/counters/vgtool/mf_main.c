/*--------------------------------------------------------------------*/
/*--- maflops: counts floating-point operations, loads and stores. ---*/
/*---                                                  mf_main.c   ---*/
/*--------------------------------------------------------------------*/

/*
   maflops -- a Valgrind tool of the Modeling Assertions SDK.

   Copyright (C) the Modeling Assertions SDK developers.

   This program is free software; you can redistribute it and/or
   modify it under the terms of the GNU General Public License as
   published by the Free Software Foundation; either version 2 of the
   License, or (at your option) any later version.

   This program is distributed in the hope that it will be useful, but
   WITHOUT ANY WARRANTY; without even the implied warranty of
   MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.  See the GNU
   General Public License for more details.

   You should have received a copy of the GNU General Public License
   along with this program; if not, see <http://www.gnu.org/licenses/>.

   The GNU General Public License is contained in the file LICENSE
   next to this file. (It is GPL-2 because Valgrind's tool interface,
   which this file links against, is GPL-2; the rest of the SDK is
   BSD-3-Clause.)
*/

/* How it counts.

   Every superblock's flat VEX IR is walked once, at translation time.
   Each floating-point IROp gets a static weight (lanes x ops, fused
   multiply-add = 2 per lane), split by precision; each guest
   instruction that reads (writes) memory counts one load (store), and
   the accessed sizes are summed into byte counts.  The weights of the
   statements between two side exits are added to the running totals
   by a few inline IR statements placed just before the next exit (and
   at the end of the block), so a total is exact whichever exit the
   block takes, and the cost is a handful of host instructions per
   block segment, not per guest instruction.  Guarded loads/stores add
   their bytes only when their guard holds.

   The totals are per process (Valgrind runs one thread at a time).
   Client requests (ma_vgcount.h) read them.

   The SDK fence.  MA_VG_REQ_SDK_ENTER/LEAVE bracket the SDK's own
   code (they nest: a depth per thread).  While the running thread is
   inside, what it executes is still added to the totals by the inline
   IR above (no test on the hot path), and is taken out again when it
   leaves, or when the scheduler switches to another thread: the totals
   at its entry are kept in mf_mark and the difference moves to
   mf_excluded.  Every read answers totals - excluded, and inside the
   fence the totals as they were at its entry.  The simulated caches
   see no access of the SDK's code at all (one test in their helper). */

#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_options.h"
#include "pub_tool_aspacemgr.h"
#include "pub_tool_vki.h"
#include "pub_tool_clreq.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_machine.h"
#include "pub_tool_threadstate.h"

#define MA_VG_TOOL_SIDE 1
#include "ma_vgcount.h"

#define MF_VERSION_MAJOR 0
#define MF_VERSION_MINOR 2
#define MF_VERSION_PATCH 0
#define MF_VERSION_STRING "0.2.0"

/* The running totals, indexed by enum ma_vg_counter. */
static ULong mf_totals[MA_VG_N_COUNTERS];

/*------------------------------------------------------------*/
/*--- Floating-point IROps                                 ---*/
/*------------------------------------------------------------*/

/* Flops done by one evaluation of `op`: *dp or *sp gets lanes x ops.
   Counted: add, sub, mul, div, sqrt (1 per lane) and fused
   multiply-add/sub (2 per lane), scalar ("F64", "F32", lowest-lane
   "64F0x2", "32F0x4") and packed.  Not counted: min/max, neg/abs,
   compares, conversions and rounding, reciprocal and rsqrt estimates,
   x87 transcendentals, F16/F128/decimal arithmetic. */
static void fp_weight(IROp op, UInt* dp, UInt* sp)
{
   *dp = 0;
   *sp = 0;
   switch (op) {
      /* double precision, one lane */
      case Iop_AddF64: case Iop_SubF64: case Iop_MulF64: case Iop_DivF64:
      case Iop_SqrtF64:
      case Iop_Add64F0x2: case Iop_Sub64F0x2: case Iop_Mul64F0x2:
      case Iop_Div64F0x2: case Iop_Sqrt64F0x2:
         *dp = 1; return;
      case Iop_MAddF64: case Iop_MSubF64:
         *dp = 2; return;
      /* double precision, packed */
      case Iop_Add64Fx2: case Iop_Sub64Fx2: case Iop_Mul64Fx2:
      case Iop_Div64Fx2: case Iop_Sqrt64Fx2:
         *dp = 2; return;
      case Iop_Add64Fx4: case Iop_Sub64Fx4: case Iop_Mul64Fx4:
      case Iop_Div64Fx4: case Iop_Sqrt64Fx4:
         *dp = 4; return;
      /* single precision, one lane (PowerPC's "F64r32" ops round to single) */
      case Iop_AddF32: case Iop_SubF32: case Iop_MulF32: case Iop_DivF32:
      case Iop_SqrtF32:
      case Iop_Add32F0x4: case Iop_Sub32F0x4: case Iop_Mul32F0x4:
      case Iop_Div32F0x4: case Iop_Sqrt32F0x4:
      case Iop_AddF64r32: case Iop_SubF64r32: case Iop_MulF64r32:
      case Iop_DivF64r32:
         *sp = 1; return;
      case Iop_MAddF32: case Iop_MSubF32:
      case Iop_MAddF64r32: case Iop_MSubF64r32:
         *sp = 2; return;
      /* single precision, packed */
      case Iop_Add32Fx2: case Iop_Sub32Fx2: case Iop_Mul32Fx2:
      case Iop_PwAdd32Fx2:
         *sp = 2; return;
      case Iop_Add32Fx4: case Iop_Sub32Fx4: case Iop_Mul32Fx4:
      case Iop_Div32Fx4: case Iop_Sqrt32Fx4:
         *sp = 4; return;
      case Iop_Add32Fx8: case Iop_Sub32Fx8: case Iop_Mul32Fx8:
      case Iop_Div32Fx8: case Iop_Sqrt32Fx8:
         *sp = 8; return;
      default:
         return;
   }
}

/* VEX translates ADDSUBPD/ADDSUBPS (and their AVX forms) into a full
   packed add AND a full packed sub of the same operands, then blends
   the lanes: twice the work the instruction does.  An add/sub pair of
   one shape on the same operands inside one guest instruction is that
   pattern; its partner's weight is taken back. */
static IROp addsub_partner(IROp op)
{
   switch (op) {
      case Iop_Add64Fx2: return Iop_Sub64Fx2;
      case Iop_Sub64Fx2: return Iop_Add64Fx2;
      case Iop_Add64Fx4: return Iop_Sub64Fx4;
      case Iop_Sub64Fx4: return Iop_Add64Fx4;
      case Iop_Add32Fx4: return Iop_Sub32Fx4;
      case Iop_Sub32Fx4: return Iop_Add32Fx4;
      case Iop_Add32Fx8: return Iop_Sub32Fx8;
      case Iop_Sub32Fx8: return Iop_Add32Fx8;
      default:           return Iop_INVALID;
   }
}

#define MAX_PACKED_PER_INSN 8

/* Packed add/sub ops seen in the current guest instruction. */
typedef struct {
   IROp    op;
   IRExpr* a;
   IRExpr* b;
} PackedOp;

/*------------------------------------------------------------*/
/*--- Vector metrics (ma_vg_vec_counter)                   ---*/
/*------------------------------------------------------------*/

/* Per guest instruction: its flops, the widest lane count of its FP
   ops, and the bytes it reads and writes.  VEX expands a packed FMA
   into one scalar MAdd per lane, so the number of MAdds in one guest
   instruction is its lane count too.  The instruction is classified
   (vector or scalar) when it ends, and the classification is added to
   static pending weights, flushed like the main totals. */
static ULong mf_vec_totals[MA_VG_N_VEC_COUNTERS];

/*------------------------------------------------------------*/
/*--- The SDK fence                                        ---*/
/*------------------------------------------------------------*/

static UInt*    mf_sdk_depth;                /* per thread (VG_N_THREADS): open MA_VG_REQ_SDK_ENTERs */
static ThreadId mf_running = VG_INVALID_THREADID;
static Bool     mf_in_sdk = False;           /* the running thread is inside the fence */
static ULong    mf_mark[MA_VG_N_COUNTERS], mf_vec_mark[MA_VG_N_VEC_COUNTERS];
static ULong    mf_excluded[MA_VG_N_COUNTERS], mf_vec_excluded[MA_VG_N_VEC_COUNTERS];

static void fence_close(void)
{
   Int i;
   for (i = 0; i < MA_VG_N_COUNTERS; i++)
      mf_excluded[i] += mf_totals[i] - mf_mark[i];
   for (i = 0; i < MA_VG_N_VEC_COUNTERS; i++)
      mf_vec_excluded[i] += mf_vec_totals[i] - mf_vec_mark[i];
   mf_in_sdk = False;
}

static void fence_open(void)
{
   VG_(memcpy)(mf_mark, mf_totals, sizeof mf_mark);
   VG_(memcpy)(mf_vec_mark, mf_vec_totals, sizeof mf_vec_mark);
   mf_in_sdk = True;
}

/* `tid` runs from now on: the fence follows the thread, not the process. */
static void fence_switch_to(ThreadId tid)
{
   if (tid == mf_running)
      return;
   if (mf_in_sdk)
      fence_close();
   mf_running = tid;
   if (tid < VG_N_THREADS && mf_sdk_depth[tid] > 0)
      fence_open();
}

static void mf_start_client_code(ThreadId tid, ULong blocks_done)
{
   fence_switch_to(tid);
}

/* A thread id is reused after its thread exits: the new thread starts outside the fence. */
static void mf_thread_created(ThreadId parent, ThreadId child)
{
   if (child < VG_N_THREADS)
      mf_sdk_depth[child] = 0;
}

static void fence_request(ThreadId tid, Bool enter)
{
   if (tid >= VG_N_THREADS)
      return;
   fence_switch_to(tid);
   if (enter) {
      if (mf_sdk_depth[tid]++ == 0)
         fence_open();
   } else if (mf_sdk_depth[tid] > 0 && --mf_sdk_depth[tid] == 0) {
      fence_close();
   }
}

/* The program's totals: what ran outside the fence (inside it, as they were at its entry). */
static void program_totals(ULong* out, const ULong* totals, const ULong* mark, const ULong* excluded, Int n)
{
   Int i;
   for (i = 0; i < n; i++)
      out[i] = (mf_in_sdk ? mark[i] : totals[i]) - excluded[i];
}

typedef struct {
   ULong pending[MA_VG_N_VEC_COUNTERS];
   UInt  insn_flops;
   UInt  insn_lanes;
   UInt  insn_madds;
   UInt  insn_load_bytes;
   UInt  insn_store_bytes;
} VecSB;

static Bool is_scalar_madd(IROp op)
{
   switch (op) {
      case Iop_MAddF64: case Iop_MSubF64: case Iop_MAddF32: case Iop_MSubF32:
      case Iop_MAddF64r32: case Iop_MSubF64r32:
         return True;
      default:
         return False;
   }
}

/* One FP op of `weight` flops (lanes x ops) in the current instruction. */
static void vec_note_fp(VecSB* v, IROp op, UInt weight)
{
   v->insn_flops += weight;
   if (is_scalar_madd(op))
      v->insn_madds++;
   else if (weight > v->insn_lanes)
      v->insn_lanes = weight;
}

/* Bytes are summed over the instruction: VEX reads the memory operand of
   a packed FMA lane by lane. */
static void vec_note_access(VecSB* v, Bool is_store, UInt size)
{
   *(is_store ? &v->insn_store_bytes : &v->insn_load_bytes) += size;
}

/* The current guest instruction is over: classify it. */
static void vec_end_insn(VecSB* v)
{
   UInt lanes = v->insn_lanes > v->insn_madds ? v->insn_lanes : v->insn_madds;
   if (v->insn_flops > 0) {
      if (lanes >= 2) {
         v->pending[MA_VG_VEC_FLOPS] += v->insn_flops;
         v->pending[MA_VG_VEC_FP_INSNS] += 1;
         v->pending[MA_VG_VEC_LANES] += lanes;
      } else {
         v->pending[MA_VG_SCALAR_FLOPS] += v->insn_flops;
      }
   }
   if (v->insn_load_bytes > 0)
      v->pending[v->insn_load_bytes >= MA_VG_VECTOR_BYTES ? MA_VG_VEC_LOADS : MA_VG_SCALAR_LOADS] += 1;
   if (v->insn_store_bytes > 0)
      v->pending[v->insn_store_bytes >= MA_VG_VECTOR_BYTES ? MA_VG_VEC_STORES : MA_VG_SCALAR_STORES] += 1;
   v->insn_flops = v->insn_lanes = v->insn_madds = 0;
   v->insn_load_bytes = v->insn_store_bytes = 0;
}

/*------------------------------------------------------------*/
/*--- Instrumentation state for one superblock              ---*/
/*------------------------------------------------------------*/

typedef struct {
   IRSB*    out;
   ULong    pending[MA_VG_N_COUNTERS]; /* static weights not yet added */
   Bool     insn_loads;                /* current guest insn already counted a load */
   Bool     insn_stores;
   PackedOp packed[MAX_PACKED_PER_INSN];
   Int      n_packed;
   VecSB    vec;                       /* vector metrics */
} SBState;

/* mf_totals[which] += amount (an I64 atom) */
static void emit_add_to(IRSB* out, ULong* counter, IRExpr* amount)
{
   IRExpr* addr = mkIRExpr_HWord((HWord)counter);
   IRTemp old = newIRTemp(out->tyenv, Ity_I64);
   IRTemp sum = newIRTemp(out->tyenv, Ity_I64);
   addStmtToIRSB(out, IRStmt_WrTmp(old, IRExpr_Load(Iend_LE, Ity_I64, addr)));
   addStmtToIRSB(out, IRStmt_WrTmp(sum, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(old), amount)));
   addStmtToIRSB(out, IRStmt_Store(Iend_LE, addr, IRExpr_RdTmp(sum)));
}

static void emit_add(IRSB* out, Int which, IRExpr* amount)
{
   emit_add_to(out, &mf_totals[which], amount);
}

/* Add the pending static weights; called before every side exit and at the end. */
static void flush_pending(SBState* s)
{
   Int i;
   for (i = 0; i < MA_VG_N_COUNTERS; i++) {
      if (s->pending[i] != 0) {
         emit_add(s->out, i, IRExpr_Const(IRConst_U64(s->pending[i])));
         s->pending[i] = 0;
      }
   }
   vec_end_insn(&s->vec);
   for (i = 0; i < MA_VG_N_VEC_COUNTERS; i++) {
      if (s->vec.pending[i] != 0) {
         emit_add_to(s->out, &mf_vec_totals[i], IRExpr_Const(IRConst_U64(s->vec.pending[i])));
         s->vec.pending[i] = 0;
      }
   }
}

/* bytes counter += (guard ? size : 0), at this point of the block */
static void emit_guarded_bytes(SBState* s, Int which, IRExpr* guard, UInt size)
{
   IRTemp amount = newIRTemp(s->out->tyenv, Ity_I64);
   addStmtToIRSB(s->out, IRStmt_WrTmp(amount,
      IRExpr_ITE(guard, IRExpr_Const(IRConst_U64(size)), IRExpr_Const(IRConst_U64(0)))));
   emit_add(s->out, which, IRExpr_RdTmp(amount));
}

static Bool guard_always_true(IRExpr* guard)
{
   return guard == NULL
          || (guard->tag == Iex_Const && guard->Iex.Const.con->tag == Ico_U1
              && guard->Iex.Const.con->Ico.U1);
}

/* One memory access of `size` bytes by the current guest instruction. */
static void note_access(SBState* s, Bool is_store, UInt size, IRExpr* guard)
{
   Bool* seen = is_store ? &s->insn_stores : &s->insn_loads;
   vec_note_access(&s->vec, is_store, size);
   if (!*seen) {
      s->pending[is_store ? MA_VG_STORES : MA_VG_LOADS] += 1;
      *seen = True;
   }
   if (guard_always_true(guard))
      s->pending[is_store ? MA_VG_STORE_BYTES : MA_VG_LOAD_BYTES] += size;
   else
      emit_guarded_bytes(s, is_store ? MA_VG_STORE_BYTES : MA_VG_LOAD_BYTES, guard, size);
}

/* The flops of `e` (the right-hand side of a WrTmp in flat IR). */
static void note_expr(SBState* s, IRExpr* e)
{
   IROp op;
   IRExpr *a = NULL, *b = NULL;
   UInt dp, sp;

   switch (e->tag) {
      case Iex_Unop:  op = e->Iex.Unop.op; break;
      case Iex_Binop: op = e->Iex.Binop.op; a = e->Iex.Binop.arg1; b = e->Iex.Binop.arg2; break;
      case Iex_Triop: op = e->Iex.Triop.details->op;
                      a = e->Iex.Triop.details->arg2; b = e->Iex.Triop.details->arg3; break;
      case Iex_Qop:   op = e->Iex.Qop.details->op; break;
      default:        return;
   }
   fp_weight(op, &dp, &sp);
   if (dp == 0 && sp == 0)
      return;
   s->pending[MA_VG_DP_FLOPS] += dp;
   s->pending[MA_VG_SP_FLOPS] += sp;
   vec_note_fp(&s->vec, op, dp + sp);

   IROp partner = addsub_partner(op);
   if (partner == Iop_INVALID || a == NULL)
      return;
   Int i;
   for (i = 0; i < s->n_packed; i++) {
      PackedOp* p = &s->packed[i];
      if (p->op == partner && eqIRAtom(p->a, a) && eqIRAtom(p->b, b)) {
         s->pending[MA_VG_DP_FLOPS] -= dp; /* an ADDSUB: this half was already counted */
         s->pending[MA_VG_SP_FLOPS] -= sp;
         s->vec.insn_flops -= dp + sp;
         p->op = Iop_INVALID;
         return;
      }
   }
   if (s->n_packed < MAX_PACKED_PER_INSN) {
      s->packed[s->n_packed].op = op;
      s->packed[s->n_packed].a = a;
      s->packed[s->n_packed].b = b;
      s->n_packed++;
   }
}

static UInt loadg_size(IRLoadGOp cvt)
{
   IRType wide, narrow;
   typeOfIRLoadGOp(cvt, &wide, &narrow);
   return sizeofIRType(narrow);
}

static void note_stmt(SBState* s, IRTypeEnv* tyenv, IRStmt* st)
{
   switch (st->tag) {
      case Ist_IMark:
         vec_end_insn(&s->vec);
         s->insn_loads = s->insn_stores = False;
         s->n_packed = 0;
         break;
      case Ist_WrTmp: {
         IRExpr* data = st->Ist.WrTmp.data;
         if (data->tag == Iex_Load)
            note_access(s, False, sizeofIRType(data->Iex.Load.ty), NULL);
         else
            note_expr(s, data);
         break;
      }
      case Ist_Store:
         note_access(s, True, sizeofIRType(typeOfIRExpr(tyenv, st->Ist.Store.data)), NULL);
         break;
      case Ist_LoadG: {
         IRLoadG* lg = st->Ist.LoadG.details;
         note_access(s, False, loadg_size(lg->cvt), lg->guard);
         break;
      }
      case Ist_StoreG: {
         IRStoreG* sg = st->Ist.StoreG.details;
         note_access(s, True, sizeofIRType(typeOfIRExpr(tyenv, sg->data)), sg->guard);
         break;
      }
      case Ist_CAS: {
         IRCAS* cas = st->Ist.CAS.details;
         UInt size = sizeofIRType(typeOfIRExpr(tyenv, cas->dataLo)) * (cas->dataHi ? 2 : 1);
         note_access(s, False, size, NULL);
         note_access(s, True, size, NULL);
         break;
      }
      case Ist_LLSC:
         if (st->Ist.LLSC.storedata == NULL)
            note_access(s, False, sizeofIRType(typeOfIRTemp(tyenv, st->Ist.LLSC.result)), NULL);
         else
            note_access(s, True, sizeofIRType(typeOfIRExpr(tyenv, st->Ist.LLSC.storedata)), NULL);
         break;
      case Ist_Dirty: {
         IRDirty* d = st->Ist.Dirty.details;
         if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
            note_access(s, False, d->mSize, d->guard);
         if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
            note_access(s, True, d->mSize, d->guard);
         break;
      }
      default:
         break;
   }
}


/*------------------------------------------------------------*/
/*--- Cache simulation (--ma-cache)                        ---*/
/*------------------------------------------------------------*/

/* With --ma-cache=SIZE:WAYS:LINE[,SIZE:WAYS:LINE...] (bytes, innermost
   level first) every load and store goes through a simulated hierarchy
   of set-associative LRU caches: each line of the first level's line
   size that an access touches is looked up level by level; a miss fills
   the line into that level and the lookup goes on outwards, a hit stops
   it (the fill-on-miss, no-back-invalidation hierarchy pycachesim
   simulates for the machine profile).  Stores allocate like loads.  The
   tool counts line accesses and the accesses each level served;
   MA_VG_REQ_CACHE_READ reads them, so a region's cumulative hit rates
   are differences of two reads. */

typedef struct {
   ULong sets;
   UInt  ways;
   UInt  line_shift;
   ULong* tags;   /* sets x ways line numbers, most recently used first; ~0 = empty */
} MfCacheLevel;

static MfCacheLevel mf_cache[MA_VG_CACHE_MAX_LEVELS];
static Int mf_cache_levels = 0;
static const HChar* mf_cache_option = NULL;
/* [0] line accesses, [1 + i] accesses served by level i */
static ULong mf_cache_counts[1 + MA_VG_CACHE_MAX_LEVELS];

/* Look `addr` up in level `lv`: True on a hit (made most recent), else
   the line is filled in as most recent and the least recent one leaves. */
static Bool cache_touch(MfCacheLevel* lv, Addr addr)
{
   ULong line = (ULong)addr >> lv->line_shift;
   ULong* row = lv->tags + (line % lv->sets) * lv->ways;
   UInt j;
   for (j = 0; j < lv->ways; j++) {
      if (row[j] == line) {
         for (; j > 0; j--)
            row[j] = row[j - 1];
         row[0] = line;
         return True;
      }
   }
   for (j = lv->ways - 1; j > 0; j--)
      row[j] = row[j - 1];
   row[0] = line;
   return False;
}

static VG_REGPARM(2) void mf_cache_access(Addr addr, HWord size)
{
   UInt shift = mf_cache[0].line_shift;
   Addr line, last;
   if (size == 0 || mf_in_sdk)
      return;
   last = (addr + size - 1) >> shift;
   for (line = addr >> shift; line <= last; line++) {
      Int i;
      mf_cache_counts[0]++;
      for (i = 0; i < mf_cache_levels; i++) {
         if (cache_touch(&mf_cache[i], line << shift)) {
            mf_cache_counts[1 + i]++;
            break;
         }
      }
   }
}

/* A call of mf_cache_access(addr, size) before the statement, under `guard`. */
static void cache_instrument_access(IRSB* out, IRExpr* addr, UInt size, IRExpr* guard)
{
   IRDirty* di = unsafeIRDirty_0_N(2, "mf_cache_access", VG_(fnptr_to_fnentry)(&mf_cache_access),
                                   mkIRExprVec_2(addr, mkIRExpr_HWord(size)));
   if (!guard_always_true(guard))
      di->guard = guard;
   addStmtToIRSB(out, IRStmt_Dirty(di));
}

static void cache_instrument_stmt(IRSB* out, IRTypeEnv* tyenv, IRStmt* st)
{
   switch (st->tag) {
      case Ist_WrTmp:
         if (st->Ist.WrTmp.data->tag == Iex_Load)
            cache_instrument_access(out, st->Ist.WrTmp.data->Iex.Load.addr,
                                    sizeofIRType(st->Ist.WrTmp.data->Iex.Load.ty), NULL);
         break;
      case Ist_Store:
         cache_instrument_access(out, st->Ist.Store.addr,
                                 sizeofIRType(typeOfIRExpr(tyenv, st->Ist.Store.data)), NULL);
         break;
      case Ist_LoadG:
         cache_instrument_access(out, st->Ist.LoadG.details->addr, loadg_size(st->Ist.LoadG.details->cvt),
                                 st->Ist.LoadG.details->guard);
         break;
      case Ist_StoreG:
         cache_instrument_access(out, st->Ist.StoreG.details->addr,
                                 sizeofIRType(typeOfIRExpr(tyenv, st->Ist.StoreG.details->data)),
                                 st->Ist.StoreG.details->guard);
         break;
      case Ist_CAS: {
         IRCAS* cas = st->Ist.CAS.details;
         cache_instrument_access(out, cas->addr,
                                 sizeofIRType(typeOfIRExpr(tyenv, cas->dataLo)) * (cas->dataHi ? 2 : 1), NULL);
         break;
      }
      case Ist_Dirty: {
         IRDirty* d = st->Ist.Dirty.details;
         if (d->mFx != Ifx_None && d->mAddr != NULL && d->mSize > 0)
            cache_instrument_access(out, d->mAddr, d->mSize, d->guard);
         break;
      }
      default:
         break;
   }
}

/* "SIZE:WAYS:LINE,..." -> mf_cache; a bad value ends the run with a message naming it. */
static void cache_configure(const HChar* text)
{
   const HChar* p = text;
   while (*p != '\0') {
      HChar* end;
      Long size, ways, line;
      MfCacheLevel* lv;
      UInt shift = 0;
      if (mf_cache_levels == MA_VG_CACHE_MAX_LEVELS)
         VG_(fmsg_bad_option)("--ma-cache", "at most %d levels\n", MA_VG_CACHE_MAX_LEVELS);
      size = VG_(strtoll10)(p, &end);
      if (*end != ':') VG_(fmsg_bad_option)("--ma-cache", "expected SIZE:WAYS:LINE in '%s'\n", text);
      ways = VG_(strtoll10)(end + 1, &end);
      if (*end != ':') VG_(fmsg_bad_option)("--ma-cache", "expected SIZE:WAYS:LINE in '%s'\n", text);
      line = VG_(strtoll10)(end + 1, &end);
      if ((*end != ',' && *end != '\0') || size <= 0 || ways <= 0 || line <= 0 || (line & (line - 1)) != 0
          || size % (ways * line) != 0)
         VG_(fmsg_bad_option)("--ma-cache", "level %d of '%s': sizes must be positive, the line a power of 2 "
                              "and the size a whole number of sets (ways x line)\n", mf_cache_levels + 1, text);
      if (mf_cache_levels > 0 && line < (1L << mf_cache[0].line_shift))
         VG_(fmsg_bad_option)("--ma-cache", "outer levels cannot have shorter lines than the first\n");
      while ((1L << shift) < line)
         shift++;
      lv = &mf_cache[mf_cache_levels++];
      lv->ways = (UInt)ways;
      lv->sets = (ULong)(size / (ways * line));
      lv->line_shift = shift;
      lv->tags = VG_(malloc)("maflops.cache", lv->sets * lv->ways * sizeof(ULong));
      VG_(memset)(lv->tags, 0xff, lv->sets * lv->ways * sizeof(ULong));
      p = *end == ',' ? end + 1 : end;
   }
}

static Bool mf_process_cmd_line_option(const HChar* arg)
{
   if VG_STR_CLO(arg, "--ma-cache", mf_cache_option) {}
   else
      return False;
   return True;
}

static void mf_print_usage(void)
{
   VG_(printf)("    --ma-cache=SIZE:WAYS:LINE[,...]  simulate these LRU caches (bytes, innermost first)\n");
}

static void mf_print_debug_usage(void)
{
}

static Bool cache_read_request(UWord* arg, UWord* ret)
{
   ULong values[MA_VG_CACHE_VALUES];
   Addr out = (Addr)arg[1];
   SizeT n = (arg[2] < sizeof values ? arg[2] : sizeof values) / sizeof(ULong);
   Int i;
   if (mf_cache_levels == 0 || out == 0
       || !VG_(am_is_valid_for_client)(out, n * sizeof(ULong), VKI_PROT_WRITE)) {
      *ret = 0;
      return True;
   }
   VG_(memset)(values, 0, sizeof values);
   values[0] = (ULong)mf_cache_levels;
   for (i = 0; i <= mf_cache_levels; i++)
      values[1 + i] = mf_cache_counts[i];
   VG_(memcpy)((void*)out, values, n * sizeof(ULong));
   *ret = n;
   return True;
}

static
IRSB* mf_instrument(VgCallbackClosure* closure,
                    IRSB* sbIn,
                    const VexGuestLayout* layout,
                    const VexGuestExtents* vge,
                    const VexArchInfo* archinfo_host,
                    IRType gWordTy, IRType hWordTy)
{
   SBState s;
   Int i;

   VG_(memset)(&s, 0, sizeof s);
   s.out = deepCopyIRSBExceptStmts(sbIn);

   for (i = 0; i < sbIn->stmts_used; i++) {
      IRStmt* st = sbIn->stmts[i];
      if (st == NULL || st->tag == Ist_NoOp)
         continue;
      note_stmt(&s, sbIn->tyenv, st);
      if (mf_cache_levels > 0)
         cache_instrument_stmt(s.out, sbIn->tyenv, st);
      if (st->tag == Ist_Exit)
         flush_pending(&s); /* what ran before a taken exit is counted */
      addStmtToIRSB(s.out, st);
   }
   flush_pending(&s);
   return s.out;
}

/*------------------------------------------------------------*/
/*--- Client requests                                      ---*/
/*------------------------------------------------------------*/

/* Copy `n_totals` totals to the client's buffer (arg[1], arg[2] bytes); the number copied, 0 if unusable. */
static UWord copy_totals_to_client(const UWord* arg, const ULong* totals, SizeT n_totals)
{
   Addr out = (Addr)arg[1];
   SizeT n = arg[2] / sizeof(ULong) < n_totals ? arg[2] / sizeof(ULong) : n_totals;
   if (out == 0 || !VG_(am_is_valid_for_client)(out, n * sizeof(ULong), VKI_PROT_WRITE))
      return 0;
   VG_(memcpy)((void*)out, totals, n * sizeof(ULong));
   return n;
}

static Bool mf_handle_client_request(ThreadId tid, UWord* arg, UWord* ret)
{
   Int i;
   ULong totals[MA_VG_N_COUNTERS], vec[MA_VG_N_VEC_COUNTERS];
   if (!VG_IS_TOOL_USERREQ('M', 'F', arg[0]))
      return False;

   switch (arg[0]) {
      case MA_VG_REQ_PING:
         *ret = MA_VG_MAGIC;
         return True;
      case MA_VG_REQ_VERSION:
         *ret = MF_VERSION_MAJOR * 10000 + MF_VERSION_MINOR * 100 + MF_VERSION_PATCH;
         return True;
      case MA_VG_REQ_CORE_VERSION:
         *ret = __VALGRIND_MAJOR__ * 100 + __VALGRIND_MINOR__;
         return True;
      case MA_VG_REQ_SUM: {
         ULong sum = 0;
         program_totals(totals, mf_totals, mf_mark, mf_excluded, MA_VG_N_COUNTERS);
         for (i = 0; i < MA_VG_N_COUNTERS; i++)
            if (arg[1] & (1UL << i))
               sum += totals[i];
         *ret = sum;
         return True;
      }
      case MA_VG_REQ_READ:
         program_totals(totals, mf_totals, mf_mark, mf_excluded, MA_VG_N_COUNTERS);
         *ret = copy_totals_to_client(arg, totals, MA_VG_N_COUNTERS);
         return True;
      case MA_VG_REQ_CACHE_READ:
         return cache_read_request(arg, ret);
      case MA_VG_REQ_VEC_READ:
         program_totals(vec, mf_vec_totals, mf_vec_mark, mf_vec_excluded, MA_VG_N_VEC_COUNTERS);
         *ret = copy_totals_to_client(arg, vec, MA_VG_N_VEC_COUNTERS);
         return True;
      case MA_VG_REQ_SDK_ENTER:
      case MA_VG_REQ_SDK_LEAVE:
         fence_request(tid, arg[0] == MA_VG_REQ_SDK_ENTER);
         *ret = 0;
         return True;
      default:
         VG_(message)(Vg_UserMsg, "maflops: unknown client request 0x%lx\n", arg[0]);
         *ret = 0;
         return True;
   }
}

/*------------------------------------------------------------*/
/*--- Setup and finalisation                               ---*/
/*------------------------------------------------------------*/

static void mf_post_clo_init(void)
{
   mf_sdk_depth = VG_(calloc)("maflops.fence", VG_N_THREADS, sizeof(UInt));
   if (mf_cache_option != NULL)
      cache_configure(mf_cache_option);
}

/* Totals of the whole run (the program's: the SDK's own code left out), unless -q. */
static void mf_fini(Int exitcode)
{
   ULong t[MA_VG_N_COUNTERS], v[MA_VG_N_VEC_COUNTERS];
   if (VG_(clo_verbosity) == 0)
      return;
   if (mf_in_sdk)
      fence_close();
   program_totals(t, mf_totals, mf_mark, mf_excluded, MA_VG_N_COUNTERS);
   program_totals(v, mf_vec_totals, mf_vec_mark, mf_vec_excluded, MA_VG_N_VEC_COUNTERS);
   VG_(umsg)("dp_flops:    %'llu\n", t[MA_VG_DP_FLOPS]);
   VG_(umsg)("sp_flops:    %'llu\n", t[MA_VG_SP_FLOPS]);
   VG_(umsg)("loads:       %'llu (%'llu bytes)\n", t[MA_VG_LOADS], t[MA_VG_LOAD_BYTES]);
   VG_(umsg)("stores:      %'llu (%'llu bytes)\n", t[MA_VG_STORES], t[MA_VG_STORE_BYTES]);
   VG_(umsg)("vector:      %'llu flops in %'llu instructions (%'llu lanes), %'llu loads, %'llu stores\n",
             v[MA_VG_VEC_FLOPS], v[MA_VG_VEC_FP_INSNS], v[MA_VG_VEC_LANES], v[MA_VG_VEC_LOADS], v[MA_VG_VEC_STORES]);
   VG_(umsg)("scalar:      %'llu flops, %'llu loads, %'llu stores\n", v[MA_VG_SCALAR_FLOPS],
             v[MA_VG_SCALAR_LOADS], v[MA_VG_SCALAR_STORES]);
   VG_(umsg)("in the SDK:  %'llu flops, %'llu loads, %'llu stores (left out above)\n",
             mf_excluded[MA_VG_DP_FLOPS] + mf_excluded[MA_VG_SP_FLOPS], mf_excluded[MA_VG_LOADS],
             mf_excluded[MA_VG_STORES]);
}

static void mf_pre_clo_init(void)
{
   VG_(details_name)("maflops");
   VG_(details_version)(MF_VERSION_STRING);
   VG_(details_description)("floating-point and memory-operation counter of the MA SDK");
   VG_(details_copyright_author)(
      "Copyright (C) the Modeling Assertions SDK developers; GNU GPL'd.");
   VG_(details_bug_reports_to)("the Modeling Assertions SDK issue tracker");
   VG_(details_avg_translation_sizeB)(275);

   VG_(basic_tool_funcs)(mf_post_clo_init, mf_instrument, mf_fini);
   VG_(needs_client_requests)(mf_handle_client_request);
   VG_(track_start_client_code)(mf_start_client_code);
   VG_(track_pre_thread_ll_create)(mf_thread_created);
   VG_(needs_command_line_options)(mf_process_cmd_line_option, mf_print_usage, mf_print_debug_usage);
}

VG_DETERMINE_INTERFACE_VERSION(mf_pre_clo_init)

/*--------------------------------------------------------------------*/
/*--- end                                                mf_main.c ---*/
/*--------------------------------------------------------------------*/
