/* Cache-hierarchy simulation with prefetchers, for the hit rates of `ma machine probe` (hitrates.py).
 *
 * Why not pycachesim alone: it has no prefetcher, and a prefetch cannot be injected into its address stream
 * without being counted as a load at every level it reaches (its counters do not tell demand from prefetch
 * requests). This simulator keeps pycachesim's model of the hierarchy -- set-associative levels, LRU, FIFO, MRU
 * or random replacement, a miss filling every level it passed, no write traffic -- and adds, per level, the
 * hardware prefetchers x86 cores have (Smith's tagged prefetching; Chen & Baer's stride table):
 *
 *   next_line  a demand miss, or the first demand hit on a line this level prefetched, fetches the `degree`
 *              lines from `distance` lines on (a sequential stream stays ahead of its loads)
 *   adjacent   a demand miss fetches the other line of its aligned pair (the "spatial"/"buddy" prefetcher)
 *   stride     a table of streams, one per 4 KiB page, learns the distance between successive accesses that
 *              reach the level; once the same distance is seen twice, each access to a new line fetches the
 *              lines `distance` .. `distance + degree - 1` strides ahead (strides below a line step by lines)
 *
 * A level indexed by physical address (`physical`) sees every 4 KiB page at a random frame -- the same frame
 * for a page at every such level and throughout the run -- as the OS hands out frames: the pages of an array
 * land in the cache's page colours at random, and some sets overflow before the array reaches the cache's
 * size. A level whose sets span one page (sets x line <= 4 KiB) is indexed the same either way.
 *
 * No prefetch leaves the page of the access that triggered it (hardware prefetchers work on physical addresses
 * and stop at page boundaries). A prefetch fills the level that issued it and the levels below it down to where
 * the line was found; prefetches are not counted as loads or hits: hit counts are of demand loads only.
 * With every prefetcher off the hit counts equal pycachesim's for LRU (tests/test_machine_hitsim.py). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { HS_FIFO = 0, HS_LRU = 1, HS_MRU = 2, HS_RR = 3 }; /* pycachesim's numbering */
enum { HS_PF_NONE = 0, HS_PF_NEXT_LINE = 1, HS_PF_ADJACENT = 2, HS_PF_STRIDE = 3 };

#define HS_STREAMS 64 /* stride table entries (direct-mapped by page) */
#define HS_PAGE_BITS 12
#define HS_PREFETCHED (1ULL << 63)

typedef struct { /* one level's description; mirrored by ctypes in hitrates.py */
    uint64_t sets, ways, line_bytes;
    int32_t policy, prefetch, degree, distance;
    int32_t physical; /* indexed by physical address: pages placed in random frames */
    int32_t reserved;
} ma_hs_level_config;

typedef struct {
    uint64_t page; /* page number + 1 (0: empty) */
    uint64_t last; /* byte address of the last access seen in the page */
    int64_t stride;
    int32_t confident;
} stream;

typedef struct {
    ma_hs_level_config cfg;
    unsigned shift;      /* log2(line_bytes) */
    /* sets x ways entries: line number + 1 (0: invalid), the top bit set while the line is one this level
     * prefetched and no load has used yet. A set keeps its entries in order of last use (LRU, MRU) or of
     * insertion (FIFO), the newest first, as pycachesim does: no time stamps to read and write. */
    uint64_t *tag;
    uint64_t set_mask; /* sets - 1 when sets is a power of two, else 0 (then a division) */
    stream streams[HS_STREAMS];
    uint64_t hits, prefetches;
} level;

typedef struct {
    int n;
    level *levels;
    uint64_t loads, rng;
} ma_hs;

static uint64_t next_random(ma_hs *s) { /* xorshift64* */
    s->rng ^= s->rng >> 12;
    s->rng ^= s->rng << 25;
    s->rng ^= s->rng >> 27;
    return s->rng * 2685821657736338717ULL;
}

void ma_hs_free(ma_hs *s) {
    if (!s)
        return;
    for (int i = 0; i < s->n; i++) {
        free(s->levels[i].tag);
    }
    free(s->levels);
    free(s);
}

/* NULL when a level is malformed (zero sets or ways, a line that is not a power of two) or memory runs out. */
ma_hs *ma_hs_new(const ma_hs_level_config *config, int n, uint64_t seed) {
    ma_hs *s = calloc(1, sizeof *s);
    if (!s || n < 1 || !(s->levels = calloc((size_t)n, sizeof(level)))) {
        free(s);
        return NULL;
    }
    s->n = n;
    s->rng = seed ? seed : 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < n; i++) {
        level *l = &s->levels[i];
        l->cfg = config[i];
        uint64_t line = l->cfg.line_bytes, slots = l->cfg.sets * l->cfg.ways;
        if (!l->cfg.sets || !l->cfg.ways || !line || (line & (line - 1))) {
            ma_hs_free(s);
            return NULL;
        }
        while ((1ULL << l->shift) < line)
            l->shift++;
        l->set_mask = (l->cfg.sets & (l->cfg.sets - 1)) ? 0 : l->cfg.sets - 1;
        l->tag = calloc(slots, sizeof *l->tag);
        if (!l->tag) {
            ma_hs_free(s);
            return NULL;
        }
    }
    return s;
}

void ma_hs_reset_stats(ma_hs *s) {
    s->loads = 0;
    for (int i = 0; i < s->n; i++)
        s->levels[i].hits = s->levels[i].prefetches = 0;
}

uint64_t ma_hs_loads(const ma_hs *s) { return s->loads; }

void ma_hs_counts(const ma_hs *s, uint64_t *hits, uint64_t *prefetches) {
    for (int i = 0; i < s->n; i++) {
        hits[i] = s->levels[i].hits;
        prefetches[i] = s->levels[i].prefetches;
    }
}

/* A bijection of page numbers (below 2^52): xor-shifts and an odd multiplier, each invertible. */
static uint64_t frame_of(uint64_t page) {
    const uint64_t mask = (1ULL << 52) - 1;
    page &= mask;
    page ^= page >> 26;
    page = (page * 0x9E3779B97F4A7C1FULL) & mask;
    page ^= page >> 23;
    page = (page * 0xBF58476D1CE4E5B9ULL) & mask;
    page ^= page >> 29;
    return page;
}

/* The line number level l files `addr` under. */
static uint64_t line_of(const level *l, uint64_t addr) {
    if (l->cfg.physical)
        addr = (frame_of(addr >> HS_PAGE_BITS) << HS_PAGE_BITS) | (addr & ((1ULL << HS_PAGE_BITS) - 1));
    return addr >> l->shift;
}

static uint64_t *set_of(const level *l, uint64_t line) {
    uint64_t set = l->set_mask ? line & l->set_mask : line % l->cfg.sets;
    return l->tag + set * l->cfg.ways;
}

/* The way of `line` in its set, or -1. */
static int64_t find(const level *l, const uint64_t *set, uint64_t line) {
    for (uint64_t w = 0; w < l->cfg.ways && set[w]; w++)
        if ((set[w] & ~HS_PREFETCHED) == line + 1)
            return (int64_t)w;
    return -1;
}

/* Make way w the newest of its set (LRU, MRU order by use; FIFO and RR keep their order). */
static void touch(const level *l, uint64_t *set, uint64_t w) {
    if (l->cfg.policy != HS_LRU && l->cfg.policy != HS_MRU)
        return;
    uint64_t entry = set[w];
    memmove(set + 1, set, w * sizeof *set);
    set[0] = entry;
}

/* Put `line` into its set (it is not there), evicting by the level's policy. */
static void insert(ma_hs *s, level *l, uint64_t line, int prefetched) {
    uint64_t *set = set_of(l, line), ways = l->cfg.ways, entry = (line + 1) | (prefetched ? HS_PREFETCHED : 0);
    int full = set[ways - 1] != 0;
    if (l->cfg.policy == HS_RR) {
        uint64_t w = 0;
        if (full)
            w = next_random(s) % ways;
        else
            while (set[w])
                w++;
        set[w] = entry;
        return;
    }
    if (l->cfg.policy == HS_MRU && full) { /* the newest goes */
        set[0] = entry;
        return;
    }
    memmove(set + 1, set, (ways - 1) * sizeof *set); /* the oldest (last) goes, if the set is full */
    set[0] = entry;
}

/* Bring the line holding `addr` into levels first..n-1 down to where it is found (a fill from below). */
static void fill(ma_hs *s, int first, uint64_t addr, int prefetched) {
    int found = s->n;
    for (int i = first; i < s->n; i++) {
        level *l = &s->levels[i];
        uint64_t line = line_of(l, addr), *set = set_of(l, line);
        int64_t w = find(l, set, line);
        if (w >= 0) {
            touch(l, set, (uint64_t)w);
            found = i;
            break;
        }
    }
    for (int i = first; i < found; i++)
        insert(s, &s->levels[i], line_of(&s->levels[i], addr), prefetched && i == first);
}

static void prefetch_line(ma_hs *s, int i, uint64_t target, uint64_t trigger) {
    level *l = &s->levels[i];
    if (target >> HS_PAGE_BITS != trigger >> HS_PAGE_BITS)
        return;
    uint64_t line = line_of(l, target);
    if (find(l, set_of(l, line), line) >= 0)
        return;
    l->prefetches++;
    fill(s, i, target, 1);
}

/* Level i's prefetcher, told of a demand access that reached it (`missed`: not there; `first_use`: there
 * because this level prefetched it). */
static void train(ma_hs *s, int i, uint64_t addr, int missed, int first_use) {
    level *l = &s->levels[i];
    uint64_t line_bytes = l->cfg.line_bytes, line_start = addr & ~(line_bytes - 1);
    int64_t degree = l->cfg.degree > 0 ? l->cfg.degree : 1, distance = l->cfg.distance > 0 ? l->cfg.distance : 1;
    switch (l->cfg.prefetch) {
    case HS_PF_NEXT_LINE:
        if (missed || first_use)
            for (int64_t k = 0; k < degree; k++)
                prefetch_line(s, i, line_start + (uint64_t)(distance + k) * line_bytes, addr);
        break;
    case HS_PF_ADJACENT:
        if (missed)
            prefetch_line(s, i, line_start ^ line_bytes, addr);
        break;
    case HS_PF_STRIDE: {
        uint64_t page = addr >> HS_PAGE_BITS;
        stream *e = &l->streams[page % HS_STREAMS];
        if (e->page != page + 1) {
            e->page = page + 1;
            e->last = addr;
            e->stride = 0;
            e->confident = 0;
            break;
        }
        int64_t delta = (int64_t)(addr - e->last);
        int new_line = (addr ^ e->last) >= line_bytes;
        e->confident = delta != 0 && delta == e->stride;
        if (delta != 0)
            e->stride = delta;
        e->last = addr;
        if (!e->confident || !new_line)
            break;
        int64_t step = e->stride;
        if (step > -(int64_t)line_bytes && step < (int64_t)line_bytes)
            step = step < 0 ? -(int64_t)line_bytes : (int64_t)line_bytes;
        for (int64_t k = 0; k < degree; k++)
            prefetch_line(s, i, (uint64_t)((int64_t)addr + (distance + k) * step), addr);
        break;
    }
    default:
        break;
    }
}

static void load(ma_hs *s, uint64_t addr) {
    int found = s->n, first_use = 0;
    s->loads++;
    for (int i = 0; i < s->n; i++) {
        level *l = &s->levels[i];
        uint64_t line = line_of(l, addr), *set = set_of(l, line);
        int64_t w = find(l, set, line);
        if (w >= 0) {
            l->hits++;
            first_use = (set[w] & HS_PREFETCHED) != 0;
            set[w] &= ~HS_PREFETCHED;
            touch(l, set, (uint64_t)w);
            found = i;
            break;
        }
    }
    for (int i = 0; i < found; i++)
        insert(s, &s->levels[i], line_of(&s->levels[i], addr), 0);
    for (int i = 0; i <= found && i < s->n; i++)
        if (s->levels[i].cfg.prefetch != HS_PF_NONE)
            train(s, i, addr, i < found, i == found && first_use);
}

/* Loads of an address list, in order. */
void ma_hs_stream(ma_hs *s, const uint64_t *addr, size_t count) {
    for (size_t k = 0; k < count; k++)
        load(s, addr[k]);
}

/* MultiMAPS's strided walk: loads at base, base + step, ... below base + size - 7 (8-byte words). */
void ma_hs_stride(ma_hs *s, uint64_t base, uint64_t size, uint64_t step) {
    for (uint64_t offset = 0; offset + 8 <= size; offset += step)
        load(s, base + offset);
}

/* MultiMAPS's random walk: index[k] (4-byte words from index_base), then data[index[k]] (8-byte words). */
void ma_hs_gather(ma_hs *s, const uint32_t *index, size_t count, uint64_t index_base, uint64_t data_base) {
    for (size_t k = 0; k < count; k++) {
        load(s, index_base + 4 * (uint64_t)k);
        load(s, data_base + 8 * (uint64_t)index[k]);
    }
}
